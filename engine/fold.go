package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// foldWindow is how long a create whose handler already runs waits for
// the handler's first write, to insert the task with it (see
// pendingCreate). Handlers that write at once (a status, a question) do so
// within microseconds; the others cost their creates this much latency.
const foldWindow = time.Millisecond

// pendingCreate is a task whose create waits for its handler's first
// write: [Engine.Create] starts the handler of a task it claims before
// the task is stored, and the first write of the handler (its first
// status, its question, a step, its end) is applied to the record and
// inserted with it, one store write instead of two. If the handler writes
// nothing within foldWindow, the create inserts the record as it is, and
// every write of the handler goes to the store as usual.
type pendingCreate struct {
	mu      sync.Mutex
	rec     *task.Record  // the record to insert; guarded by mu until done
	flushed atomic.Bool   // the record was inserted, or its insert failed
	done    chan struct{} // closed once flushed
	err     error         // the insert's outcome; read after done
}

func newPendingCreate(r *task.Record) *pendingCreate {
	return &pendingCreate{rec: r, done: make(chan struct{})}
}

// fold inserts the pending record, with apply (if not nil) applied to it
// first, unless it was inserted already; then it reports false and the
// caller makes its write in the store. An error of apply (a rule the
// write breaks) leaves the record pending and unchanged.
func (p *pendingCreate) fold(ctx context.Context, st store.Store, apply func(*task.Record) error) (folded bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.flushed.Load() {
		return false, nil
	}
	if apply != nil {
		if err := apply(p.rec); err != nil {
			return true, err
		}
	}
	p.err = st.Create(ctx, p.rec)
	p.flushed.Store(true)
	close(p.done)
	return true, p.err
}

// pending reports whether x's task waits to be inserted with its first
// write: its lease is not in the store yet.
func (x *execution) pending() bool {
	return x.create != nil && !x.create.flushed.Load()
}

// write makes a store write of x's task: folded into the task's create
// while that is pending (apply changes the record to insert; see
// pendingCreate), else by call.
func (e *Engine) write(ctx context.Context, x *execution, apply func(*task.Record) error, call func(context.Context) error) error {
	if x.create != nil {
		if folded, err := x.create.fold(ctx, e.st, apply); folded {
			return err
		}
	}
	return call(ctx)
}

// createFolded creates r, claimed by this engine in claimCtx (done is
// claimForCreate's), as pendingCreate describes: its handler starts at
// once, and r is inserted with the handler's first write, or as it is
// after foldWindow. It returns once r is durable, as it was before the
// handler's write, so that what Create returns does not depend on how
// soon the handler wrote. If the insert fails, the task does not exist,
// and the handler is fenced off at its next write.
func (e *Engine) createFolded(ctx, claimCtx context.Context, done func(started bool), r *task.Record, now time.Time) (*task.Record, error) {
	created := r.Clone() // what Create returns: the task as created, whatever the first write did
	p := newPendingCreate(r)
	e.begin(claimCtx, store.Claimed{Record: r.Clone()}, now, p)
	defer done(true) // Shutdown waits for the insert; the slot is the handler's
	t := time.NewTimer(foldWindow)
	select {
	case <-p.done:
	case <-t.C:
		_, _ = p.fold(ctx, e.st, nil) // its outcome is p.err
	}
	t.Stop()
	<-p.done // inserted by the handler's write, if it came first
	if p.err != nil {
		return nil, p.err
	}
	return created, nil
}
