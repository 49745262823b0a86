package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
)

// countActiveSQL counts the live tasks through the partial claim index;
// suspended tasks are not queued (store.Suspended).
const countActiveSQL = `SELECT status, count(*),
	count(*) FILTER (WHERE (lease_expires_at IS NULL OR lease_expires_at <= $1)
		AND NOT (status = 'input_required' AND lease_owner = ''))
	FROM mcptasks_tasks WHERE status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > $1)
	GROUP BY status`

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
