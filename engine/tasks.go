package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// CreateParams are the parameters of [Engine.Create].
type CreateParams struct {
	// Tool names a registered tool.
	Tool string
	// Args is the JSON object of arguments, already validated.
	Args json.RawMessage
	// Principal is who may later read, answer and cancel the task.
	Principal string
	// ClientCapabilities is the originating request's client capabilities.
	ClientCapabilities json.RawMessage
	// TraceParent is the W3C traceparent of the span that creates the
	// task, if the caller traces; the span of each run is its child.
	TraceParent string
}

// Create makes a task and returns it once it is durable in the store, so
// that a tasks/get for its id succeeds on every process from then on. A
// worker picks it up.
func (e *Engine) Create(ctx context.Context, p CreateParams) (*task.Record, error) {
	t := e.tools[p.Tool]
	if t == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, p.Tool)
	}
	now := e.now()
	r := &task.Record{
		ID:                 task.NewIDAt(now), // the id carries CreatedAt: task.IDTimeRange
		Principal:          p.Principal,
		Tool:               p.Tool,
		Args:               p.Args,
		ClientCapabilities: p.ClientCapabilities,
		TraceParent:        p.TraceParent,
		Status:             task.Working,
		CreatedAt:          now,
		UpdatedAt:          now,
		TTL:                max(or(t.TTL, e.opts.DefaultTTL), 0),
		PollInterval:       or(t.PollInterval, e.opts.DefaultPollInterval),
	}
	if err := e.st.Create(ctx, r); err != nil {
		return nil, fmt.Errorf("engine: create task: %w", err)
	}
	e.obs.TaskCreated(p.Tool)
	e.signal()
	return r, nil
}

// Get returns the principal's task with the id, or ErrNotFound.
func (e *Engine) Get(ctx context.Context, principal, id string) (*task.Record, error) {
	if !task.ValidID(id) {
		return nil, ErrNotFound
	}
	r, err := e.st.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (r.Principal != principal || r.Expired(e.now())) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("engine: get task: %w", err)
	}
	return r, nil
}

// Update delivers input responses to the principal's task. Responses for
// keys that are not outstanding are ignored. It returns the keys accepted.
func (e *Engine) Update(ctx context.Context, principal, id string, responses map[string]json.RawMessage) ([]string, error) {
	if !task.ValidID(id) {
		return nil, ErrNotFound
	}
	accepted, err := e.st.Answer(ctx, store.AnswerParams{ID: id, Principal: principal, Now: e.now(), Responses: responses})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("engine: update task: %w", err)
	}
	if len(accepted) > 0 {
		e.notify(id, false)
	}
	return accepted, nil
}

// Cancel asks for the principal's task to be cancelled. A terminal task is
// left as it is. A running task's handler sees its ctx cancelled, at once
// on this process and within one heartbeat on another.
func (e *Engine) Cancel(ctx context.Context, principal, id string) error {
	_, err := e.cancel(ctx, principal, id, "Cancelled by request")
	return err
}

// OperatorCancelMessage is the status message of a task that an operator
// cancelled, as its client sees it; the operator's name goes to the
// console's log, not to the client.
const OperatorCancelMessage = "Cancelled by an operator"

// CancelAsOperator asks for the task with the id to be cancelled on behalf
// of an operator (the console), whoever its principal is: unlike Cancel,
// it is not bound to a principal, so only code that has authenticated an
// operator may call it. Otherwise it is Cancel: the store's cancel rules
// apply (a terminal task is left as it is, a held one gets a cancel
// request for its worker, another is cancelled at once, with the status
// message OperatorCancelMessage), and an unknown or expired task is
// ErrNotFound. It returns the task after the request.
func (e *Engine) CancelAsOperator(ctx context.Context, id string) (*task.Record, error) {
	r, err := e.st.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && r.Expired(e.now()) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("engine: cancel task: %w", err)
	}
	// The principal of a task never changes: the store's rules do the rest.
	return e.cancel(ctx, r.Principal, id, OperatorCancelMessage)
}

// cancel is Cancel with a status message.
func (e *Engine) cancel(ctx context.Context, principal, id, msg string) (*task.Record, error) {
	if !task.ValidID(id) {
		return nil, ErrNotFound
	}
	r, err := e.st.RequestCancel(ctx, store.CancelParams{ID: id, Principal: principal, Now: e.now(), StatusMessage: msg})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("engine: cancel task: %w", err)
	}
	if r.CancelRequested && !r.Status.Terminal() {
		e.notify(id, true)
	}
	return r, nil
}

// notify wakes the local execution of a task, if this process runs it.
func (e *Engine) notify(id string, cancel bool) {
	e.mu.Lock()
	x := e.running[id]
	e.mu.Unlock()
	if x == nil {
		return
	}
	if cancel {
		x.cancel(errCancelRequested)
		return
	}
	select {
	case x.input <- struct{}{}:
	default:
	}
}
