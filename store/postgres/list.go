package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/task"
)

var _ store.Lister = (*Store)(nil)

// dialect is Postgres's, for the list queries of package sqlstore.
var dialect = sqlstore.Dialect{
	Table: "mcptasks_tasks",
	RowID: "id",
	// By primary key, whatever number of rows the planner expects: IN
	// (subquery) may hash the whole table.
	In:        func(col, sub string) string { return col + " = ANY(ARRAY(" + sub + "))" },
	Param:     func(n int) string { return fmt.Sprintf("$%d", n) },
	Lower:     func(e string) string { return "lower(" + e + ` COLLATE "C")` }, // ASCII only
	HasPrefix: func(e, p string) string { return "starts_with(" + e + ", " + p + ")" },
	Contains:  func(e, p string) string { return "strpos(" + e + ", " + p + ") > 0" },
	Time:      timeValue,
	NotExpired: func(p string) (string, []string) {
		return "(expires_at IS NULL OR expires_at > " + p + ")", []string{"expires_at"}
	},
}

// List implements [store.Lister]: see [sqlstore.Dialect.List] for the
// queries.
func (s *Store) List(ctx context.Context, p store.ListParams) (*store.ListPage, error) {
	q, err := p.Query()
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	sq := dialect.List(q, columns)
	rows, err := s.pool.Query(ctx, sq.Page, sq.PageArgs...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tasks: %w", err)
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*task.Record, error) { return scanRecord(row) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list tasks: %w", err)
	}
	page, err := sqlstore.Page(q, tasks, func() ([]*task.Record, error) {
		rows, err := s.pool.Query(ctx, sq.Boundary, sq.BoundaryArgs...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*task.Record, error) {
			r := &task.Record{}
			return r, row.Scan(&r.CreatedAt, &r.ID)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list tasks: %w", err)
	}
	return page, nil
}

// countTasksSQL counts the live tasks (see countActiveSQL) and the tasks
// finished since a time, by the finished index, by tool and status. One
// statement, so one snapshot. The parameters are now and the start of the
// window.
const countTasksSQL = `SELECT tool, 'working', count(*) FROM mcptasks_tasks WHERE status = 'working' AND ` + notExpiredWhere + ` GROUP BY 1
	UNION ALL SELECT tool, 'input_required', count(*) FROM mcptasks_tasks
	WHERE status = 'input_required' AND status <> 'working' AND ` + notExpiredWhere + ` GROUP BY 1
	UNION ALL SELECT tool, status, count(*) FROM mcptasks_tasks
	WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at >= $2 GROUP BY 1, 2`

// CountTasks implements [store.Lister].
func (s *Store) CountTasks(ctx context.Context, p store.CountParams) (store.TaskCounts, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var c store.TaskCounts
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The planner likes a parallel plan for the union, which costs
		// more to start (tens of ms, hundreds on a busy machine) than the
		// count itself.
		if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, countTasksSQL, timeValue(p.Now), timeValue(p.FinishedSince))
		if err != nil {
			return err
		}
		defer rows.Close()
		c, err = sqlstore.ScanTaskCounts(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: count tasks: %w", err)
	}
	return c, nil
}

// throughputSQL counts the tasks created and finished in each minute that
// starts at one of the times of the parameter, one index range count per
// minute (creation index, finished index): a GROUP BY of the minute would
// hash every task of the window. The minutes come as an array, not from
// generate_series, whose guess of 1,000 rows makes the plan look costly
// enough to be JIT-compiled, which takes longer than the query.
const throughputSQL = `SELECT floor(extract(epoch FROM m) / 60)::bigint,
		(SELECT count(*) FROM mcptasks_tasks WHERE created_at >= m AND created_at < m + interval '1 minute'),
		(SELECT count(*) FROM mcptasks_tasks WHERE status IN ('completed', 'failed', 'cancelled')
			AND updated_at >= m AND updated_at < m + interval '1 minute')
	FROM unnest($1::timestamptz[]) AS m`

// Throughput implements [store.Lister].
func (s *Store) Throughput(ctx context.Context, p store.ThroughputParams) ([]store.MinuteCount, error) {
	ms, err := store.NewMinutes(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	minutes := make([]time.Time, len(ms))
	for i, m := range ms {
		minutes[i] = m.Minute
	}
	rows, err := s.pool.Query(ctx, throughputSQL, minutes)
	if err != nil {
		return nil, fmt.Errorf("postgres: throughput: %w", err)
	}
	defer rows.Close()
	if err := sqlstore.ScanMinutes(rows, ms); err != nil {
		return nil, fmt.Errorf("postgres: throughput: %w", err)
	}
	return ms, nil
}

// queueSQL counts the live tasks by what they wait for, as
// store.QueueCounts.Add does (see countActiveSQL): the working and held
// ones by their lease, then the suspended ones as those waiting for input
// less the held ones.
const queueSQL = `SELECT status, coalesce(lease_owner <> '' AND lease_expires_at > $1, false) AS held,
	lease_owner = '' AS unowned, count(*), (extract(epoch FROM min(created_at)) * 1000)::bigint
	FROM mcptasks_tasks WHERE ` + claimableWhere + ` AND ` + notExpiredWhere + `
	GROUP BY 1, 2, 3
	UNION ALL SELECT 'input_required', false, true, (` + waitingSQL + `) - (` + heldWaitingSQL + `), 0::bigint`

// Queue implements [store.Lister].
func (s *Store) Queue(ctx context.Context, now time.Time) (*store.QueueCounts, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, queueSQL, timeValue(now))
	if err != nil {
		return nil, fmt.Errorf("postgres: queue: %w", err)
	}
	defer rows.Close()
	q, err := sqlstore.ScanQueue(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: queue: %w", err)
	}
	return q, nil
}
