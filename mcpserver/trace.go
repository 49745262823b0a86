package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// tracerName is the instrumentation scope of the server's spans.
const tracerName = "github.com/mcptasks/mcptasks/mcpserver"

// Attributes of the server's spans: the OpenTelemetry semantic conventions
// for MCP, and the task id.
const (
	attrMethod    = attribute.Key("mcp.method.name")
	attrTool      = attribute.Key("gen_ai.tool.name")
	attrErrorType = attribute.Key("error.type")
	attrTaskID    = attribute.Key("mcptasks.task.id")
)

// startSpan starts the server span of a request of method (about tool, if
// not empty) and returns ctx carrying it. As the OpenTelemetry conventions
// for MCP say, its parent is the W3C trace context of params._meta, and the
// transport's context is a link: a span ctx already carries (an HTTP
// instrumentation's), or else the traceparent and tracestate of the HTTP
// headers h. Without _meta context, the transport's is the parent. Without
// a TracerProvider it reads nothing and returns ctx and a span that records
// nothing.
func (s *Server) startSpan(ctx context.Context, method, tool string, h http.Header, meta propagation.TextMapCarrier) (context.Context, trace.Span) {
	if s.trc == nil {
		return ctx, noop.Span{}
	}
	tc := propagation.TraceContext{}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = tc.Extract(ctx, propagation.HeaderCarrier(h))
	}
	var opts []trace.SpanStartOption
	if meta != nil && meta.Get("traceparent") != "" {
		if mctx := tc.Extract(context.Background(), meta); trace.SpanContextFromContext(mctx).IsValid() {
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
			ctx = trace.ContextWithRemoteSpanContext(ctx, trace.SpanContextFromContext(mctx))
		}
	}
	name := method
	attrs := []attribute.KeyValue{attrMethod.String(method)}
	if tool != "" {
		name += " " + tool
		attrs = append(attrs, attrTool.String(tool))
	}
	opts = append(opts, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return s.trc.Start(ctx, name, opts...)
}

// traceParent returns the W3C traceparent of the span in ctx, for a task
// created under it; "" without tracing.
func (s *Server) traceParent(ctx context.Context) string {
	if s.trc == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// spanTaskID records the task id of a tasks/* request, given as the raw
// params.taskId, on span.
func spanTaskID(span trace.Span, raw json.RawMessage) {
	if !span.IsRecording() {
		return
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		span.SetAttributes(attrTaskID.String(id))
	}
}

// spanError records the error a request is answered with on span: its
// JSON-RPC code as error.type, its message as the status description.
func spanError(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		span.SetAttributes(attrErrorType.String(strconv.FormatInt(je.Code, 10)))
		span.SetStatus(codes.Error, je.Message)
		return
	}
	span.SetAttributes(attrErrorType.String("_OTHER"))
	span.SetStatus(codes.Error, err.Error())
}

// Get returns the value of the trace context key (traceparent or
// tracestate) in a fast-path request's params._meta, or "": with Set and
// Keys, it makes _meta a propagation.TextMapCarrier, read only when
// tracing is on.
func (m *requestMeta) Get(key string) string {
	if m == nil {
		return ""
	}
	var raw json.RawMessage
	switch key {
	case "traceparent":
		raw = m.TraceParent
	case "tracestate":
		raw = m.TraceState
	}
	var v string
	if raw == nil || decodeJSON(raw, &v) != nil {
		return ""
	}
	return v
}

// Set does nothing: the server only reads trace context.
func (*requestMeta) Set(string, string) {}

// Keys returns the trace context keys.
func (*requestMeta) Keys() []string { return []string{"traceparent", "tracestate"} }

// anyMeta is the params._meta of a request decoded by go-sdk, as a carrier
// of the trace context.
type anyMeta map[string]any

// Get returns the string value of key, or "".
func (m anyMeta) Get(key string) string {
	v, _ := m[key].(string)
	return v
}

// Set does nothing: the server only reads trace context.
func (anyMeta) Set(string, string) {}

// Keys returns the keys of m.
func (m anyMeta) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// sdkMeta returns the params._meta of a go-sdk request of tools/call,
// prompts/get, resources/read, tasks/* or subscriptions/listen, and nil
// for other requests or absent params.
func sdkMeta(req mcp.Request) anyMeta {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil {
			return anyMeta(r.Params.Meta)
		}
	case *mcp.GetPromptRequest:
		if r.Params != nil {
			return anyMeta(r.Params.Meta)
		}
	case *mcp.ReadResourceRequest:
		if r.Params != nil {
			return anyMeta(r.Params.Meta)
		}
	case *mcp.ServerRequest[*TaskParams]:
		if r.Params != nil {
			return anyMeta(r.Params.Meta)
		}
	case *mcp.ServerRequest[*UpdateParams]:
		if r.Params != nil {
			return anyMeta(r.Params.Meta)
		}
	case *mcp.SubscriptionsListenRequest:
		if r.Params != nil {
			return anyMeta(r.Params.Meta)
		}
	}
	return nil
}

// requestHeader returns the HTTP headers of a go-sdk request, if any.
func requestHeader(req mcp.Request) http.Header {
	if extra := req.GetExtra(); extra != nil {
		return extra.Header
	}
	return nil
}
