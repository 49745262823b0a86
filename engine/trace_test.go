package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcptasks/mcptasks/task"
)

// creatorParent is the traceparent of the span that created the tasks of
// the tracing tests: what mcpserver stores in the record.
const creatorParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

var (
	creatorTrace = mustTraceID("4bf92f3577b34da6a3ce929d0e0e4736")
	creatorSpan  = mustSpanID("00f067aa0ba902b7")
)

func mustTraceID(h string) trace.TraceID {
	id, err := trace.TraceIDFromHex(h)
	if err != nil {
		panic(err)
	}
	return id
}

func mustSpanID(h string) trace.SpanID {
	id, err := trace.SpanIDFromHex(h)
	if err != nil {
		panic(err)
	}
	return id
}

// newRecorder returns a TracerProvider that keeps every ended span in the
// returned recorder, as one process's exporter would.
func newRecorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, sr
}

// createTraced creates a task of the tool whose creator span is
// creatorParent.
func createTraced(t *testing.T, e *Engine, tool string) *task.Record {
	t.Helper()
	r, err := e.Create(bg, CreateParams{Tool: tool, Args: json.RawMessage(`{}`), Principal: principal, TraceParent: creatorParent})
	if err != nil {
		t.Fatalf("Create(%s): %v", tool, err)
	}
	if r.TraceParent != creatorParent {
		t.Fatalf("created record's TraceParent = %q, want %q", r.TraceParent, creatorParent)
	}
	return r
}

// onlySpan returns the one ended span of sr, failing t if there is not
// exactly one.
func onlySpan(t *testing.T, sr *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := sr.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	return spans[0]
}

// wantRunSpan fails t unless span is the span of attempt of task id of
// tool, a child of the creator's span.
func wantRunSpan(t *testing.T, span sdktrace.ReadOnlySpan, id, tool string, attempt int) {
	t.Helper()
	if span.Name() != "task "+tool || span.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("span %q of kind %s, want %q of kind consumer", span.Name(), span.SpanKind(), "task "+tool)
	}
	if got := span.SpanContext().TraceID(); got != creatorTrace {
		t.Errorf("trace id = %s, want the creator's %s", got, creatorTrace)
	}
	if p := span.Parent(); p.SpanID() != creatorSpan || !p.IsRemote() {
		t.Errorf("parent = %s (remote %t), want the creator's span %s, remote", p.SpanID(), p.IsRemote(), creatorSpan)
	}
	for k, want := range map[attribute.Key]attribute.Value{
		attrTaskID:  attribute.StringValue(id),
		attrTool:    attribute.StringValue(tool),
		attrAttempt: attribute.IntValue(attempt),
	} {
		if got := spanAttr(span, k); got != want {
			t.Errorf("attribute %s = %q, want %q", k, got.String(), want.String())
		}
	}
}

// spanAttr returns the value of span's attribute k, or an empty value.
func spanAttr(span sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, kv := range span.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// eventNames returns the names of span's events, in order.
func eventNames(span sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, ev := range span.Events() {
		names = append(names, ev.Name)
	}
	return names
}

// TestTrace_Run: the span of a run is a child of the span that created the
// task, carries the task id, tool and attempt, records what the handler
// did, and says how the run ended.
func TestTrace_Run(t *testing.T) {
	tests := []struct {
		name       string
		handler    Handler
		cancel     bool // cancel the task once it runs
		answer     bool // answer key k once the task asks
		wantStatus task.Status
		wantCode   codes.Code
		wantEvents []string
	}{
		{
			name: "Completed",
			handler: func(ctx context.Context, run *Run) (json.RawMessage, error) {
				if err := run.SetStatus(ctx, "Working"); err != nil {
					return nil, err
				}
				answers, err := run.RequestInput(ctx, asks("k"), "Confirm")
				return answers["k"], err
			},
			answer:     true,
			wantStatus: task.Completed,
			wantCode:   codes.Unset,
			wantEvents: []string{"status message", "input requested", "input answered"},
		},
		{
			name: "Failed",
			handler: func(context.Context, *Run) (json.RawMessage, error) {
				return nil, errors.New("disk full")
			},
			wantStatus: task.Failed,
			wantCode:   codes.Error,
		},
		{
			name:       "Cancelled",
			handler:    blockUntilCancelled,
			cancel:     true,
			wantStatus: task.Cancelled,
			wantCode:   codes.Unset, // asked for by the client: not an error
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				mem := newMem()
				tp, sr := newRecorder(t)
				e := startEngine(t, mem, []*Tool{{Name: "job", Handler: tt.handler}}, Options{TracerProvider: tp})
				r := createTraced(t, e, "job")
				synctest.Wait()
				if tt.answer {
					update(t, e, r.ID, map[string]string{"k": accept("yes")})
				}
				if tt.cancel {
					if err := e.Cancel(bg, principal, r.ID); err != nil {
						t.Fatalf("Cancel: %v", err)
					}
				}
				synctest.Wait()
				wantStatus(t, mem, r.ID, tt.wantStatus)

				span := onlySpan(t, sr)
				wantRunSpan(t, span, r.ID, "job", 1)
				if got := span.Status().Code; got != tt.wantCode {
					t.Errorf("span status = %s (%q), want %s", got, span.Status().Description, tt.wantCode)
				}
				if got := spanAttr(span, attrStatus); got.AsString() != string(tt.wantStatus) {
					t.Errorf("attribute %s = %q, want %q", attrStatus, got.AsString(), tt.wantStatus)
				}
				if got := eventNames(span); !slices.Equal(got, tt.wantEvents) {
					t.Errorf("events = %q, want %q", got, tt.wantEvents)
				}
			})
		})
	}
}

// TestTrace_RerunContinuesTrace: engine A runs a task and its process dies;
// engine B, another replica on the same store with a tracer of its own,
// re-runs it after the lease expires. Both runs are children of the span
// that created the task, told apart by their attempt.
func TestTrace_RerunContinuesTrace(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if run.Attempt() == 1 {
				return blockUntilCancelled(ctx, run) // A hangs, then dies
			}
			return json.RawMessage(`{"ok":true}`), nil
		}
		tools := []*Tool{{Name: "deploy", Handler: h, Retry: RetryPolicy{Rerun: true}}}
		tpA, srA := newRecorder(t)
		a := startEngine(t, procA, tools, Options{Owner: "a", TracerProvider: tpA})
		r := createTraced(t, a, "deploy")
		synctest.Wait()
		held := wantStatus(t, mem, r.ID, task.Working)

		procA.down.Store(true) // A's process is gone
		tpB, srB := newRecorder(t)
		startEngine(t, mem, tools, Options{Owner: "b", TracerProvider: tpB})
		time.Sleep(time.Until(held.LeaseExpiresAt) + DefaultClaimInterval)
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.Completed)

		// A's span ends when its heartbeat gives up, and would be lost
		// with the process; it is checked here because it exists.
		spanA := onlySpan(t, srA)
		wantRunSpan(t, spanA, r.ID, "deploy", 1)
		if spanA.Status().Code != codes.Error {
			t.Errorf("A's span status = %s, want Error (lease lost)", spanA.Status().Code)
		}
		spanB := onlySpan(t, srB)
		wantRunSpan(t, spanB, r.ID, "deploy", 2)
		if !spanAttr(spanB, attrWorkerLost).AsBool() {
			t.Errorf("B's span lacks %s=true", attrWorkerLost)
		}
		if spanB.Status().Code != codes.Unset {
			t.Errorf("B's span status = %s (%q), want Unset", spanB.Status().Code, spanB.Status().Description)
		}
	})
}

// TestTrace_Off: without a TracerProvider, a task created with a
// TraceParent runs with no span in its handler's ctx.
func TestTrace_Off(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		var sc trace.SpanContext
		h := func(ctx context.Context, _ *Run) (json.RawMessage, error) {
			sc = trace.SpanContextFromContext(ctx)
			return json.RawMessage(`{}`), nil
		}
		e := startEngine(t, mem, []*Tool{{Name: "job", Handler: h}}, Options{})
		r := createTraced(t, e, "job")
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.Completed)
		if sc.IsValid() {
			t.Errorf("the handler's ctx carries span context %s/%s with tracing off", sc.TraceID(), sc.SpanID())
		}
	})
}
