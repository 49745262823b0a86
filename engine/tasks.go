package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

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
	// Meta is what the task keeps of the request's _meta
	// ([task.Record.Meta]): a JSON object, or nil.
	Meta json.RawMessage
	// TraceParent is the W3C traceparent of the span that creates the
	// task, if the caller traces; the span of each run is its child.
	TraceParent string
	// IdempotencyKey, if set, makes the create safe to retry: while a task
	// of Principal created with the key lives (until its TTL ends), a
	// create with the key returns that task instead of a new one. It is
	// 1 to MaxIdempotencyKeyLen printable ASCII characters.
	IdempotencyKey string
}

// MaxIdempotencyKeyLen bounds the length of [CreateParams.IdempotencyKey].
const MaxIdempotencyKeyLen = 255

// ErrInvalidKey is returned by Create for an idempotency key that is too
// long or has characters other than printable ASCII.
var ErrInvalidKey = errors.New("engine: invalid idempotency key")

// ErrKeyReused is returned by Create for an idempotency key that a live
// task of the principal was created with, by a call of another tool or
// with other arguments: a new call needs a new key.
var ErrKeyReused = errors.New("engine: idempotency key already used for another call")

// Create makes a task and returns it once it is durable in the store, so
// that a tasks/get for its id succeeds on every process from then on. On
// a started engine with a free worker slot, the task is created already
// claimed by this engine (one write instead of a create and a claim), and
// its handler starts at once; otherwise a worker of any process picks it
// up. For a tool that may run again ([RetryPolicy.Rerun]), without an
// idempotency key, the handler starts before the task is stored, and its
// first write, if made within a millisecond (a status, a question, a
// step, its end), is stored with the create: one write instead of two.
// Should that insert fail, the handler stops at its next write, and the
// client, which gets the error, calls again. The task returned is the
// task as created, working, whatever that write stored.
//
// With an idempotency key that a live task of the principal was created
// with, by the same tool with the same arguments (as JSON values), Create
// returns that task and creates nothing: a retry of a create whose reply
// was lost gets the task the first attempt made, on any process. With
// other arguments or another tool it returns ErrKeyReused.
func (e *Engine) Create(ctx context.Context, p CreateParams) (*task.Record, error) {
	t := e.tools[p.Tool]
	if t == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, p.Tool)
	}
	if err := checkKey(p.IdempotencyKey); err != nil {
		return nil, err
	}
	now := e.now()
	r := &task.Record{
		ID:                 task.NewIDAt(now), // the id carries CreatedAt: task.IDTimeRange
		Principal:          p.Principal,
		Tool:               p.Tool,
		Args:               p.Args,
		ClientCapabilities: p.ClientCapabilities,
		Meta:               p.Meta,
		TraceParent:        p.TraceParent,
		IdempotencyKey:     p.IdempotencyKey,
		Status:             task.Working,
		CreatedAt:          now,
		UpdatedAt:          now,
		TTL:                max(or(t.TTL, e.opts.DefaultTTL), 0),
		PollInterval:       or(t.PollInterval, e.opts.DefaultPollInterval),
	}
	// With a free worker slot, the task is created claimed by this
	// engine, in the create's own write: no claim write follows, and the
	// handler starts at once. A duplicate of an idempotency key writes
	// nothing, so it starts nothing.
	claimCtx, claimed, claim := e.claimForCreate()
	if claim {
		store.ApplyClaim(r, store.ClaimParams{Owner: e.opts.Owner, Now: now, LeaseExpiresAt: now.Add(e.opts.Lease)})
	}
	if claim && p.IdempotencyKey == "" && t.Retry.Rerun {
		// The handler starts now, and its first write is folded into
		// the create. Not with a key: a duplicate must start nothing.
		// Only for a tool that may run again: should the insert fail,
		// the client retries a call whose handler has begun.
		r, err := e.createFolded(ctx, claimCtx, claimed, r, now)
		if err != nil {
			return nil, fmt.Errorf("engine: create task: %w", err)
		}
		e.obs.TaskCreated(p.Tool)
		return r, nil
	}
	if claim {
		defer e.claimCall()()
	}
	if err := e.st.Create(ctx, r); err != nil {
		var dup *store.DuplicateError
		isDup := errors.As(err, &dup)
		// Not stored for all this engine can tell: else created as if the
		// insert had said so (claimed, only this engine can run it before
		// its lease runs out and the run is taken for lost).
		if isDup || !e.stored(ctx, claimCtx, r) {
			if claim {
				claimed(false)
			}
			if isDup {
				return e.replay(dup.Task, p)
			}
			return nil, fmt.Errorf("engine: create task: %w", err)
		}
	}
	e.obs.TaskCreated(p.Tool)
	if claim {
		e.begin(claimCtx, store.Claimed{Record: r.Clone()}, now, nil)
		claimed(true)
	} else {
		e.backlog.Store(true)
		e.signal()
	}
	return r, nil
}

// stored reports whether the task r, whose insert failed, is stored
// anyway: an insert may be committed and its reply lost (a connection
// broken after COMMIT). Task ids are random: a task with r's id is the one
// this engine inserted. The store is asked again, with backoff, while it
// cannot say (it is likely down when the reply was lost), until a third of
// a lease after r's creation (a task claimed in its create must be started
// before its lease runs out), and for a task claimed in its create (claimCtx
// not nil) while the claim loop runs (Shutdown ends it); not while ctx runs,
// which the client may have left while the task stays.
func (e *Engine) stored(ctx, claimCtx context.Context, r *task.Record) bool {
	look := claimCtx
	if look == nil {
		look = context.WithoutCancel(ctx)
	}
	look, cancel := context.WithTimeout(look, e.opts.Lease/3-e.now().Sub(r.CreatedAt))
	defer cancel()
	for backoff := minStoreBackoff; ; {
		_, err := e.st.Get(look, r.ID)
		switch {
		case err == nil:
			return true
		case errors.Is(err, store.ErrNotFound):
			return false
		}
		e.log.Debug("could not tell whether a task whose insert failed is stored; asking again", "task", r.ID, "retry_in", backoff, "err", err)
		if !backOff(look, &backoff) {
			msg := "could not tell whether a task whose insert failed is stored: if it is, any worker runs it"
			if claimCtx != nil {
				msg = "could not tell whether a task whose insert failed is stored: if it is, its run is taken for lost a lease later"
			}
			e.log.Warn(msg, "task", r.ID, "err", err)
			return false
		}
	}
}

// replay returns old, the task that holds the idempotency key of the
// create p, if p is the call that created it.
func (e *Engine) replay(old *task.Record, p CreateParams) (*task.Record, error) {
	if old.Tool != p.Tool || !sameJSON(old.Args, p.Args) {
		return nil, fmt.Errorf("%w: key %q made task %s of tool %q with other arguments", ErrKeyReused, p.IdempotencyKey, old.ID, old.Tool)
	}
	e.log.Info("create replayed by its idempotency key", "task", old.ID, "tool", old.Tool)
	return old, nil
}

// checkKey returns ErrInvalidKey, wrapped with what is wrong, unless k is
// empty or a valid idempotency key.
func checkKey(k string) error {
	if len(k) > MaxIdempotencyKeyLen {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidKey, len(k), MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return fmt.Errorf("%w: byte %d is %#x, not printable ASCII", ErrInvalidKey, i, k[i])
		}
	}
	return nil
}

// sameJSON reports whether a and b hold the same JSON value; an empty or
// null value is the empty object (no arguments).
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	return decodeArgs(a, &va) == nil && decodeArgs(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

func decodeArgs(b json.RawMessage, v *any) error {
	if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null" {
		b = json.RawMessage(`{}`)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// Get returns the principal's task with the id, or ErrNotFound.
func (e *Engine) Get(ctx context.Context, principal, id string) (*task.Record, error) {
	if !task.ValidID(id) {
		return nil, ErrNotFound
	}
	r, err := e.st.GetFor(ctx, id, principal)
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
// check, if not nil, is called for each response to an outstanding key
// with the request it answers (see [store.AnswerParams]); if it refuses
// one, nothing is stored and the error is a *store.AnswerError.
func (e *Engine) Update(ctx context.Context, principal, id string, responses map[string]json.RawMessage, check store.AnswerCheck) ([]string, error) {
	if !task.ValidID(id) {
		return nil, ErrNotFound
	}
	accepted, err := e.st.Answer(ctx, store.AnswerParams{ID: id, Principal: principal, Now: e.now(), Responses: responses, Check: check})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("engine: update task: %w", err)
	}
	if len(accepted) > 0 {
		// A handler of this process that waits for it wakes. Else, if
		// the task was suspended, it is claimable now, and this process
		// resumes it at once (other processes hear of it from the store's
		// Listener, or at their next claim poll). The claim loop is woken
		// either way: a handler found waiting may be one that was just
		// suspended, on its way out, whose wake-up nobody reads. A claim
		// that finds nothing costs one read.
		e.notify(id, false)
		e.signal()
	}
	return accepted, nil
}

// Cancel asks for the principal's task to be cancelled. A terminal task is
// left as it is. A running task's handler sees its ctx cancelled, at once
// on this process and within one heartbeat on another.
func (e *Engine) Cancel(ctx context.Context, principal, id string) error {
	_, err := e.cancel(ctx, principal, id, store.CancelledByRequest)
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
	if !task.ValidID(id) {
		return nil, ErrNotFound
	}
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

// CancelNow cancels the principal's task at once, even while a worker runs
// it, as the tasks/cancel of MCP 2025-11-25 requires: the task is
// cancelled when CancelNow returns, its handler's ctx is cancelled (at
// once on this process, at its next heartbeat on another), and the
// worker's later writes are refused. A terminal task is left as it is. It
// returns the task after the call.
func (e *Engine) CancelNow(ctx context.Context, principal, id string) (*task.Record, error) {
	if !task.ValidID(id) {
		return nil, ErrNotFound
	}
	r, err := e.st.RequestCancel(ctx, store.CancelParams{ID: id, Principal: principal, Now: e.now(),
		StatusMessage: store.CancelledByRequest, AtOnce: true})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("engine: cancel task: %w", err)
	}
	e.notify(id, true)
	return r, nil
}

// maxEarlyCancels bounds the cancels kept while claims are in flight:
// past it, a run that such a claim begins learns of its cancel at its
// first heartbeat.
const maxEarlyCancels = 1024

// notify wakes the local execution of a task, if this process runs it,
// and reports whether it does. A cancel of a task that no run tracks is
// kept while a claim is in flight, as the claim may have leased it: the
// run it begins is cancelled when it is tracked. (A kept cancel that no
// claim meets is forgotten when none is in flight; one met later is
// right too: a cancel request stays with its task.)
func (e *Engine) notify(id string, cancel bool) bool {
	e.mu.Lock()
	x := e.running[id]
	if x == nil && cancel && e.claiming > 0 && len(e.cancelled) < maxEarlyCancels {
		if e.cancelled == nil {
			e.cancelled = map[string]bool{}
		}
		e.cancelled[id] = true
	}
	e.mu.Unlock()
	if x == nil {
		return false
	}
	if cancel {
		x.cancel(errCancelRequested)
		return true
	}
	x.wake()
	return true
}
