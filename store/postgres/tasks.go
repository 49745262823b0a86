package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Create implements [store.Store]. The insert and its created event (unless
// Options.DisableNotify, or the task is not created claimable: see
// store.CreateEvent) are one statement, so one transaction.
//
// With an idempotency key, the unique index on principal and key decides:
// of concurrent inserts with one key, one commits and the others insert
// nothing (after waiting for it). Those then read the task that holds the
// key; if it has expired, they take the key from it and insert again.
func (s *Store) Create(ctx context.Context, r *task.Record) error {
	vals, err := insertValues(r)
	if err != nil {
		return fmt.Errorf("postgres: create task: %w", err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for range maxKeyTries {
		var n int64
		if s.opts.DisableNotify || store.CreateEvent(r) != store.EventCreated { // not for others to claim
			var tag pgconn.CommandTag
			tag, err = s.pool.Exec(ctx, insertRowSQL, vals...)
			n = tag.RowsAffected()
		} else {
			err = s.pool.QueryRow(ctx, insertSQL, append(vals, s.opts.NotifyChannel)...).Scan(&n)
		}
		if err != nil {
			return fmt.Errorf("postgres: create task: %w", err)
		}
		if n == 1 {
			return nil
		}
		if r.IdempotencyKey == "" {
			return store.ErrExists
		}
		old, err := scanRecord(s.pool.QueryRow(ctx, byKeySQL, r.Principal, r.IdempotencyKey))
		switch {
		case errors.Is(err, pgx.ErrNoRows): // the id exists, or the holder was deleted since
			if _, err := s.read(ctx, getSQL, r.ID); err == nil {
				return store.ErrExists
			}
			continue
		case err != nil:
			return fmt.Errorf("postgres: create task: idempotency key: %w", err)
		case store.KeyHeld(old, r.CreatedAt):
			return &store.DuplicateError{Task: old}
		}
		if _, err := s.pool.Exec(ctx, dropKeySQL, old.ID, r.IdempotencyKey); err != nil {
			return fmt.Errorf("postgres: create task: idempotency key: %w", err)
		}
	}
	return fmt.Errorf("postgres: create task: idempotency key %q changed hands %d times while inserting; try again", r.IdempotencyKey, maxKeyTries)
}

// maxKeyTries bounds the inserts of one Create whose idempotency key keeps
// being taken from an expired task and given to another concurrent one.
const maxKeyTries = 4

// Get implements [store.Store]. It is one primary-key read.
func (s *Store) Get(ctx context.Context, id string) (*task.Record, error) {
	return s.read(ctx, getSQL, id)
}

// GetFor implements [store.Store]. It is one primary-key read whose
// principal filter the server applies: another principal's row is never
// sent.
//
// With a read cache ([Store.UseReadCache]) it answers from the cache when
// it can.
func (s *Store) GetFor(ctx context.Context, id, principal string) (*task.Record, error) {
	r, gen := s.cache.get(id, principal)
	if r != nil {
		return r, nil
	}
	r, err := s.read(ctx, getForSQL, id, principal)
	if err == nil {
		s.cache.fill(r, gen)
	}
	return r, err
}

// read runs the query q of one task.
func (s *Store) read(ctx context.Context, q string, args ...any) (*task.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	r, err := scanRecord(s.pool.QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get task: %w", err)
	}
	return r, nil
}

// inTx runs fn in a transaction and commits if fn returns nil. Errors of
// the database are wrapped with op; fn's own errors are returned as they
// are.
func (s *Store) inTx(ctx context.Context, op string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: %s: begin: %w", op, err)
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: %s: commit: %w", op, err)
	}
	return nil
}

// modify locks the task with the id in a transaction and runs fn on it; if
// fn reports a change, the task is written back, and the event fn names
// (if any) sent, before the commit. It returns the task as fn left it, or
// ErrNotFound.
func (s *Store) modify(ctx context.Context, op, id string, fn func(r *task.Record) (changed bool, ev store.EventKind, err error)) (*task.Record, error) {
	var out *task.Record
	err := s.inTx(ctx, op, func(ctx context.Context, tx pgx.Tx) error {
		r, err := scanRecord(tx.QueryRow(ctx, lockSQL, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("postgres: %s: load: %w", op, err)
		}
		changed, ev, err := fn(r)
		if err != nil {
			return err
		}
		if changed {
			if err := update(ctx, tx, r); err != nil {
				return fmt.Errorf("postgres: %s: %w", op, err)
			}
			if ev != "" {
				if err := s.notify(ctx, tx, ev, id); err != nil {
					return fmt.Errorf("postgres: %s: %w", op, err)
				}
			}
		}
		out = r
		return nil
	})
	s.cache.drop(id) // after the commit (or its failure): a later GetFor reads it again
	return out, err
}

// fenced is modify for worker writes: a missing task is a lost lease. A
// write that changed the task sends the event ev, if ev is not "".
func (s *Store) fenced(ctx context.Context, op, id string, ev store.EventKind, fn func(r *task.Record) (changed bool, err error)) error {
	_, err := s.modify(ctx, op, id, func(r *task.Record) (bool, store.EventKind, error) {
		changed, err := fn(r)
		return changed, ev, err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.ErrLeaseLost
	}
	return err
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

// Answer implements [store.Store]. When it accepts keys it sends an
// answered event.
func (s *Store) Answer(ctx context.Context, p store.AnswerParams) (accepted []string, err error) {
	_, err = s.modify(ctx, "answer", p.ID, func(r *task.Record) (bool, store.EventKind, error) {
		accepted, err = store.ApplyAnswer(r, p)
		return len(accepted) > 0, store.EventAnswered, err
	})
	return accepted, err
}

// RequestCancel implements [store.Store]. When it changes a held task
// (sets CancelRequested, or cancels it at once) it sends a cancelled
// event, so that the worker holding it stops at once; when it cancels a
// task nobody holds, an updated event.
func (s *Store) RequestCancel(ctx context.Context, p store.CancelParams) (*task.Record, error) {
	return s.modify(ctx, "request cancel", p.ID, func(r *task.Record) (bool, store.EventKind, error) {
		held := r.LeaseOwner != ""
		changed, err := store.ApplyCancel(r, p)
		var ev store.EventKind
		switch {
		case changed && (held || !r.Status.Terminal() && r.CancelRequested):
			ev = store.EventCancelled
		case changed:
			ev = store.EventUpdated
		}
		return changed, ev, err
	})
}
