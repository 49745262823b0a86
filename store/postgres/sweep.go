package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// deleteExpiredSQL deletes up to a limit (NULL: no limit) of the tasks whose
// TTL has elapsed, earliest deadline first, found by the
// mcptasks_tasks_expires_at index. Rows that another transaction holds are
// skipped, not waited for: the next sweep takes them, and sweepers on
// several replicas split the work instead of queueing behind each other.
//
// The ids are collected into an array, so that the delete reads them by
// primary key; with IN (subquery) the planner may hash-join the whole table.
const deleteExpiredSQL = `DELETE FROM mcptasks_tasks WHERE id = ANY(ARRAY(
	SELECT id FROM mcptasks_tasks
	WHERE expires_at <= $1
	ORDER BY expires_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED))`

// sweepLeaderSQL takes the transaction-scoped advisory lock that makes one
// replica at a time the sweeper of a schema; the others skip their turn.
const sweepLeaderSQL = `SELECT pg_try_advisory_xact_lock(hashtextextended('mcptasks_sweep:' || current_schema(), 0))`

// DeleteExpired implements [store.Store]. A limit of zero or less means no
// limit. Sweeps of one schema run one at a time: while another replica's
// sweep is running, DeleteExpired deletes nothing and returns 0, and that
// replica's next batch takes the tasks. It also skips the expired tasks that
// are being written at that moment.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = int64(limit)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var leader bool
		if err := tx.QueryRow(ctx, sweepLeaderSQL).Scan(&leader); err != nil || !leader {
			return err
		}
		tag, err := tx.Exec(ctx, deleteExpiredSQL, timeValue(now), lim)
		n = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: delete expired: %w", err)
	}
	return n, nil
}
