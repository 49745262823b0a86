package engine

import (
	"context"
	"encoding/json"
	"sync"
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
	mu   sync.Mutex
	rec  *task.Record  // the record to insert; nil once inserted (or failed); guarded by mu
	done chan struct{} // closed once inserted (or failed)
	err  error         // the insert's outcome; read after done
}

// pending reports whether the record is still to be inserted.
func (p *pendingCreate) pending() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// fold inserts the pending record, with apply (if not nil) applied to it
// first, unless it was inserted already; then it reports false and the
// caller makes its write in the store. An error of apply (a rule the
// write breaks) leaves the record pending and unchanged. Once the record
// is inserted, fold returns at once, without the lock.
func (p *pendingCreate) fold(ctx context.Context, st store.Store, apply func(*task.Record) error) (folded bool, err error) {
	if !p.pending() {
		return false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rec == nil {
		return false, nil
	}
	if apply != nil {
		if err := apply(p.rec); err != nil {
			return true, err
		}
	}
	p.err = st.Create(ctx, p.rec)
	p.rec = nil // the store has it: a held handler keeps no copy
	close(p.done)
	return true, p.err
}

// pending reports whether x's task waits to be inserted with its first
// write: its lease is not in the store yet.
func (x *execution) pending() bool {
	return x.create != nil && x.create.pending()
}

// foldingStore is the store that a run of a pending create writes to:
// while the create is pending, the run's first write is applied to the
// record and inserted with it (pendingCreate.fold); after, every write
// goes to the store. Release is not among its writes: a run releases
// only after it has asked, which inserted the record.
type foldingStore struct {
	store.Store
	p *pendingCreate
}

// fold is p.fold for the run's write: the insert is the create's, so the
// end of the context the handler gave its write (a deadline of its
// question's, say) does not stop it.
func (s foldingStore) fold(ctx context.Context, apply func(*task.Record) error) (folded bool, err error) {
	return s.p.fold(context.WithoutCancel(ctx), s.Store, apply)
}

func (s foldingStore) SetStatusMessage(ctx context.Context, p store.StatusMessageParams) error {
	if folded, err := s.fold(ctx, func(r *task.Record) error { _, err := store.ApplyStatusMessage(r, p); return err }); folded {
		return err
	}
	return s.Store.SetStatusMessage(ctx, p)
}

func (s foldingStore) RequestInput(ctx context.Context, p store.RequestInputParams) (answers map[string]json.RawMessage, err error) {
	if folded, err := s.fold(ctx, func(r *task.Record) (err error) { answers, _, err = store.ApplyRequestInput(r, p); return err }); folded {
		return answers, err
	}
	return s.Store.RequestInput(ctx, p)
}

func (s foldingStore) SaveStep(ctx context.Context, p store.StepParams) (stored json.RawMessage, err error) {
	if folded, err := s.fold(ctx, func(r *task.Record) (err error) { stored, _, err = store.ApplyStep(r, p); return err }); folded {
		return stored, err
	}
	return s.Store.SaveStep(ctx, p)
}

func (s foldingStore) Finish(ctx context.Context, p store.FinishParams) error {
	if folded, err := s.fold(ctx, func(r *task.Record) error { return store.ApplyFinish(r, p) }); folded {
		return err
	}
	return s.Store.Finish(ctx, p)
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
	p := &pendingCreate{rec: r, done: make(chan struct{})}
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
	if p.err != nil && !e.stored(ctx, claimCtx, r) {
		return nil, p.err
	}
	return created, nil
}
