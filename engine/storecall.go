package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/store"
)

// Bounds of the backoff between retries of a handler's store call.
const (
	minStoreBackoff = 10 * time.Millisecond
	maxStoreBackoff = time.Second
)

// storeCall runs call, a write of the run's task that is safe to repeat,
// until it succeeds. A store error never reaches the handler as such: the
// call is retried with backoff, for as long as the run holds its lease.
// When the store fences the run off (ErrLeaseLost), the run's ctx is
// cancelled with errLeaseLost and the task is left to the retry policy of
// whoever claims it next; when ctx ends (a lease that ran out while the
// store was unreachable, a cancel, a shutdown), its cause is returned.
// Either way the error reports a stopped run, which the engine, not the
// handler, turns into the task's fate.
func (r *Run) storeCall(ctx context.Context, op string, call func(ctx context.Context) error) error {
	backoff := minStoreBackoff
	for {
		err := call(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrLeaseLost):
			r.x.cancel(errLeaseLost)
			return fmt.Errorf("engine: %s: %w", op, err)
		case ctx.Err() != nil:
			return context.Cause(ctx)
		}
		r.e.log.Warn("store call failed; retrying", "op", op, "task", r.ID(), "attempt", r.Attempt(), "retry_in", backoff, "err", err)
		if !backOff(ctx, &backoff) {
			return context.Cause(ctx)
		}
	}
}

// backOff waits *d, or until ctx is done, and reports whether it waited
// *d; the next wait is twice as long, up to maxStoreBackoff.
func backOff(ctx context.Context, d *time.Duration) bool {
	t := time.NewTimer(*d)
	defer t.Stop()
	*d = min(2**d, maxStoreBackoff)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
