package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcptasks/mcptasks/store/memory"
)

// The callers' trace contexts of the tracing tests.
const (
	headerParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	metaParent   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// spanContextOf parses a traceparent.
func spanContextOf(t *testing.T, traceparent string) trace.SpanContext {
	t.Helper()
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		t.Fatalf("traceparent %q does not parse", traceparent)
	}
	return sc
}

// spanAttr returns the value of span's attribute key, or an empty value.
func spanAttr(span sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range span.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestTrace_ServerSpans: with a TracerProvider, a task-creating tools/call
// is a server span whose parent is the caller's trace context
// (params._meta, else the headers; with both, the headers' is a link), the
// task keeps that span's traceparent, and
// the worker's span is its child; tasks/get, tasks/update and tasks/cancel
// get a span each, with the task id. Both on the fast path and through
// go-sdk.
func TestTrace_ServerSpans(t *testing.T) {
	tests := []struct {
		name   string
		header string // traceparent header, if any
		meta   string // params._meta.traceparent, if any
		want   string // the parent the spans must have; "" for a new trace
		link   string // the link the spans must have, if any
	}{
		{name: "Header", header: headerParent, want: headerParent},
		{name: "Meta", meta: metaParent, want: metaParent},
		{name: "MetaWins", header: headerParent, meta: metaParent, want: metaParent, link: headerParent},
		{name: "NoParent"},
	}
	for _, path := range []struct {
		name       string
		noFastPath bool
		class      string // the media type class of the replies
	}{{"FastPath", false, "json"}, {"SDK", true, "sse"}} {
		for _, tt := range tests {
			t.Run(path.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				sr := tracetest.NewSpanRecorder()
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
				st := memory.New()
				// Registered before startServer, so that it runs after the
				// engine's shutdown, once the worker's span has ended.
				var createSpan trace.SpanContext
				t.Cleanup(func() {
					wantWorkerSpan(t, sr, createSpan)
					_ = tp.Shutdown(context.Background())
				})
				c := startServer(t, serverConfig{noFastPath: path.noFastPath, tracerProvider: tp, store: st})

				meta := "$META"
				if tt.meta != "" {
					meta = strings.TrimSuffix(metaMacros["$META"], "}") + fmt.Sprintf(`,"traceparent":%q,"tracestate":"k=v"}`, tt.meta)
				}
				send := func(method, name, params string) *rpcReply {
					t.Helper()
					h := http.Header{}
					h.Set("MCP-Protocol-Version", wireVersion)
					h.Set("Mcp-Method", method)
					h.Set("Mcp-Name", name)
					if tt.header != "" {
						h.Set("traceparent", tt.header)
					}
					body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"_meta":%s,%s}}`, method, meta, params)
					resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(expandMeta(body))})
					if resp.class != path.class {
						t.Fatalf("%s answered as %s, want %s: not the path under test", method, resp.class, path.class)
					}
					rep := resp.reply(t)
					if rep.Error != nil {
						t.Fatalf("%s: %s", method, rep.raw)
					}
					return rep
				}

				rep := send("tools/call", "slow_compute", `"name":"slow_compute","arguments":{"seconds":60}`)
				var created taskView
				if err := json.Unmarshal(rep.Result, &created); err != nil || created.TaskID == "" {
					t.Fatalf("tools/call did not create a task: %s", rep.raw)
				}
				span := wantServerSpan(t, sr, "tools/call slow_compute", created.TaskID, tt.want, tt.link)
				if got := spanAttr(span, "gen_ai.tool.name").AsString(); got != "slow_compute" {
					t.Errorf("gen_ai.tool.name = %q, want slow_compute", got)
				}
				createSpan = span.SpanContext()

				r, err := st.Get(context.Background(), created.TaskID)
				if err != nil {
					t.Fatalf("store.Get: %v", err)
				}
				if sc := spanContextOf(t, r.TraceParent); sc.TraceID() != createSpan.TraceID() || sc.SpanID() != createSpan.SpanID() {
					t.Errorf("record's TraceParent %q, want the span %s/%s", r.TraceParent, createSpan.TraceID(), createSpan.SpanID())
				}

				id := fmt.Sprintf("%q", created.TaskID)
				send("tasks/get", created.TaskID, `"taskId":`+id)
				wantServerSpan(t, sr, "tasks/get", created.TaskID, tt.want, tt.link)
				send("tasks/update", created.TaskID, `"taskId":`+id+`,"inputResponses":{}`)
				wantServerSpan(t, sr, "tasks/update", created.TaskID, tt.want, tt.link)
				// A worker runs the task before it is cancelled: a task
				// still queued (the create found no free slot, as under
				// load) is cancelled at once, and no worker span is made.
				for deadline := time.Now().Add(waitTimeout); !spanStarted(sr, "task slow_compute"); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("no worker ran the task")
					}
				}
				send("tasks/cancel", created.TaskID, `"taskId":`+id)
				wantServerSpan(t, sr, "tasks/cancel", created.TaskID, tt.want, tt.link)
				c.waitStatus(t, "", created.TaskID, "cancelled", nil)
			})
		}
	}
}

// wantServerSpan returns the one ended server span of sr named name,
// failing t unless it is about task id and its parent is the remote span
// of traceparent parent (or, if parent is "", it has none).
func wantServerSpan(t *testing.T, sr *tracetest.SpanRecorder, name, id, parent, link string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == name && s.SpanKind() == trace.SpanKindServer {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d server spans named %q ended, want 1", len(found), name)
	}
	span := found[0]
	method, _, _ := strings.Cut(name, " ")
	if got := spanAttr(span, "mcp.method.name").AsString(); got != method {
		t.Errorf("%s: mcp.method.name = %q, want %q", name, got, method)
	}
	if got := spanAttr(span, "mcptasks.task.id").AsString(); got != id {
		t.Errorf("%s: mcptasks.task.id = %q, want %q", name, got, id)
	}
	var links []string
	for _, l := range span.Links() {
		links = append(links, l.SpanContext.SpanID().String())
	}
	switch {
	case link == "" && len(links) > 0:
		t.Errorf("%s: links %v, want none", name, links)
	case link != "" && (len(links) != 1 || links[0] != spanContextOf(t, link).SpanID().String()):
		t.Errorf("%s: links %v, want the transport's span %s", name, links, spanContextOf(t, link).SpanID())
	}
	if parent == "" {
		if span.Parent().IsValid() {
			t.Errorf("%s: parent %s, want none", name, span.Parent().SpanID())
		}
		return span
	}
	want := spanContextOf(t, parent)
	if span.SpanContext().TraceID() != want.TraceID() {
		t.Errorf("%s: trace id %s, want the caller's %s", name, span.SpanContext().TraceID(), want.TraceID())
	}
	if p := span.Parent(); p.SpanID() != want.SpanID() || !p.IsRemote() {
		t.Errorf("%s: parent %s (remote %t), want the caller's span %s", name, p.SpanID(), p.IsRemote(), want.SpanID())
	}
	return span
}

// wantWorkerSpan fails t unless sr holds the worker's span of the task
// created in the span creator: a child of it.
func wantWorkerSpan(t *testing.T, sr *tracetest.SpanRecorder, creator trace.SpanContext) {
	t.Helper()
	if !creator.IsValid() {
		return // the test stopped before the task was created
	}
	for _, s := range sr.Ended() {
		if s.Name() != "task slow_compute" {
			continue
		}
		if s.SpanContext().TraceID() != creator.TraceID() || s.Parent().SpanID() != creator.SpanID() {
			t.Errorf("worker span %s/%s has parent %s, want a child of %s/%s",
				s.SpanContext().TraceID(), s.SpanContext().SpanID(), s.Parent().SpanID(), creator.TraceID(), creator.SpanID())
		}
		return
	}
	t.Errorf("no worker span %q ended", "task slow_compute")
}

// spanStarted reports whether sr has seen a span of that name start.
func spanStarted(sr *tracetest.SpanRecorder, name string) bool {
	for _, s := range sr.Started() {
		if s.Name() == name {
			return true
		}
	}
	return false
}

// TestTrace_Off: without a TracerProvider, a tools/call with a traceparent
// creates a task without one.
func TestTrace_Off(t *testing.T) {
	t.Parallel()
	for _, path := range []struct {
		name       string
		noFastPath bool
	}{{"FastPath", false}, {"SDK", true}} {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			st := memory.New()
			c := startServer(t, serverConfig{noFastPath: path.noFastPath, store: st})
			h := http.Header{}
			h.Set("MCP-Protocol-Version", wireVersion)
			h.Set("Mcp-Method", "tools/call")
			h.Set("Mcp-Name", "slow_compute")
			h.Set("traceparent", headerParent)
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META,"name":"slow_compute","arguments":{"seconds":60}}}`
			rep := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(expandMeta(body))}).reply(t)
			var created taskView
			if err := json.Unmarshal(rep.Result, &created); err != nil || created.TaskID == "" {
				t.Fatalf("tools/call did not create a task: %s", rep.raw)
			}
			r, err := st.Get(context.Background(), created.TaskID)
			if err != nil {
				t.Fatalf("store.Get: %v", err)
			}
			if r.TraceParent != "" {
				t.Errorf("TraceParent = %q with tracing off, want empty", r.TraceParent)
			}
		})
	}
}
