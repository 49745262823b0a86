package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mcptasks/mcptasks/store"
)

// heartbeat extends x's lease every Lease/3 until ctx is done. It cancels
// the handler when a cancel was requested or the lease was lost.
func (e *Engine) heartbeat(ctx context.Context, x *execution, log *slog.Logger) {
	tick := time.NewTicker(e.opts.Lease / 3)
	defer tick.Stop()
	held := e.now().Add(e.opts.Lease) // the lease as last extended
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := e.now()
		// The call must not outlast the lease: a store call that hangs
		// would otherwise keep the handler running after another worker
		// reclaimed the task.
		hctx, cancelHB := context.WithTimeout(ctx, held.Sub(now))
		cancelRequested, err := e.st.Heartbeat(hctx, store.HeartbeatParams{
			FenceParams:    store.FenceParams{ID: x.id, Attempt: x.attempt, Now: now},
			LeaseExpiresAt: now.Add(e.opts.Lease),
		})
		cancelHB()
		switch {
		case ctx.Err() != nil:
			return // the run ended during the call
		case errors.Is(err, store.ErrLeaseLost):
			log.Warn("lease lost")
			x.cancel(errLeaseLost)
			return
		case err != nil && !e.now().Before(held):
			// The store was unreachable for a whole lease: another worker
			// may own the task by now, so this one must stop.
			log.Warn("lease expired while the store was unreachable", "err", err)
			x.cancel(errLeaseLost)
			return
		case err != nil:
			log.Warn("heartbeat", "err", err)
		default:
			held = now.Add(e.opts.Lease)
			if cancelRequested {
				x.cancel(errCancelRequested)
			}
		}
	}
}
