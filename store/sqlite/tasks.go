package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Get implements [store.Store]. It is a primary-key read on the read pool.
func (s *Store) Get(ctx context.Context, id string) (*task.Record, error) {
	return s.read(ctx, id, nil)
}

// GetFor implements [store.Store]: Get with the principal in the cache
// lookup and in the query, so that another principal's task, cached or
// not, is read like an unknown id.
func (s *Store) GetFor(ctx context.Context, id, principal string) (*task.Record, error) {
	return s.read(ctx, id, &principal)
}

// read returns the task with the id, of principal unless it is nil, from
// the cache or the read pool.
func (s *Store) read(ctx context.Context, id string, principal *string) (*task.Record, error) {
	r, t := s.cache.get(id, principal)
	if r != nil {
		return r, nil
	}
	var row *sql.Row
	if principal == nil {
		row = s.get.QueryRowContext(ctx, id)
	} else {
		row = s.getFor.QueryRowContext(ctx, id, *principal)
	}
	r, err := scanRecord(row)
	s.cache.fill(t, id, r) // r is nil if err is not
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get task: %w", err)
	}
	return r, nil
}

// modify loads the task with the id in a write transaction and runs fn on
// it; if fn reports a change, the task is written back before the commit.
// It returns the task as fn left it, or ErrNotFound. After a commit that
// changed the task, it announces the change ev, if ev is not "".
func (s *Store) modify(ctx context.Context, op, id string, ev store.EventKind, fn func(r *task.Record) (changed bool, err error)) (*task.Record, error) {
	var changed bool
	var out *task.Record
	err := s.inTx(ctx, op, func(tx *wtx) error {
		s.cache.drop(id)
		r, err := tx.get(id)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return beforeChange(fmt.Errorf("sqlite: %s: load: %w", op, err))
		}
		c, err := fn(r)
		if err != nil {
			return err
		}
		if c {
			if err := update(tx, r); err != nil {
				return fmt.Errorf("sqlite: %s: %w", op, err)
			}
		}
		out, changed = r, c
		return nil
	})
	if err == nil && changed && ev != "" {
		s.events.Publish(store.Event{Kind: ev, TaskID: id})
	}
	return out, err
}

// fenced is modify for worker writes: a missing task is a lost lease.
func (s *Store) fenced(ctx context.Context, op, id string, ev store.EventKind, fn func(r *task.Record) (changed bool, err error)) error {
	_, err := s.modify(ctx, op, id, ev, fn)
	if errors.Is(err, store.ErrNotFound) {
		return store.ErrLeaseLost
	}
	return err
}

// HeartbeatMany implements [store.Store]: one write transaction (one
// commit, shared with other writes by the group commit) for every lease,
// with one narrow update per lease that writes only its expiry.
func (s *Store) HeartbeatMany(ctx context.Context, p store.HeartbeatManyParams) ([]store.LeaseState, error) {
	out := make([]store.LeaseState, len(p.Leases))
	err := s.inTx(ctx, "heartbeat", func(tx *wtx) error {
		st := tx.tx.StmtContext(tx.ctx, tx.ws.heartbeat)
		for i, l := range p.Leases {
			s.cache.drop(l.ID)
			err := st.QueryRowContext(tx.ctx, l.ID, l.Attempt, p.LeaseExpiresAt.UnixMilli(), p.Now.UnixMilli()).
				Scan(&out[i].CancelRequested, &out[i].Answered)
			if errors.Is(err, sql.ErrNoRows) {
				out[i] = store.LeaseState{Lost: true}
				continue
			}
			if err != nil {
				return fmt.Errorf("sqlite: heartbeat: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Release implements [store.Store].
func (s *Store) Release(ctx context.Context, p store.FenceParams) error {
	return s.fenced(ctx, "release", p.ID, store.EventUpdated, func(r *task.Record) (bool, error) {
		return true, store.ApplyRelease(r, p)
	})
}

// SetStatusMessage implements [store.Store].
func (s *Store) SetStatusMessage(ctx context.Context, p store.StatusMessageParams) error {
	return s.fenced(ctx, "set status message", p.ID, store.EventUpdated, func(r *task.Record) (bool, error) {
		return store.ApplyStatusMessage(r, p)
	})
}

// RequestInput implements [store.Store].
func (s *Store) RequestInput(ctx context.Context, p store.RequestInputParams) (answers map[string]json.RawMessage, err error) {
	err = s.fenced(ctx, "request input", p.ID, store.EventUpdated, func(r *task.Record) (changed bool, err error) {
		answers, changed, err = store.ApplyRequestInput(r, p)
		return changed, err
	})
	return answers, err
}

// SaveStep implements [store.Store].
func (s *Store) SaveStep(ctx context.Context, p store.StepParams) (stored json.RawMessage, err error) {
	err = s.fenced(ctx, "save step", p.ID, "", func(r *task.Record) (changed bool, err error) {
		stored, changed, err = store.ApplyStep(r, p)
		return changed, err
	})
	return stored, err
}

// Finish implements [store.Store].
func (s *Store) Finish(ctx context.Context, p store.FinishParams) error {
	return s.fenced(ctx, "finish", p.ID, store.EventUpdated, func(r *task.Record) (bool, error) {
		return true, store.ApplyFinish(r, p)
	})
}

// Answer implements [store.Store].
func (s *Store) Answer(ctx context.Context, p store.AnswerParams) (accepted []string, err error) {
	_, err = s.modify(ctx, "answer", p.ID, store.EventAnswered, func(r *task.Record) (bool, error) {
		accepted, err = store.ApplyAnswer(r, p)
		return len(accepted) > 0, err
	})
	return accepted, err
}

// RequestCancel implements [store.Store].
func (s *Store) RequestCancel(ctx context.Context, p store.CancelParams) (*task.Record, error) {
	return s.modify(ctx, "request cancel", p.ID, store.EventCancelled, func(r *task.Record) (bool, error) {
		return store.ApplyCancel(r, p)
	})
}
