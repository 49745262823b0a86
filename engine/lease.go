package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcptasks/mcptasks/store"
)

// track registers x as running on this process, so that the heartbeat
// loop extends its lease and cancels and answers reach it, and starts the
// loop if it is not running. A run of the same task that x replaces (an
// older attempt, reclaimed here) has lost its lease.
func (e *Engine) track(x *execution) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.running[x.id]; old != nil {
		old.cancel(errLeaseLost)
	}
	e.running[x.id] = x
	if e.cancelled[x.id] { // cancelled while the call that leased it was in flight
		delete(e.cancelled, x.id)
		x.cancel(errCancelRequested)
	}
	if e.hbStop == nil {
		e.hbStop = make(chan struct{})
		e.beats.Add(1)
		go func(stop <-chan struct{}) { defer e.beats.Done(); e.heartbeat(stop) }(e.hbStop)
	}
}

// untrack forgets x, and stops the heartbeat loop when nothing runs.
func (e *Engine) untrack(x *execution) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running[x.id] == x { // not a newer attempt of the task, reclaimed here
		delete(e.running, x.id)
	}
	if len(e.running) == 0 && e.hbStop != nil {
		close(e.hbStop)
		e.hbStop = nil
	}
}

// heartbeat extends the leases of every execution of this process in one
// store call every Lease/3, until stop is closed (nothing runs). It
// cancels the handlers whose task was cancelled or whose lease was lost,
// and wakes the handlers waiting for input whose answers are in.
func (e *Engine) heartbeat(stop <-chan struct{}) {
	tick := time.NewTicker(e.opts.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		e.heartbeatOnce()
	}
}

// heartbeatOnce is one round of the heartbeat loop.
func (e *Engine) heartbeatOnce() {
	now := e.now()
	e.mu.Lock()
	xs := make([]*execution, 0, len(e.running))
	helds := make([]time.Time, 0, len(e.running))
	for _, x := range e.running {
		if x.pending() { // not stored yet: nothing to extend
			continue
		}
		xs = append(xs, x)
		helds = append(helds, x.held)
	}
	e.mu.Unlock()
	leases := make([]store.Lease, 0, len(xs))
	live := xs[:0]
	var deadline time.Time // the earliest lease end: the call must not outlast it
	for i, x := range xs {
		held := helds[i]
		if !now.Before(held) {
			// The store was unreachable for a whole lease: another worker
			// may own the task by now, so this one must stop.
			x.logAt(context.Background(), slog.LevelWarn, "lease expired while the store was unreachable")
			x.cancel(errLeaseLost)
			continue
		}
		if deadline.IsZero() || held.Before(deadline) {
			deadline = held
		}
		leases = append(leases, store.Lease{ID: x.id, Attempt: x.attempt})
		live = append(live, x)
	}
	if len(leases) == 0 {
		return
	}
	// A store call that hangs would otherwise keep a handler running
	// after another worker reclaimed its task.
	ctx, cancel := context.WithTimeout(context.Background(), deadline.Sub(now))
	defer cancel()
	sts, err := e.st.HeartbeatMany(ctx, store.HeartbeatManyParams{Leases: leases, Now: now, LeaseExpiresAt: now.Add(e.opts.Lease)})
	if err != nil {
		// Retried at the next tick; the leases that run out by then are
		// given up above.
		e.log.Warn("heartbeat", "tasks", len(leases), "err", err)
		return
	}
	gone := make([]bool, len(live)) // runs that ended while the call ran: their end, not a loss
	e.mu.Lock()
	for i, x := range live {
		gone[i] = e.running[x.id] != x
		if !sts[i].Lost {
			x.held = now.Add(e.opts.Lease)
		}
	}
	e.mu.Unlock()
	for i, x := range live {
		if gone[i] {
			continue
		}
		switch st := sts[i]; {
		case st.Lost:
			x.logAt(context.Background(), slog.LevelWarn, "lease lost")
			x.cancel(errLeaseLost)
		case st.CancelRequested:
			x.cancel(errCancelRequested)
		case st.Answered && x.waiting.Load():
			x.wake()
		}
	}
}
