// Package memory is an in-process Store: fast, and gone when the process
// exits. Use it for tests and for servers whose tasks need not survive.
package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Store is an in-memory [store.Store]. The zero value is not usable; call New.
type Store struct {
	mu    sync.Mutex
	tasks map[string]*task.Record
	keys  map[idemKey]string // task id by principal and idempotency key
	// events announces each change a poll could see (see Listen).
	events store.Broadcast
}

// idemKey is a principal's idempotency key.
type idemKey struct{ principal, key string }

var (
	_ store.Store    = (*Store)(nil)
	_ store.Listener = (*Store)(nil)
)

// Listen implements [store.Listener]: the changes made through s, each
// announced after it is made.
func (s *Store) Listen(ctx context.Context) (<-chan store.Event, error) {
	return s.events.Listen(ctx)
}

// New returns an empty Store.
func New() *Store {
	return &Store{tasks: map[string]*task.Record{}, keys: map[idemKey]string{}}
}

// Create implements [store.Store].
func (s *Store) Create(_ context.Context, r *task.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := idemKey{r.Principal, r.IdempotencyKey}
	if old := s.tasks[s.keys[k]]; r.IdempotencyKey != "" && old != nil {
		if store.KeyHeld(old, r.CreatedAt) {
			return &store.DuplicateError{Task: old.Clone()}
		}
		old.IdempotencyKey = ""
	}
	if _, ok := s.tasks[r.ID]; ok {
		return store.ErrExists
	}
	s.tasks[r.ID] = r.Clone()
	if r.IdempotencyKey != "" {
		s.keys[k] = r.ID
	}
	s.events.Publish(store.Event{Kind: store.CreateEvent(r), TaskID: r.ID})
	return nil
}

// Get implements [store.Store].
func (s *Store) Get(_ context.Context, id string) (*task.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tasks[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return r.Clone(), nil
}

// GetFor implements [store.Store]. Another principal's task is not
// copied: it costs what an unknown id costs.
func (s *Store) GetFor(_ context.Context, id, principal string) (*task.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tasks[id]
	if !ok || r.Principal != principal {
		return nil, store.ErrNotFound
	}
	return r.Clone(), nil
}

// Claim implements [store.Store].
func (s *Store) Claim(_ context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cands []*task.Record
	for _, r := range s.tasks {
		if store.Claimable(r, p) {
			cands = append(cands, r)
		}
	}
	slices.SortFunc(cands, func(a, b *task.Record) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	if p.Limit > 0 && len(cands) > p.Limit {
		cands = cands[:p.Limit]
	}
	out := make([]store.Claimed, 0, len(cands))
	for _, r := range cands {
		c := store.ApplyClaim(r, p)
		c.Record = c.Record.Clone()
		out = append(out, c)
	}
	return out, nil
}

// modify runs fn on a copy of the task with the id and keeps the copy if fn
// succeeds; then it announces the change ev, if ev is not "".
func (s *Store) modify(id string, ev store.EventKind, fn func(r *task.Record) error) (*task.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tasks[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	c := r.Clone()
	if err := fn(c); err != nil {
		return nil, err
	}
	s.tasks[id] = c
	if ev != "" {
		s.events.Publish(store.Event{Kind: ev, TaskID: id})
	}
	return c.Clone(), nil
}

// fenced is modify for worker writes: a missing task is a lost lease.
func (s *Store) fenced(id string, ev store.EventKind, fn func(r *task.Record) error) error {
	_, err := s.modify(id, ev, fn)
	if err == store.ErrNotFound {
		return store.ErrLeaseLost
	}
	return err
}

// HeartbeatMany implements [store.Store].
func (s *Store) HeartbeatMany(_ context.Context, p store.HeartbeatManyParams) ([]store.LeaseState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.LeaseState, len(p.Leases))
	for i, l := range p.Leases {
		// In place: the Apply functions change nothing on error, and
		// readers get clones.
		out[i] = store.ApplyHeartbeatState(s.tasks[l.ID], l, p)
	}
	return out, nil
}

// Release implements [store.Store].
func (s *Store) Release(_ context.Context, p store.FenceParams) error {
	return s.fenced(p.ID, store.EventUpdated, func(r *task.Record) error { return store.ApplyRelease(r, p) })
}

// SetStatusMessage implements [store.Store].
func (s *Store) SetStatusMessage(_ context.Context, p store.StatusMessageParams) error {
	return s.fenced(p.ID, store.EventUpdated, func(r *task.Record) error {
		_, err := store.ApplyStatusMessage(r, p)
		return err
	})
}

// RequestInput implements [store.Store].
func (s *Store) RequestInput(_ context.Context, p store.RequestInputParams) (answers map[string]json.RawMessage, err error) {
	err = s.fenced(p.ID, store.EventUpdated, func(r *task.Record) (err error) {
		answers, _, err = store.ApplyRequestInput(r, p)
		return err
	})
	return answers, err
}

// SaveStep implements [store.Store].
func (s *Store) SaveStep(_ context.Context, p store.StepParams) (stored json.RawMessage, err error) {
	err = s.fenced(p.ID, "", func(r *task.Record) (err error) {
		stored, _, err = store.ApplyStep(r, p)
		stored = slices.Clone(stored) // the record keeps its own
		return err
	})
	return stored, err
}

// Finish implements [store.Store].
func (s *Store) Finish(_ context.Context, p store.FinishParams) error {
	return s.fenced(p.ID, store.EventUpdated, func(r *task.Record) error { return store.ApplyFinish(r, p) })
}

// Answer implements [store.Store].
func (s *Store) Answer(_ context.Context, p store.AnswerParams) (accepted []string, err error) {
	_, err = s.modify(p.ID, store.EventAnswered, func(r *task.Record) (err error) {
		accepted, err = store.ApplyAnswer(r, p)
		return err
	})
	return accepted, err
}

// RequestCancel implements [store.Store].
func (s *Store) RequestCancel(_ context.Context, p store.CancelParams) (*task.Record, error) {
	return s.modify(p.ID, store.EventCancelled, func(r *task.Record) error {
		_, err := store.ApplyCancel(r, p)
		return err
	})
}

// DeleteExpired implements [store.Store].
func (s *Store) DeleteExpired(_ context.Context, now time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, r := range s.tasks {
		if limit > 0 && n >= limit {
			break
		}
		if r.Expired(now) {
			delete(s.tasks, id)
			if k := (idemKey{r.Principal, r.IdempotencyKey}); r.IdempotencyKey != "" && s.keys[k] == id {
				delete(s.keys, k)
			}
			n++
		}
	}
	return n, nil
}

// Close implements [store.Store]. It is a no-op.
func (s *Store) Close() error { return nil }

// CountActive implements [store.Counter].
func (s *Store) CountActive(_ context.Context, now time.Time) (store.ActiveCounts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c store.ActiveCounts
	for _, r := range s.tasks {
		if r.Status.Terminal() || r.Expired(now) {
			continue
		}
		if r.Status == task.InputRequired {
			c.InputRequired++
		} else {
			c.Working++
		}
		if store.Claimable(r, store.ClaimParams{Now: now}) {
			c.Queued++
		}
	}
	return c, nil
}

var _ store.Lister = (*Store)(nil)

// List implements [store.Lister]. It sorts every task at each call: the
// memory store is for tests and small servers. The tasks it examines are
// those in the page's range, whatever their filters.
func (s *Store) List(_ context.Context, p store.ListParams) (*store.ListPage, error) {
	q, err := p.Query()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	var rs []*task.Record
	for _, r := range s.tasks {
		if q.InRange(r) {
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b *task.Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	page := &store.ListPage{}
	for i, r := range rs {
		if i == q.ScanLimit {
			last := rs[i-1]
			page.Next = q.Cursor(last.CreatedAt, last.ID)
			break
		}
		if !q.Matches(r) {
			continue
		}
		if len(page.Tasks) == q.Limit {
			last := page.Tasks[len(page.Tasks)-1]
			page.Next = q.Cursor(last.CreatedAt, last.ID)
			break
		}
		page.Tasks = append(page.Tasks, r.Clone())
	}
	s.mu.Unlock()
	return page, nil
}

// CountTasks implements [store.Lister].
func (s *Store) CountTasks(_ context.Context, p store.CountParams) (store.TaskCounts, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := store.TaskCounts{}
	for _, r := range s.tasks {
		if p.Counted(r) {
			c.Add(r.Tool, r.Status, 1)
		}
	}
	return c, nil
}

// Throughput implements [store.Lister].
func (s *Store) Throughput(_ context.Context, p store.ThroughputParams) ([]store.MinuteCount, error) {
	ms, err := store.NewMinutes(p)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.tasks {
		ms.Add(r.CreatedAt, 1, 0)
		if r.Status.Terminal() {
			ms.Add(r.UpdatedAt, 0, 1)
		}
	}
	return ms, nil
}

// Queue implements [store.Lister].
func (s *Store) Queue(_ context.Context, now time.Time) (*store.QueueCounts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &store.QueueCounts{}
	for _, r := range s.tasks {
		q.Add(r, now)
	}
	return q, nil
}
