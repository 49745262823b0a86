package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Causes of a handler's ctx cancellation, by their names in this package
// (cause.go exports them).
var (
	errCancelRequested = ErrCancelRequested
	errLeaseLost       = ErrLeaseLost
	errShutdown        = ErrShutdown
)

// execution is one run of a handler on this process.
type execution struct {
	id       string
	attempt  int
	tool     *Tool
	toolName string
	log      *slog.Logger // the engine's: lines about the run go through logAt
	// ctx is the handler's context, without its span; cancel ends it with
	// a cause. Both are made when the run begins, before it is tracked,
	// so that a cancel or a Shutdown reaches a run that has not started
	// its handler yet.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	input   chan struct{}   // buffered(1): answers may have arrived
	parked  <-chan struct{} // closed by Shutdown: release if parked
	slot    bool            // holds a worker slot; guarded by being used by one goroutine
	holding bool            // holds a MaxHolding token instead (a tool that holds); as slot
	span    trace.Span      // the run's span; records nothing without tracing
	waiting atomic.Bool     // the handler waits in RequestInput
	held    time.Time       // the lease as last extended; guarded by Engine.mu
	create  *pendingCreate  // the task's create, if it waited for the first write
	st      store.Store     // what the run writes to: the store, or a foldingStore of create
}

// logAt writes a line about the run, naming its task, when level is
// enabled. The attributes are added per line, not with slog's With, which
// formats them at once: every run would pay for lines most never write.
func (x *execution) logAt(ctx context.Context, level slog.Level, msg string, args ...any) {
	if !x.log.Enabled(ctx, level) {
		return
	}
	x.log.Log(ctx, level, msg, append([]any{"task", x.id, "tool", x.toolName, "attempt", x.attempt}, args...)...)
}

// wake tells the handler that its answers may have arrived.
func (x *execution) wake() {
	select {
	case x.input <- struct{}{}:
	default:
	}
}

// Start starts the worker pool and the sweeper. They run until ctx is done
// or [Engine.Shutdown] is called. Start may be called once.
func (e *Engine) Start(ctx context.Context) {
	e.startOnce.Do(func() {
		e.mu.Lock()
		ctx, e.stop = context.WithCancel(ctx)
		e.mu.Unlock()
		e.loops.Add(1)
		go func() { defer e.loops.Done(); e.sweepLoop(ctx) }()
		if cap(e.slots) == 0 || len(e.names) == 0 {
			// No workers, or no tools (Claim reads a nil tool list as
			// "every tool"): nothing to claim or wake.
			return
		}
		e.mu.Lock()
		e.claimCtx = ctx
		e.mu.Unlock()
		e.loops.Add(1)
		go func() { defer e.loops.Done(); e.claimLoop(ctx) }()
		if l, ok := e.raw.(store.Listener); ok {
			e.loops.Add(1)
			go func() { defer e.loops.Done(); e.listenLoop(ctx, l) }()
		}
	})
}

func (e *Engine) claimLoop(ctx context.Context) {
	tick := time.NewTicker(e.opts.ClaimInterval)
	defer tick.Stop()
	for {
		n, err := e.claimOnce(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Error("claim tasks", "err", err)
		}
		if n > 0 && err == nil {
			continue // there may be more
		}
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		case <-tick.C:
		}
	}
}

// claimOnce claims as many tasks as there are free slots and starts them. It
// returns how many it claimed.
func (e *Engine) claimOnce(ctx context.Context) (int, error) {
	// Take the free slots before claiming: a handler coming back from
	// RequestInput may take a slot at any moment, and a claimed task must
	// never wait for one (its lease would run out unheartbeated, and the
	// claim loop would block Shutdown).
	free := e.reserveSlots()
	if free == 0 {
		// Whatever woke the loop (an answer, another replica's create)
		// waits for a slot: the next one freed claims it, not the tick.
		// One freed before the flag was set did not see it: look again.
		e.backlog.Store(true)
		if free = e.reserveSlots(); free == 0 {
			return 0, nil
		}
	}
	defer e.claimCall()()
	now := e.now()
	claimed, err := e.st.Claim(ctx, store.ClaimParams{
		Owner: e.opts.Owner, Tools: e.names, Now: now,
		LeaseExpiresAt: now.Add(e.opts.Lease), Limit: free,
	})
	for range free - len(claimed) {
		<-e.slots // give back what was not used
	}
	if err != nil {
		return 0, fmt.Errorf("engine: claim: %w", err)
	}
	// A claim that filled every free slot may have left more behind; one
	// that did not has emptied the queue this engine can see.
	e.backlog.Store(len(claimed) == free)
	for _, c := range claimed {
		e.begin(ctx, c, now, nil)
	}
	return len(claimed), nil
}

// begin runs the claimed task c, for which the caller took a worker slot,
// on a runner: one waiting for its next job, or a new one. create is the
// task's pending create, if it is not stored yet (see pendingCreate). The
// run is tracked before begin returns: a cancel of the task, or a
// Shutdown whose deadline passed, reaches it even before its handler runs.
func (e *Engine) begin(ctx context.Context, c store.Claimed, now time.Time, create *pendingCreate) {
	e.obs.TaskClaimed(c.Tool, now.Sub(c.CreatedAt), c.Lost)
	e.handlers.Add(1)
	x := &execution{id: c.ID, attempt: c.Attempt, tool: e.tools[c.Tool], toolName: c.Tool, log: e.log,
		input: make(chan struct{}, 1), parked: e.draining, slot: true, held: c.LeaseExpiresAt, create: create, st: e.st}
	if create != nil {
		x.st = foldingStore{Store: e.st, p: create}
	}
	// The handler's ctx outlives ctx: Shutdown stops claiming first and
	// cancels running handlers only when its drain deadline passes.
	x.ctx, x.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	e.track(x)
	j := job{ctx, c, x}
	select {
	case e.idle <- j:
	default:
		go e.runner(j)
	}
}

// claimCall counts a store call that may lease tasks to this engine until
// the function it returns is called, after the runs it leased are begun:
// meanwhile a cancel of a task not tracked here is kept (see notify).
func (e *Engine) claimCall() (done func()) {
	e.mu.Lock()
	e.claiming++
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		if e.claiming--; e.claiming == 0 {
			e.cancelled = nil
		}
		e.mu.Unlock()
	}
}

// job is an execution for a runner: execute's arguments.
type job struct {
	ctx context.Context
	c   store.Claimed
	x   *execution
}

// runnerIdle is how long a runner waits for its next job before it exits.
const runnerIdle = time.Second

// runner executes j and then waits, up to runnerIdle and until Shutdown,
// for the next job on the same goroutine. A handler's goroutine grows its
// stack as it decodes, validates and encodes, copying it at each doubling;
// a new goroutine per task did that for every task (6% of the server's CPU
// under creates), where a runner keeps its grown stack for the next.
//
// Each job runs with the profiler labels of its context (the engine's,
// not those of whichever goroutine started the runner), and a handler
// that ends its goroutine (runtime.Goexit) ends the runner after its job
// is counted done. As with net/http's handlers, which also share a
// goroutine, a handler must not leave it locked to its thread.
func (e *Engine) runner(j job) {
	var expire *time.Timer
	for {
		func() {
			defer e.handlers.Done()
			pprof.SetGoroutineLabels(j.ctx)
			e.execute(j.ctx, j.c, j.x)
		}()
		j = job{} // not kept alive while waiting
		if expire == nil {
			expire = time.NewTimer(runnerIdle)
		} else {
			expire.Reset(runnerIdle)
		}
		select {
		case j = <-e.idle:
		case <-expire.C:
			return
		case <-e.draining:
			return
		}
	}
}

// claimForCreate reports whether a task being created may be claimed by
// this engine in its create: the engine runs workers, claiming has not
// stopped, and a worker slot is free (it is taken). If so, it returns
// the claim loop's context, and done, to call once the task is started
// or the create failed, which gives the slot back unless started.
func (e *Engine) claimForCreate() (ctx context.Context, done func(started bool), ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.claimCtx == nil || e.claimCtx.Err() != nil || e.queueCreates {
		return nil, nil, false
	}
	select {
	case e.slots <- struct{}{}:
	default:
		return nil, nil, false
	}
	e.loops.Add(1) // Shutdown waits for the create before it drains
	return e.claimCtx, func(started bool) {
		if !started {
			<-e.slots
		}
		e.loops.Done()
	}, true
}

// reserveSlots takes every free worker slot without blocking and returns
// how many it took.
func (e *Engine) reserveSlots() int {
	n := 0
	for {
		select {
		case e.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
}

// freeSlot gives back a worker slot; if work may be queued, the claim
// loop claims it now, not at its next tick.
func (e *Engine) freeSlot() {
	<-e.slots
	if e.backlog.Load() {
		e.signal()
	}
}

// execute runs one claimed task, tracked as x by begin, to its end, or
// until its lease is lost. It owns one worker slot, taken by the caller,
// and gives it back.
func (e *Engine) execute(loopCtx context.Context, c store.Claimed, x *execution) {
	defer func() {
		if x.slot {
			e.freeSlot()
		}
		if x.holding {
			<-e.holding
		}
	}()
	// After finish, so that the heartbeat keeps the lease while a failed
	// write of the end is retried; also when the handler ends its
	// goroutine (runtime.Goexit runs this function's deferred calls too).
	defer e.untrack(x)
	t := x.tool
	runCtx, span := e.startSpan(context.WithoutCancel(loopCtx), c)
	defer span.End()
	x.span = span
	fence := func() store.FenceParams { return store.FenceParams{ID: c.ID, Attempt: c.Attempt, Now: e.now()} }
	ctx := x.ctx // the handler's, with the run's span
	if e.trc != nil {
		ctx = trace.ContextWithSpan(ctx, span)
	}
	defer x.cancel(nil)
	run := &Run{e: e, x: x, rec: c.Record}
	// finish writes the run's end, retried as a handler's writes are
	// (storeCall), while the run is still tracked (the heartbeat keeps its
	// lease) and for at most a lease: a run that finished must not be lost
	// to one failed write, which would leave its lease to run out and the
	// task to be taken for lost (failed, or run again). The store's fence
	// ends the retries once the lease is gone, and Shutdown's deadline ends
	// them too (not a try under way).
	finish := func(p store.FinishParams) {
		fctx, stop := context.WithTimeout(runCtx, e.opts.Lease) // each try's
		defer stop()
		retries, abandon := context.WithCancelCause(fctx) // ends at Shutdown's deadline too
		defer abandon(nil)
		defer context.AfterFunc(e.abandoned, func() { abandon(errShutdown) })()
		if err := run.storeCall(retries, "finish", func(context.Context) error {
			p.FenceParams = fence()
			return x.st.Finish(fctx, p) // a try under way is not cut
		}); err != nil {
			level := slog.LevelWarn
			switch {
			case p.Status == task.Cancelled && errors.Is(err, store.ErrLeaseLost):
				level = slog.LevelDebug // cancelled already, at once (CancelNow)
			case errors.Is(err, errShutdown):
				level = slog.LevelInfo // left to another worker, as a handler still running is
			}
			x.logAt(runCtx, level, "finish task", "status", p.Status, "err", err)
			spanFinishFailed(span, err)
			return
		}
		e.untrack(x) // ended: a heartbeat would find its lease gone
		e.obs.TaskFinished(c.Tool, p.Status)
		spanFinished(span, p)
		x.logAt(runCtx, slog.LevelInfo, "task finished", "status", p.Status)
	}
	switch {
	case c.CancelRequested:
		finish(store.FinishParams{Status: task.Cancelled, StatusMessage: store.CancelledByRequest})
		return
	case c.Lost && (!t.Retry.Rerun || c.Losses >= t.Retry.maxAttempts()):
		// Losses counts this claim: Losses runs were lost, and this one
		// would be run Losses+1. Graceful releases are not counted.
		msg := fmt.Sprintf("The worker running this task was lost (attempt %d); the tool %q is not re-run", c.Attempt-1, c.Tool)
		if t.Retry.Rerun {
			msg = fmt.Sprintf("The worker running this task was lost %d times; giving up", c.Losses)
		}
		finish(store.FinishParams{Status: task.Failed, StatusMessage: msg,
			Error: &task.Error{Code: task.CodeInternalError, Message: msg}})
		return
	case c.Lost:
		x.logAt(runCtx, slog.LevelWarn, "re-running task after a lost worker")
	}

	// A run cancelled before its handler starts (a cancel, a Shutdown
	// past its deadline) does not start it: its work would be thrown away.
	var res json.RawMessage
	var err error
	if context.Cause(ctx) == nil {
		res, err = callHandler(ctx, t.Handler, run)
	}
	cause := context.Cause(ctx)
	x.cancel(nil)

	switch {
	case cause == nil && errors.Is(err, ErrSuspended):
		x.logAt(runCtx, slog.LevelDebug, "task suspended until its input arrives")
		spanLeft(span, cause, err)
	case errors.Is(cause, errLeaseLost), errors.Is(cause, errShutdown), errors.Is(err, ErrReleased):
		x.logAt(runCtx, slog.LevelInfo, "task left to another worker", "cause", cause, "err", err)
		spanLeft(span, cause, err)
	case errors.Is(cause, errCancelRequested):
		finish(store.FinishParams{Status: task.Cancelled, StatusMessage: store.CancelledByRequest})
	case err != nil:
		var te *task.Error
		if !errors.As(err, &te) {
			te = &task.Error{Code: task.CodeInternalError, Message: err.Error()}
		}
		finish(store.FinishParams{Status: task.Failed, StatusMessage: te.Message, Error: te})
	default:
		finish(store.FinishParams{Status: task.Completed, Result: res})
	}
}

// callHandler runs h, turning a panic into an internal error.
func callHandler(ctx context.Context, h Handler, run *Run) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &task.Error{Code: task.CodeInternalError, Message: fmt.Sprintf("tool handler panicked: %v", p)}
			run.e.log.Error("tool handler panicked", "task", run.ID(), "panic", p, "stack", string(debug.Stack()))
		}
	}()
	return h(ctx, run)
}
