package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
)

// Live tasks are counted through two partial indexes, as no index holds
// every live task: tasks_claimable for the working ones and those held
// while they wait for input (a query repeats its WHERE word for word to
// walk it), and tasks_status for every one waiting for input, read from
// the index alone (not expired by created_at + ttl_ms, which the index
// has; SQLite computes expires_at from the row).
const (
	claimableWhere = `(status = 'working' OR (status = 'input_required' AND lease_owner <> ''))`
	// notExpiredWhere keeps the tasks whose TTL has not elapsed at ?1.
	notExpiredWhere = `(expires_at IS NULL OR expires_at > ?1)`
	// waitingWhere keeps the tasks waiting for input at ?1, by the status
	// index (whose WHERE a query must repeat: SQLite does not infer it).
	waitingWhere = `status = 'input_required' AND status <> 'working' AND (ttl_ms <= 0 OR created_at + ttl_ms > ?1)`
	// waitingSQL counts the tasks waiting for input at ?1.
	waitingSQL = `SELECT COUNT(*) FROM tasks WHERE ` + waitingWhere
	// heldWaitingSQL selects, to count them, the tasks waiting for input
	// that a worker held (its lease may have expired since) at ?1.
	heldWaitingSQL = `SELECT COUNT(*) FROM tasks WHERE ` + claimableWhere + ` AND status = 'input_required' AND ` + notExpiredWhere
)

// countActiveSQL counts the live tasks at ?1 by status, and those a worker
// may claim (queued: not leased or lease expired, and not suspended).
const countActiveSQL = `SELECT 'working', COUNT(*), COALESCE(SUM(lease_expires_at IS NULL OR lease_expires_at <= ?1), 0)
	FROM tasks WHERE status = 'working' AND ` + notExpiredWhere + `
	UNION ALL SELECT 'input_required', (` + waitingSQL + `),
	(` + heldWaitingSQL + ` AND (lease_expires_at IS NULL OR lease_expires_at <= ?1))`

// CountActive implements [store.Counter].
func (s *Store) CountActive(ctx context.Context, now time.Time) (store.ActiveCounts, error) {
	var c store.ActiveCounts
	rows, err := s.r.QueryContext(ctx, countActiveSQL, timeValue(now))
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

// countTasksSQL counts the live tasks (see countActiveSQL) and the tasks
// finished since a time, by the finished index, by tool and status. One
// statement, so one snapshot. The parameters are now and the start of the
// window.
const countTasksSQL = `SELECT tool, 'working', COUNT(*) FROM tasks WHERE status = 'working' AND ` + notExpiredWhere + ` GROUP BY 1
	UNION ALL SELECT tool, 'input_required', COUNT(*) FROM tasks WHERE ` + waitingWhere + ` GROUP BY 1
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
// store.QueueCounts.Add does (see countActiveSQL): the working and held
// ones by their lease, then the suspended ones as those waiting for input
// less the held ones.
const queueSQL = `SELECT status, COALESCE(lease_owner <> '' AND lease_expires_at > ?1, 0) AS held, lease_owner = '' AS unowned,
	COUNT(*), MIN(created_at)
	FROM tasks WHERE ` + claimableWhere + ` AND ` + notExpiredWhere + `
	GROUP BY 1, 2, 3
	UNION ALL SELECT 'input_required', 0, 1, (` + waitingSQL + `) - (` + heldWaitingSQL + `), 0`

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
