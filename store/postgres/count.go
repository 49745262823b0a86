package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
)

// Live tasks are counted through two partial indexes, as no index holds
// every live task: mcptasks_tasks_claimable for the working ones and those
// held while they wait for input, and mcptasks_tasks_status for every one
// waiting for input (from the index alone: it includes expires_at).
const (
	claimableWhere = `(status = 'working' OR (status = 'input_required' AND lease_owner <> ''))`
	// notExpiredWhere keeps the tasks whose TTL has not elapsed at $1.
	notExpiredWhere = `(expires_at IS NULL OR expires_at > $1)`
	// waitingSQL counts the tasks waiting for input at $1, by the status
	// index, whose WHERE it repeats.
	waitingSQL = `SELECT count(*) FROM mcptasks_tasks WHERE status = 'input_required' AND status <> 'working' AND ` + notExpiredWhere
	// heldWaitingSQL selects, to count them, the tasks waiting for input
	// that a worker held (its lease may have expired since) at $1.
	heldWaitingSQL = `SELECT count(*) FROM mcptasks_tasks WHERE ` + claimableWhere + ` AND status = 'input_required' AND ` + notExpiredWhere
)

// countActiveSQL counts the live tasks at $1 by status, and those a worker
// may claim (queued: not leased or lease expired, and not suspended).
const countActiveSQL = `SELECT 'working', count(*), count(*) FILTER (WHERE lease_expires_at IS NULL OR lease_expires_at <= $1)
	FROM mcptasks_tasks WHERE status = 'working' AND ` + notExpiredWhere + `
	UNION ALL SELECT 'input_required', (` + waitingSQL + `),
	(` + heldWaitingSQL + ` AND (lease_expires_at IS NULL OR lease_expires_at <= $1))`

// CountActive implements [store.Counter].
func (s *Store) CountActive(ctx context.Context, now time.Time) (store.ActiveCounts, error) {
	var c store.ActiveCounts
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, countActiveSQL, timeValue(now))
	if err != nil {
		return c, fmt.Errorf("postgres: count tasks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n, queued int
		if err := rows.Scan(&status, &n, &queued); err != nil {
			return c, fmt.Errorf("postgres: count tasks: %w", err)
		}
		sqlstore.AddCount(&c, status, n, queued)
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("postgres: count tasks: %w", err)
	}
	return c, nil
}
