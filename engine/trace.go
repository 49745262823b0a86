package engine

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// tracerName is the instrumentation scope of the engine's spans.
const tracerName = "github.com/mcptasks/mcptasks/engine"

// Attributes of a run's span. Tool and error follow the OpenTelemetry
// semantic conventions; the rest are ours.
const (
	attrTaskID       = attribute.Key("mcptasks.task.id")
	attrAttempt      = attribute.Key("mcptasks.task.attempt")
	attrWorkerLost   = attribute.Key("mcptasks.task.worker_lost") // the previous attempt's worker was lost
	attrStatus       = attribute.Key("mcptasks.task.status")      // the terminal status this run wrote
	attrTool         = attribute.Key("gen_ai.tool.name")
	attrErrorType    = attribute.Key("error.type")
	attrInputKeys    = attribute.Key("mcptasks.input.keys")
	attrReplayed     = attribute.Key("mcptasks.input.replayed") // every answer was stored: nobody was asked
	attrMessage      = attribute.Key("mcptasks.status_message")
	attrReason       = attribute.Key("mcptasks.reason")
	attrStepName     = attribute.Key("mcptasks.step.name")
	attrStepReplayed = attribute.Key("mcptasks.step.replayed") // the result was stored: fn did not run
)

// startSpan starts the span of one run of a claimed task and returns ctx
// carrying it. Its parent is the span that created the task, read from the
// record's TraceParent, so every attempt, on any process, joins the
// creator's trace as a sibling of the others. Without a TracerProvider it
// returns ctx unchanged and a span that records nothing.
func (e *Engine) startSpan(ctx context.Context, c store.Claimed) (context.Context, trace.Span) {
	if e.trc == nil {
		return ctx, noop.Span{}
	}
	if c.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": c.TraceParent})
	}
	attrs := []attribute.KeyValue{attrTaskID.String(c.ID), attrTool.String(c.Tool), attrAttempt.Int(c.Attempt)}
	if c.Lost {
		attrs = append(attrs, attrWorkerLost.Bool(true))
	}
	return e.trc.Start(ctx, "task "+c.Tool, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// spanFinished records on span the terminal status that its run wrote.
// A failed run sets the span's status to Error; a cancelled one does not:
// the client asked for it, and mcptasks.task.status says so.
func spanFinished(span trace.Span, p store.FinishParams) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrStatus.String(string(p.Status)))
	if p.Status != task.Failed {
		return
	}
	msg := p.StatusMessage
	if p.Error != nil {
		span.SetAttributes(attrErrorType.String(strconv.FormatInt(p.Error.Code, 10)))
		msg = p.Error.Message
	}
	span.SetStatus(codes.Error, msg)
}

// spanLeft records on span why its run ended without a terminal status:
// a lost lease is an error, a release at shutdown is not.
func spanLeft(span trace.Span, cause, err error) {
	if !span.IsRecording() {
		return
	}
	if errors.Is(cause, errLeaseLost) {
		span.SetAttributes(attrErrorType.String("lease_lost"))
		span.SetStatus(codes.Error, cause.Error())
		return
	}
	reason := err
	if cause != nil {
		reason = cause
	}
	span.AddEvent("task left to another worker", trace.WithAttributes(attrReason.String(reason.Error())))
}

// spanFinishFailed records on span that its terminal write was refused.
func spanFinishFailed(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, "finish task: "+err.Error())
}

// spanStatusMessage records a status message set by the run.
func spanStatusMessage(span trace.Span, msg string) {
	if span.IsRecording() {
		span.AddEvent("status message", trace.WithAttributes(attrMessage.String(msg)))
	}
}

// spanInputRequested records that the run asked for the keys of requests
// that answers does not hold, and now waits for them.
func spanInputRequested(span trace.Span, requests, answers map[string]json.RawMessage) {
	if !span.IsRecording() {
		return
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(requests)) {
		if _, ok := answers[k]; !ok {
			keys = append(keys, k)
		}
	}
	span.AddEvent("input requested", trace.WithAttributes(attrInputKeys.StringSlice(keys)))
}

// spanInputAnswered records that every key of requests has its answer;
// replayed says that they were all stored before, so nobody was asked.
func spanInputAnswered(span trace.Span, requests map[string]json.RawMessage, replayed bool) {
	if span.IsRecording() {
		span.AddEvent("input answered", trace.WithAttributes(
			attrInputKeys.StringSlice(slices.Sorted(maps.Keys(requests))), attrReplayed.Bool(replayed)))
	}
}

// spanStep records that the run passed the durable step name; replayed
// says that its result was stored by an earlier run, so its work did not
// run again.
func spanStep(span trace.Span, name string, replayed bool) {
	if span.IsRecording() {
		span.AddEvent("step", trace.WithAttributes(attrStepName.String(name), attrStepReplayed.Bool(replayed)))
	}
}
