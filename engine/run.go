package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// ErrNoInput is returned by [Run.RequestInput] on a run that cannot ask for
// input: one executed inline, outside a task.
var ErrNoInput = errors.New("engine: input can only be requested from a task")

// ErrReleased is returned by RequestInput when the engine shuts down while
// the handler waits: the lease is released so that another process re-runs
// the task, and its stored answers are replayed there. A handler that gets
// it should return it (or any error wrapping it) as it is.
var ErrReleased = errors.New("engine: released while waiting for input")

// ErrSuspended is returned by RequestInput when the handler has waited for
// input longer than Options.SuspendAfter: the task stays input_required,
// held by no worker and claimed by none, until its answers arrive; then a
// worker runs the handler again, and RequestInput returns the stored
// answers at once. Work done before the question is done again (see
// [Run.Attempt]). A handler that gets it should return it (or any error
// wrapping it) as it is. Only tools that may be re-run and do not hold
// ([Tool.Hold]) are suspended.
var ErrSuspended = errors.New("engine: suspended until the input arrives")

// Run is a handler's view of the task it runs.
type Run struct {
	e   *Engine
	x   *execution
	mu  sync.Mutex // guards rec.Steps
	rec *task.Record
}

// NewInlineRun returns a Run for executing a handler synchronously, outside
// any task: SetStatus does nothing, RequestInput returns ErrNoInput, and
// Step calls its function.
func NewInlineRun(tool string, args, clientCapabilities json.RawMessage) *Run {
	return &Run{rec: &task.Record{Tool: tool, Args: args, ClientCapabilities: clientCapabilities, Status: task.Working}}
}

// ID returns the task id, or "" for an inline run.
func (r *Run) ID() string { return r.rec.ID }

// Tool returns the tool name.
func (r *Run) Tool() string { return r.rec.Tool }

// Args returns the JSON object of tool arguments.
func (r *Run) Args() json.RawMessage { return r.rec.Args }

// ClientCapabilities returns the originating request's client capabilities.
func (r *Run) ClientCapabilities() json.RawMessage { return r.rec.ClientCapabilities }

// Meta returns what the task kept of the originating request's _meta
// ([task.Record.Meta]): a JSON object, or nil.
func (r *Run) Meta() json.RawMessage { return r.rec.Meta }

// Principal returns who created the task.
func (r *Run) Principal() string { return r.rec.Principal }

// Attempt returns the run's attempt number: 1 for the first run, more when
// the task is claimed again, after a lost worker or a graceful release. 0
// for an inline run.
func (r *Run) Attempt() int { return r.rec.Attempt }

// InTask reports whether the run belongs to a task (as opposed to an inline
// synchronous call).
func (r *Run) InTask() bool { return r.e != nil }

func (r *Run) fence() store.FenceParams {
	return store.FenceParams{ID: r.rec.ID, Attempt: r.rec.Attempt, Now: r.e.now()}
}

// SetStatus sets the task's status message, which clients see on their
// next poll. A store error is retried until the write succeeds; SetStatus
// returns an error only when the run was stopped (its lease lost, the task
// cancelled, the engine shut down), and the handler should then return it.
func (r *Run) SetStatus(ctx context.Context, msg string) error {
	if r.e == nil {
		return nil
	}
	err := r.storeCall(ctx, "set status", func(ctx context.Context) error {
		return r.x.st.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: r.fence(), StatusMessage: msg})
	})
	if err != nil {
		return err
	}
	spanStatusMessage(r.x.span, msg)
	return nil
}

// RequestInput asks the client for input and waits for all the answers.
// requests maps keys to InputRequest JSON ({"method":..., "params":...}).
// Keys must be unique for the task's life: a key that was answered before,
// in this run or an earlier one, returns its stored answer at once and is
// not asked again. While it waits, the task is input_required and the
// handler does not hold a worker slot (a handler of a tool that holds
// does not, up to Options.MaxHolding of them). A handler must not call RequestInput
// from several goroutines at once.
//
// A handler of a tool that suspends ([Tool.Hold]) waits so for at most
// Options.SuspendAfter, and not at all when Options.MaxHeld others
// already wait so; then RequestInput returns ErrSuspended, and the
// handler runs again once the answers are in.
//
// If ctx ends while the run goes on (a deadline the handler set on its
// question), the requests not answered are withdrawn before RequestInput
// returns ctx's error: the task no longer asks them, and is working again
// when none is left (an answer that came first stays stored); a ctx that
// has ended already asks nothing. The handler
// may go on: as after an answer, it has its worker slot back (or its
// MaxHolding token) when RequestInput returns, unless the run stopped.
//
// A store error never reaches the handler: the request is retried with
// backoff until it is stored, and a failed re-read of the answers waits
// for the next wake-up. RequestInput returns an error only when the run
// was stopped (its lease lost, the task cancelled, the engine shut down),
// released (ErrReleased) or suspended (ErrSuspended); the handler should
// return it as it is.
func (r *Run) RequestInput(ctx context.Context, requests map[string]json.RawMessage, statusMessage string) (_ map[string]json.RawMessage, err error) {
	if r.e == nil {
		return nil, ErrNoInput
	}
	if ctx.Err() != nil { // asked of nobody: not stored
		return nil, context.Cause(ctx)
	}
	e, x := r.e, r.x
	// Answers given to this process, or announced by the store's Listener,
	// wake the handler at once; the heartbeat loop wakes it for the rest.
	x.waiting.Store(true)
	defer x.waiting.Store(false)
	// A handler of a tool that suspends holds while it waits for at most
	// SuspendAfter, and only while fewer than MaxHeld others hold; else
	// the write that stores its requests suspends it.
	hold := !x.tool.suspends()
	var suspend <-chan time.Time // fires after SuspendAfter
	if !hold && e.opts.SuspendAfter > 0 {
		select {
		case e.held <- struct{}{}:
			defer func() { <-e.held }()
			hold = true
			t := time.NewTimer(e.opts.SuspendAfter)
			defer t.Stop()
			suspend = t.C
		default:
		}
	}
	withdrawn := false // the question was taken back, and the run goes on
	defer func() {
		// A handler that runs on (answered, or its question taken back)
		// takes a slot back first, for as long as the run lasts: its own
		// ctx may end meanwhile.
		if (err != nil && !withdrawn) || x.slot || x.holding {
			return
		}
		select {
		case e.slots <- struct{}{}:
			x.slot = true
		case <-x.ctx.Done():
		}
	}()
	var answers map[string]json.RawMessage
	// stopWaiting ends a wait that ctx ended: what is asked and not
	// answered is taken back, if the run goes on.
	stopWaiting := func() error {
		withdrawn = r.withdraw(requests, answers)
		return context.Cause(ctx)
	}
	read := func(ctx context.Context, suspend bool) (err error) {
		answers, err = x.st.RequestInput(ctx, store.RequestInputParams{
			FenceParams: r.fence(), Requests: requests, StatusMessage: statusMessage, Suspend: suspend,
		})
		return err
	}
	for asked := false; ; asked = true {
		var err error
		if !asked {
			// The person must be asked: retry until the request is stored.
			if err := r.storeCall(ctx, "request input", func(ctx context.Context) error { return read(ctx, !hold) }); err != nil {
				r.takeBack(requests)
				return nil, err
			}
		} else {
			err = read(ctx, false)
		}
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			x.cancel(errLeaseLost)
			return nil, fmt.Errorf("engine: request input: %w", err)
		case err != nil:
			// The request is stored; only a re-read failed. Try again at
			// the next wake-up (the heartbeat loop wakes the handler again
			// while its task is answered): one store blip during a long
			// wait for a person must not end the run. If the store stays
			// away for a whole lease, the heartbeat cancels ctx.
			e.log.Warn("re-read input answers", "task", r.ID(), "err", err)
		case len(answers) == len(requests):
			spanInputAnswered(x.span, requests, !asked)
			return answers, nil
		case !asked:
			spanInputRequested(x.span, requests, answers)
		}
		if !hold { // the write that stored the requests suspended the task
			return nil, r.suspended()
		}
		// Waiting for a person must not hold a worker slot. A handler of a
		// tool that holds gives its slot up only for one of MaxHolding
		// tokens, taken when it first waits and kept, in the slot's place,
		// until its run ends: answered, it runs on at once, never waiting
		// for a slot behind handlers whose questions are not answered
		// (Workers + MaxHolding bound such handlers). Without a token it
		// keeps its slot.
		if x.slot && (x.tool.suspends() || x.holding || e.takeHolding(x)) {
			x.slot = false
			e.freeSlot()
		}
		select {
		case <-ctx.Done():
			return nil, stopWaiting()
		case <-x.parked:
			if x.tool.Retry.Rerun {
				if err := e.st.Release(context.WithoutCancel(ctx), r.fence()); err != nil {
					// Still leave the task: its lease expires and another
					// worker re-runs it. Failing it would lose the task
					// to a store blip during a graceful shutdown.
					e.log.Warn("release task", "task", r.ID(), "err", err)
				}
				return nil, ErrReleased
			}
			x.parked = nil // wait for the drain deadline instead
		case <-suspend:
			if ctx.Err() != nil { // it ended too: the handler stops waiting
				return nil, stopWaiting()
			}
			return nil, r.suspend(ctx)
		case <-x.input:
		}
	}
}

// withdraw takes back the requests that answered does not answer when
// the handler stops waiting for them while the run goes on (the context
// it passed RequestInput ended: a deadline of its own, a proxied server
// that took its question back), so that clients are not asked what nobody
// waits for. The write is retried until stored, unless the run stops (its
// task is then released, cancelled or lost anyway). It reports whether the
// run goes on.
func (r *Run) withdraw(requests, answered map[string]json.RawMessage) bool {
	x := r.x
	if x.ctx.Err() != nil {
		return false
	}
	var keys []string
	for k := range requests {
		if _, ok := answered[k]; !ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return true
	}
	// storeCall fails only once the run stops.
	return r.storeCall(x.ctx, "withdraw input", func(ctx context.Context) error {
		return r.withdrawKeys(ctx, keys)
	}) == nil
}

// withdrawKeys is the store write that takes back the requests of keys.
func (r *Run) withdrawKeys(ctx context.Context, keys []string) error {
	_, err := r.x.st.RequestInput(ctx, store.RequestInputParams{FenceParams: r.fence(), Withdraw: keys})
	return err
}

// takeBackTimeout bounds takeBack's one try.
const takeBackTimeout = time.Second

// takeBack withdraws requests once, if the run goes on, after their first
// store call failed because the handler's context ended: the store may
// have taken them (a commit whose reply was cut), and nobody waits for
// them now. Most likely it did not (the store was down), so a failure is
// only logged: unlike withdraw, takeBack does not hold the handler, whose
// deadline has passed, until the store is back.
func (r *Run) takeBack(requests map[string]json.RawMessage) {
	x := r.x
	if x.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(x.ctx, takeBackTimeout)
	defer cancel()
	if err := r.withdrawKeys(ctx, slices.Collect(maps.Keys(requests))); err != nil {
		r.e.log.Warn("take back input requests whose store call was cut", "task", r.ID(), "err", err)
	}
}

// takeHolding takes one of MaxHolding tokens for x, if one is free.
func (e *Engine) takeHolding(x *execution) bool {
	select {
	case e.holding <- struct{}{}:
		x.holding = true
		return true
	default:
		return false
	}
}

// suspend gives up the run's lease while its task waits for input, and
// returns ErrSuspended, or the error of a stopped run.
func (r *Run) suspend(ctx context.Context) error {
	if err := r.storeCall(ctx, "suspend", func(ctx context.Context) error {
		return r.e.st.Release(ctx, r.fence())
	}); err != nil {
		return err
	}
	return r.suspended()
}

// suspended returns ErrSuspended for a run whose task the store has
// suspended. An answer that came after the last read made the task
// claimable rather than suspended, and its wake-up, which came while the
// task was still leased here, found nothing to claim: claim it now.
func (r *Run) suspended() error {
	select {
	case <-r.x.input:
		r.e.signal()
	default:
	}
	return ErrSuspended
}
