// Package task defines the task record, its statuses and state machine, and
// the wire JSON of the MCP Tasks extension; it does no I/O.
package task

import (
	"encoding/json"
	"time"
)

// ExtensionID is the identifier of the MCP Tasks extension.
const ExtensionID = "io.modelcontextprotocol/tasks"

// MetaIdempotencyKey is mcptasks' own _meta key (under its prefix
// io.github.mcptasks) of a tools/call's idempotency key: the same
// principal and key within the task's TTL get the task the key made
// instead of a second one. A server that honours it says so with the same
// key in the experimental capabilities of server/discover.
const MetaIdempotencyKey = "io.github.mcptasks/idempotencyKey"

// ProtocolVersion is the MCP protocol revision this package speaks, the
// first that has the Tasks extension: under an older version a declared
// extension means nothing.
const ProtocolVersion = "2026-07-28"

// Record is the durable state of one task: what the store keeps and the
// engine works on. The wire view is [Record.Detailed].
type Record struct {
	// ID is the task id, the handle of every later tasks/* request.
	ID string
	// Principal is who created the task; only that principal may read,
	// answer or cancel it.
	Principal string
	// Tool is the name of the tool that runs the task.
	Tool string
	// Args is the JSON object of tool arguments.
	Args json.RawMessage
	// ClientCapabilities is the JSON of the originating request's client
	// capabilities; input requests are limited to what it declares.
	ClientCapabilities json.RawMessage
	// Meta is the JSON object of the originating request's _meta, but for
	// the protocol version and the client capabilities, which each run is
	// given anew, and the progress token, which a run has no way to use;
	// nil if nothing else was sent. A run's request carries it again, so
	// that a handler reads in a task what it reads in an inline call.
	Meta json.RawMessage
	// TraceParent is the W3C traceparent of the span that created the
	// task, so that the span of the worker that runs it, in any process
	// and after a crash, continues the same trace. Empty when tracing was
	// off.
	TraceParent string
	// IdempotencyKey is the key the creating request carried, if any:
	// while the task lives (until its TTL ends), a create by the same
	// principal with the same key gets this task instead of a new one.
	IdempotencyKey string

	// Status is the current status.
	Status Status
	// StatusMessage is optional human-readable context for the status.
	StatusMessage string
	// CreatedAt is when the task was created; TTL counts from here.
	CreatedAt time.Time
	// UpdatedAt is when the task last changed.
	UpdatedAt time.Time
	// TTL is how long the task is kept after CreatedAt; zero means no limit.
	TTL time.Duration
	// PollInterval is the suggested polling interval; zero means unset.
	PollInterval time.Duration

	// InputRequests maps each outstanding input key to its InputRequest JSON
	// ({"method":..., "params":...}). It is non-empty exactly when Status is
	// [InputRequired].
	InputRequests map[string]json.RawMessage
	// Answers maps every answered input key to the client's response JSON.
	// Answers are kept for the task's life so that a re-run handler gets the
	// stored answer instead of asking again.
	Answers map[string]json.RawMessage
	// Steps maps the name of every durable step a handler finished to its
	// result JSON (engine.Run.Step). They are kept for the task's life so
	// that a re-run handler gets the stored result instead of doing the
	// work again. Bounded by MaxStepBytes each and MaxStepsBytes in all.
	Steps map[string]json.RawMessage

	// Result is the final result JSON of a completed task.
	Result json.RawMessage
	// Error is the JSON-RPC error of a failed task.
	Error *Error

	// CancelRequested is set by tasks/cancel; the worker running the task
	// stops it and ends it cancelled.
	CancelRequested bool
	// Attempt counts the claims of this task; it is the fencing token of the
	// current lease. Zero means never claimed.
	Attempt int
	// Losses counts the claims that found the previous lease expired while
	// held: runs lost with their worker (crashed or hung past its lease).
	// Graceful releases do not count. The retry policy is checked against
	// it, not against Attempt.
	Losses int
	// LeaseOwner names the worker that holds the lease, if any.
	LeaseOwner string
	// LeaseExpiresAt is when the current lease ends; zero when unleased.
	LeaseExpiresAt time.Time

	// History lists what happened to the task since it was created, oldest
	// first, within the bounds of MaxHistory: claims, status messages,
	// input requests and answers, the end. It is for operators (the
	// console's timeline); the wire view leaves it out. Heartbeats add
	// nothing.
	History []HistoryEvent
}

// Error is a JSON-RPC error object, as carried by a failed task.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Message }

// ExpiresAt reports when the task's TTL elapses, and false if it has no TTL.
func (r *Record) ExpiresAt() (time.Time, bool) {
	if r.TTL <= 0 {
		return time.Time{}, false
	}
	return r.CreatedAt.Add(r.TTL), true
}

// Expired reports whether the task's TTL has elapsed at now.
func (r *Record) Expired(now time.Time) bool {
	t, ok := r.ExpiresAt()
	return ok && !now.Before(t)
}

// recordOverhead is what a Record costs in memory beyond its
// variable-length fields: the struct, the fixed parts of its fields and a
// map entry that holds it, rounded up.
const recordOverhead = 512

// historyEventOverhead is what one HistoryEvent costs in memory beyond its
// strings.
const historyEventOverhead = 128

// Size estimates the bytes r holds in memory: its variable-length fields
// (arguments, result, messages, input requests, answers, steps, error) plus a
// fixed overhead. Caches and in-flight budgets count records with it.
func (r *Record) Size() int64 {
	n := recordOverhead + len(r.ID) + len(r.Principal) + len(r.Tool) + len(r.Args) +
		len(r.ClientCapabilities) + len(r.Meta) + len(r.TraceParent) + len(r.IdempotencyKey) + len(r.StatusMessage) +
		len(r.Result) + len(r.LeaseOwner)
	for _, m := range []map[string]json.RawMessage{r.InputRequests, r.Answers, r.Steps} {
		for k, v := range m {
			n += 64 + len(k) + len(v)
		}
	}
	if r.Error != nil {
		n += len(r.Error.Message) + len(r.Error.Data)
	}
	for _, e := range r.History {
		n += historyEventOverhead + len(e.Worker) + len(e.Message)
		for _, k := range e.Keys {
			n += len(k)
		}
	}
	return int64(n)
}

// Clone returns a deep copy of r.
func (r *Record) Clone() *Record {
	c := *r
	c.Args = cloneRaw(r.Args)
	c.ClientCapabilities = cloneRaw(r.ClientCapabilities)
	c.Meta = cloneRaw(r.Meta)
	c.Result = cloneRaw(r.Result)
	c.InputRequests = cloneMap(r.InputRequests)
	c.Answers = cloneMap(r.Answers)
	c.Steps = cloneMap(r.Steps)
	c.History = cloneHistory(r.History)
	if r.Error != nil {
		e := *r.Error
		e.Data = cloneRaw(r.Error.Data)
		c.Error = &e
	}
	return &c
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

func cloneMap(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	c := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		c[k] = cloneRaw(v)
	}
	return c
}
