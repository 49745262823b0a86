package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
)

// countActiveSQL counts the live tasks through the partial claim index;
// suspended tasks are not queued (store.Suspended).
const countActiveSQL = `SELECT status, COUNT(*),
	SUM(CASE WHEN (lease_expires_at IS NULL OR lease_expires_at <= ?)
		AND NOT (status = 'input_required' AND lease_owner = '') THEN 1 ELSE 0 END)
	FROM tasks WHERE status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > ?)
	GROUP BY status`

// CountActive implements [store.Counter].
func (s *Store) CountActive(ctx context.Context, now time.Time) (store.ActiveCounts, error) {
	var c store.ActiveCounts
	rows, err := s.r.QueryContext(ctx, countActiveSQL, timeValue(now), timeValue(now))
	if err != nil {
		return c, fmt.Errorf("sqlite: count tasks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n, queued int
		if err := rows.Scan(&status, &n, &queued); err != nil {
			return c, fmt.Errorf("sqlite: count tasks: %w", err)
		}
		sqlstore.AddCount(&c, status, n, queued)
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("sqlite: count tasks: %w", err)
	}
	return c, nil
}

// countTasksSQL counts the live tasks, by the claim index, and the tasks
// finished since a time, by the finished index, by tool and status. One
// statement, so one snapshot. The parameters are now and the start of the
// window.
const countTasksSQL = `SELECT tool, status, COUNT(*) FROM tasks
	WHERE status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > ?1) GROUP BY 1, 2
	UNION ALL SELECT tool, status, COUNT(*) FROM tasks
	WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at >= ?2 GROUP BY 1, 2`

// CountTasks implements [store.Lister].
func (s *Store) CountTasks(ctx context.Context, p store.CountParams) (store.TaskCounts, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, countTasksSQL, timeValue(p.Now), timeValue(p.FinishedSince))
	if err != nil {
		return nil, fmt.Errorf("sqlite: count tasks: %w", err)
	}
	defer rows.Close()
	c, err := sqlstore.ScanTaskCounts(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count tasks: %w", err)
	}
	return c, nil
}

// throughputSQL counts the tasks created and finished in each minute from
// the minute of the first parameter to the second, one index range count
// per minute (creation index, finished index): a GROUP BY of the minute
// would sort every task of the window.
const throughputSQL = `WITH RECURSIVE m(t) AS (SELECT ?1 UNION ALL SELECT t + 60000 FROM m WHERE t + 60000 <= ?2)
	SELECT t / 60000,
		(SELECT COUNT(*) FROM tasks WHERE created_at >= t AND created_at < t + 60000),
		(SELECT COUNT(*) FROM tasks WHERE status IN ('completed', 'failed', 'cancelled')
			AND updated_at >= t AND updated_at < t + 60000)
	FROM m`

// Throughput implements [store.Lister].
func (s *Store) Throughput(ctx context.Context, p store.ThroughputParams) ([]store.MinuteCount, error) {
	ms, err := store.NewMinutes(p)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, throughputSQL, ms[0].Minute.UnixMilli(), ms[len(ms)-1].Minute.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("sqlite: throughput: %w", err)
	}
	defer rows.Close()
	if err := sqlstore.ScanMinutes(rows, ms); err != nil {
		return nil, fmt.Errorf("sqlite: throughput: %w", err)
	}
	return ms, nil
}

// queueSQL counts the live tasks by what they wait for, as
// store.QueueCounts.Add does, through the claim index.
const queueSQL = `SELECT status, COALESCE(lease_owner <> '' AND lease_expires_at > ?1, 0) AS held, lease_owner = '' AS unowned,
	COUNT(*), MIN(created_at)
	FROM tasks WHERE status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > ?1)
	GROUP BY 1, 2, 3`

// Queue implements [store.Lister].
func (s *Store) Queue(ctx context.Context, now time.Time) (*store.QueueCounts, error) {
	rows, err := s.r.QueryContext(ctx, queueSQL, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("sqlite: queue: %w", err)
	}
	defer rows.Close()
	q, err := sqlstore.ScanQueue(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: queue: %w", err)
	}
	return q, nil
}
