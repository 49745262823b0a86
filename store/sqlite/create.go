package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// maxGroup bounds how many creates share one transaction.
const maxGroup = 256

// errClosed is returned by Create on a closed store.
var errClosed = errors.New("sqlite: store is closed")

// createReq is one Create waiting for its group's commit.
type createReq struct {
	vals []any
	done chan error
}

// Create implements [store.Store]. Creates are group-committed: concurrent
// calls share one transaction and so one fsync, and each returns only after
// the commit that made its task durable.
func (s *Store) Create(ctx context.Context, r *task.Record) error {
	vals, err := recordValues(r)
	if err != nil {
		return fmt.Errorf("sqlite: create task: %w", err)
	}
	req := createReq{vals: vals, done: make(chan error, 1)}
	select {
	case s.creates <- req:
	case <-s.stop:
		return errClosed
	case <-ctx.Done():
		return fmt.Errorf("sqlite: create task: %w", ctx.Err())
	}
	// Once queued, the outcome is waited for even if ctx ends: returning
	// early would leave the caller unsure whether the task exists.
	return <-req.done
}

// commitLoop commits queued creates in groups until the store closes.
func (s *Store) commitLoop() {
	defer close(s.stopped)
	for {
		var group []createReq
		select {
		case <-s.stop:
			return
		case req := <-s.creates:
			group = append(group, req)
		}
	more:
		for len(group) < maxGroup {
			select {
			case req := <-s.creates:
				group = append(group, req)
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

// commitGroup inserts the group's tasks in one transaction. A task whose
// insert fails fails alone; a failed commit fails them all.
func (s *Store) commitGroup(group []createReq) {
	errs := make([]error, len(group))
	err := s.inTx(context.Background(), "create task", func(tx *sql.Tx) error {
		for i, req := range group {
			res, err := tx.Exec(insertSQL, req.vals...)
			if err != nil {
				errs[i] = fmt.Errorf("sqlite: create task: %w", err)
				continue
			}
			if n, err := res.RowsAffected(); err != nil {
				errs[i] = fmt.Errorf("sqlite: create task: %w", err)
			} else if n == 0 {
				errs[i] = store.ErrExists
			}
		}
		return nil
	})
	for i, req := range group {
		if err != nil {
			errs[i] = err
		}
		req.done <- errs[i]
	}
}
