package engine

import (
	"context"
	"time"

	"github.com/mcptasks/mcptasks/store"
)

// listenLoop turns the store's change events into wake-ups of this
// process's workers: new tasks are claimed, answers reach the waiting
// handler, and cancels cancel it, without waiting for the next poll. It
// re-subscribes while ctx lives; events are only a fast path.
func (e *Engine) listenLoop(ctx context.Context, l store.Listener) {
	for ctx.Err() == nil {
		events, err := l.Listen(ctx)
		if err != nil {
			e.log.Warn("listen for task events", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(e.opts.ClaimInterval):
			}
			continue
		}
		start := time.Now()
		for ev := range events {
			switch ev.Kind {
			case store.EventCreated:
				e.signal()
			case store.EventAnswered:
				e.notify(ev.TaskID, false)
				e.signal() // the task may have no worker: claim it
			case store.EventCancelled:
				e.notify(ev.TaskID, true)
			case store.EventResync: // events were lost: claim what may be waiting
				e.signal()
			}
		}
		if time.Since(start) < e.opts.ClaimInterval { // a subscription that ends at once: back off
			select {
			case <-ctx.Done():
			case <-time.After(e.opts.ClaimInterval):
			}
		}
	}
}
