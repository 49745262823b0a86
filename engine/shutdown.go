package engine

import (
	"context"
	"time"
)

// Shutdown stops claiming new tasks and drains: handlers waiting for input
// release their tasks at once when their tool may be re-run, and running
// handlers get until ctx is done to finish. Handlers still running then are
// cancelled without writing anything, so their leases expire and another
// worker reclaims their tasks under the tool's retry policy; so are the
// ends of handlers that returned but whose end is not written yet (the
// store is unreachable). Shutdown returns once every handler has
// returned.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.startOnce.Do(func() {}) // a later Start does nothing
	// Under mu: a Create that claims its task has joined e.loops by now,
	// or sees claiming stopped.
	e.mu.Lock()
	if e.stop != nil {
		e.stop()
	}
	e.mu.Unlock()
	e.loops.Wait()
	e.drainOnce.Do(func() { close(e.draining) })

	done := make(chan struct{})
	go func() { e.handlers.Wait(); close(done) }()
	select {
	case <-done:
		e.beats.Wait()
		return nil
	case <-ctx.Done():
	}
	e.abandon()
	e.mu.Lock()
	for _, x := range e.running {
		x.cancel(errShutdown)
	}
	e.mu.Unlock()
	<-done
	e.beats.Wait()
	return ctx.Err()
}

func (e *Engine) sweepLoop(ctx context.Context) {
	tick := time.NewTicker(e.opts.SweepInterval)
	defer tick.Stop()
	for {
		if _, err := e.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			e.log.Error("sweep expired tasks", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// SweepOnce deletes every task whose TTL has elapsed, in batches, and
// returns how many it deleted.
func (e *Engine) SweepOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := e.st.DeleteExpired(ctx, e.now(), DefaultSweepBatch)
		total += n
		if err != nil || n < DefaultSweepBatch {
			if total > 0 {
				e.log.Info("swept expired tasks", "count", total)
			}
			return total, err
		}
	}
}
