package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// A WaitOption changes how [Client.CallAndWait], [Task.Wait],
// [Client.WaitAll] and [Client.Watch] wait.
type WaitOption func(*waitConfig)

// OnStatus calls f with each status of a task that differs from the one
// before it in status, status message or the keys of its input requests,
// starting with the status the wait starts from (a new task's "working"),
// in the order of the server's lastUpdatedAt (a poll answered late does
// not show an older status again).
// It is how a program shows "Rendering 2/4" without a polling loop of its
// own. Calls are never concurrent, and come before the wait answers the
// status's input requests. f must not block for long: the wait waits for
// it.
func OnStatus(f func(*TaskStatus)) WaitOption {
	return func(w *waitConfig) { w.onStatus = f }
}

// OnTask calls f once, for [Client.CallAndWait], when the server makes the
// call a task: with the task's handle (to cancel it, or to print its id)
// and, if the Journal could not record it, an error wrapping [ErrJournal]
// (the task runs on the server either way, and the wait goes on).
func OnTask(f func(t *Task, journalErr error)) WaitOption {
	return func(w *waitConfig) { w.onTask = f }
}

// WithInputHandler answers the input requests of this wait (its MRTR
// rounds and its tasks' inputRequests) with h instead of
// Options.InputHandler.
func WithInputHandler(h InputHandler) WaitOption {
	return func(w *waitConfig) { w.input, w.inputSet = h, true }
}

// ManualInput makes a wait leave input requests to the caller: they are
// passed to no handler and are no error; the wait reports them through
// [OnStatus] and keeps waiting while the caller answers them with
// [Task.Update], from the OnStatus callback or any goroutine. Without an
// InputHandler and without ManualInput, a wait that meets an input request
// returns an *[InputRequiredError] instead.
func ManualInput() WaitOption {
	return func(w *waitConfig) { w.manual = true }
}

// PollOnly makes a wait poll tasks/get only, without subscribing to
// notifications/tasks.
func PollOnly() WaitOption {
	return func(w *waitConfig) { w.pollOnly = true }
}

// waitConfig is the WaitOptions of one wait, and the statuses it has
// reported.
type waitConfig struct {
	onStatus func(*TaskStatus)
	onTask   func(*Task, error)
	input    InputHandler
	inputSet bool
	manual   bool
	pollOnly bool

	mu       sync.Mutex
	reported map[string]*TaskStatus // by task id: the last status given to onStatus
}

func newWaitConfig(opts []WaitOption) *waitConfig {
	w := &waitConfig{reported: map[string]*TaskStatus{}}
	for _, o := range opts {
		if o != nil {
			o(w)
		}
	}
	return w
}

// handler is the wait's InputHandler (nil: none).
func (w *waitConfig) handler(c *Client) InputHandler {
	if w.inputSet {
		return w.input
	}
	return c.opts.InputHandler
}

// report gives st to onStatus if it differs from the last status
// reported of its task.
func (w *waitConfig) report(st *TaskStatus) {
	if w.onStatus == nil || st == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev := w.reported[st.TaskID]; prev != nil && (prev.Terminal() || sameStatus(prev, st) || older(st, prev)) {
		return
	}
	w.reported[st.TaskID] = st
	w.onStatus(st)
}

// older reports whether a is a status from before b by the server's
// lastUpdatedAt: a poll answered before a notification that the wait
// already reported.
func older(a, b *TaskStatus) bool {
	return !a.LastUpdatedAt.IsZero() && !b.LastUpdatedAt.IsZero() && a.LastUpdatedAt.Before(b.LastUpdatedAt)
}

// sameStatus reports whether a and b show the same thing: status, status
// message and input request keys.
func sameStatus(a, b *TaskStatus) bool {
	if a.Status != b.Status || a.StatusMessage != b.StatusMessage || len(a.InputRequests) != len(b.InputRequests) {
		return false
	}
	for k := range a.InputRequests {
		if _, ok := b.InputRequests[k]; !ok {
			return false
		}
	}
	return true
}

// CallAndWait calls the tool name with args and returns its final result,
// however the server answers: at once, after MRTR input rounds (answered
// through the InputHandler), or with a task, which it then waits for as
// [Task.Wait] does (by notifications/tasks when the server offers them,
// else by polling). The task, if any, is recorded in the Journal first.
//
// Errors are those of [Client.CallTool] and [Task.Wait]: a failed or
// cancelled task gives a *[TaskError], a question without an InputHandler
// an *[InputRequiredError] (for a task: answer it with [Task.Update] on
// its Task and Wait again; or wait with [ManualInput]). Use [OnTask] to
// get the task's handle as soon as it exists, and [OnStatus] to see its
// progress.
func (c *Client) CallAndWait(ctx context.Context, name string, args any, opts ...WaitOption) (*mcp.CallToolResult, error) {
	w := newWaitConfig(opts)
	res, err := c.callTool(ctx, name, args, w.handler(c), nil, "")
	if res == nil || res.Task == nil {
		if err != nil {
			return nil, err
		}
		return res.Result, nil
	}
	if err != nil {
		c.log.Warn("the task runs, but the journal could not record it", "task", res.Task.ID, "err", err)
	}
	if w.onTask != nil {
		w.onTask(res.Task, err)
	}
	return res.Task.wait(ctx, w)
}

// Wait waits for the task to end and returns its result.
//
// It subscribes to the task's notifications/tasks (subscriptions/listen)
// when the server offers them, reads the task once with tasks/get after the
// subscription is acknowledged, and then polls only as a backstop, every
// Options.ListenBackstop. Otherwise, and when the stream breaks, it polls
// tasks/get every pollIntervalMs, as the latest status says (clamped by
// Options.MinPollInterval and MaxPollInterval, Options.DefaultPollInterval
// when absent). [PollOnly] skips the subscription.
//
// Each new input request is passed to the InputHandler (or the handler of
// [WithInputHandler]) once and its answer sent with tasks/update; keys
// answered before, with [Task.Update] or as the Journal says, are not asked
// again. [OnStatus] sees every status change.
//
// A completed task returns its result, which may have IsError set. A
// failed or cancelled task returns a *[TaskError]; input without an
// InputHandler (and without [ManualInput]) an *[InputRequiredError]; an
// unknown or expired task an error matching [ErrInvalidParams]. Transient
// errors (transport, HTTP 5xx, -32603: a server that restarts) are retried
// with growing pauses for Options.RetryBudget (2 minutes by default) from
// the first of them; past it the wait returns an *[UnavailableError], and
// the task may still be running: Wait again later.
func (t *Task) Wait(ctx context.Context, opts ...WaitOption) (*mcp.CallToolResult, error) {
	return t.wait(ctx, newWaitConfig(opts))
}

func (t *Task) wait(ctx context.Context, w *waitConfig) (*mcp.CallToolResult, error) {
	var o Outcome
	t.c.watch(ctx, []*Task{t}, w, func(x Outcome) { o = x })
	return o.Result, o.Err
}

// stepOutcome is the outcome of one round of a wait.
type stepOutcome struct {
	done   bool
	result *mcp.CallToolResult
	err    error
	next   time.Duration // when not done: the wait before the next round
}

// failureRun is a run of rounds of one wait of a task that failed
// transiently, one after the other.
type failureRun struct {
	n     int       // rounds that failed
	since time.Time // when the first of them did
}

// step runs one round of a wait: a status (pushed, or read with tasks/get
// if pushed is nil, and then reported), then its input handled. failed is
// the wait's run of failed rounds before this one.
func (t *Task) step(ctx context.Context, w *waitConfig, pushed *TaskStatus, failed *failureRun) stepOutcome {
	st := pushed
	if st == nil {
		var err error
		if st, err = t.Get(ctx); err != nil {
			return t.failure(ctx, err, failed)
		}
	} else {
		t.mu.Lock()
		t.last = st
		t.mu.Unlock()
		t.record(ctx, st, nil)
	}
	// The server answered: a failure from here on (an answer that cannot
	// be sent, say, after a person took minutes to give it) starts a new
	// run of failures, with a budget of its own.
	t.succeeded(failed)
	if pushed == nil {
		// A pushed status was reported when it arrived; reporting it
		// again here could follow a later one that arrived meanwhile
		// (with the same lastUpdatedAt, so not seen as older).
		w.report(st)
	}
	switch st.Status {
	case task.Completed:
		return stepOutcome{done: true, result: st.Result}
	case task.Failed:
		return stepOutcome{done: true, err: &TaskError{TaskID: t.ID, Status: st.Status, StatusMessage: st.StatusMessage, Err: st.Error}}
	case task.Cancelled:
		return stepOutcome{done: true, err: &TaskError{TaskID: t.ID, Status: st.Status, StatusMessage: st.StatusMessage}}
	case task.InputRequired:
		if err := t.handleInput(ctx, w, st); err != nil {
			var ire *InputRequiredError
			if errors.As(err, &ire) {
				return stepOutcome{done: true, err: err}
			}
			return t.failure(ctx, err, failed)
		}
	}
	return stepOutcome{next: t.c.interval(st)}
}

// succeeded ends the run of failed rounds, if any: a round went through.
func (t *Task) succeeded(failed *failureRun) {
	if failed.n > 0 {
		t.c.log.Info("a task's server answers again", "task", t.ID, "failures", failed.n, "after", time.Since(failed.since).Round(time.Millisecond))
	}
	*failed = failureRun{}
}

// failure ends the wait with err, unless err is transient and the wait has
// not been failing for Options.RetryBudget (nor, if set, for
// Options.MaxConsecutiveFailures rounds): then the round is retried after
// a pause that grows with each failure in a row (see backoff), the last
// retry coming when the budget ends. A wait that gives up returns an
// *UnavailableError. The first failure of a run is logged as a warning,
// its retries at debug level, and the end of the run (see succeeded) at
// info level: a restart of the server logs two lines, not one per retry.
func (t *Task) failure(ctx context.Context, err error, failed *failureRun) stepOutcome {
	if ctx.Err() != nil || !transient(err) {
		return stepOutcome{done: true, err: err}
	}
	now := time.Now()
	if failed.n == 0 {
		failed.since = now
	}
	failed.n++
	n, since, last := failed.n, failed.since, t.Last()
	o := &t.c.opts
	giveUpAt := since.Add(o.RetryBudget)
	if !now.Before(giveUpAt) || o.MaxConsecutiveFailures > 0 && n >= o.MaxConsecutiveFailures {
		return stepOutcome{done: true, err: &UnavailableError{TaskID: t.ID, Task: t, Failures: n, For: now.Sub(since), Err: err}}
	}
	base := t.c.interval(last)
	next := min(backoff(n, base, max(base, maxRetryDelay)), giveUpAt.Sub(now))
	if n == 1 {
		t.c.log.Warn("a request for a task failed; retrying until the server answers", "task", t.ID, "retry_for", o.RetryBudget, "err", err)
	} else {
		t.c.log.Debug("a request for a task failed again; retrying", "task", t.ID, "attempt", n, "next", next, "err", err)
	}
	return stepOutcome{next: next}
}

// handleInput answers the keys of st not answered before, then sends the
// answers not yet delivered. An answer the server refuses (not a
// transient failure) is forgotten, so that the next wait asks again.
func (t *Task) handleInput(ctx context.Context, w *waitConfig, st *TaskStatus) error {
	t.inputMu.Lock()
	defer t.inputMu.Unlock()
	t.answeredBefore(ctx)
	h := w.handler(t.c)
	pending := map[string]json.RawMessage{}
	missing := map[string]*InputRequest{}
	for _, key := range sortedKeys(st.InputRequests) {
		t.mu.Lock()
		a, have := t.answers[key]
		sent := t.sent[key]
		t.mu.Unlock()
		if sent {
			continue // answered; the server has not caught up with the update yet
		}
		if !have {
			if w.manual {
				continue // the caller answers with Update
			}
			if h == nil {
				missing[key] = st.InputRequests[key]
				continue
			}
			hctx, stop := t.whileAsked(ctx, key, st)
			var err error
			a, err = answerWith(hctx, h, key, st.InputRequests[key])
			gone := hctx.Err() != nil && ctx.Err() == nil
			stop()
			if gone {
				continue // the server no longer asks: nothing to answer
			}
			if err != nil {
				return fmt.Errorf("task %s: %w", t.ID, err)
			}
			t.mu.Lock()
			t.answers[key] = a
			t.mu.Unlock()
		}
		pending[key] = a
	}
	if len(pending) > 0 {
		if err := t.update(ctx, pending); err != nil {
			if !transient(err) {
				t.mu.Lock()
				for key := range pending {
					delete(t.answers, key)
				}
				t.mu.Unlock()
			}
			return err
		}
	}
	if len(missing) > 0 {
		return &InputRequiredError{TaskID: t.ID, Task: t, Requests: missing}
	}
	return nil
}

// whileAsked returns the context of an InputHandler asked for key by st:
// it ends with ctx, or once a poll of the task (one every poll interval)
// finds key no longer asked (the server took its question back, or the
// task moved on), with the cause ErrNotAsked, so that a handler that waits
// for a person or forwards the question stops. stop ends the polls.
func (t *Task) whileAsked(ctx context.Context, key string, st *TaskStatus) (_ context.Context, stop func()) {
	poll := t.get
	gone := func(now *TaskStatus) bool {
		_, asked := now.InputRequests[key]
		return now.Status != task.InputRequired || now.InputRequests != nil && !asked
	}
	if leg, _, _ := t.c.knownProtocol(ctx); leg != nil {
		// 2025-11-25 tells the questions on tasks/result, which a server
		// may send once: the status alone says whether the task still
		// asks.
		poll = func(ctx context.Context) (*TaskStatus, error) { return t.legacyStatus(ctx, leg) }
		gone = func(now *TaskStatus) bool { return now.Status != task.InputRequired }
	}
	hctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(t.c.interval(st))
		defer tick.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-tick.C:
			}
			now, err := poll(hctx)
			if err != nil {
				continue // the wait's own polls report failures
			}
			if gone(now) {
				cancel(ErrNotAsked)
				return
			}
		}
	}()
	return hctx, func() { cancel(nil); <-done }
}

// interval is the wait before the next poll after st.
func (c *Client) interval(st *TaskStatus) time.Duration {
	d := c.opts.DefaultPollInterval
	if st != nil && st.PollIntervalMs != nil && *st.PollIntervalMs > 0 {
		d = time.Duration(*st.PollIntervalMs) * time.Millisecond
	}
	return min(max(d, c.opts.MinPollInterval), c.opts.MaxPollInterval)
}

// firstDelay is the wait before the first poll of a wait starting at now:
// one interval after the last status seen, or none.
func (t *Task) firstDelay(now time.Time) time.Duration {
	t.mu.Lock()
	last := t.last
	t.mu.Unlock()
	if last == nil {
		return 0
	}
	return max(0, last.seenAt.Add(t.c.interval(last)).Sub(now))
}
