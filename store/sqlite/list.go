package sqlite

import (
	"context"
	"fmt"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/task"
)

var _ store.Lister = (*Store)(nil)

// dialect is SQLite's, for the list queries of package sqlstore.
var dialect = sqlstore.Dialect{
	Table:     "tasks",
	RowID:     "rowid",
	In:        func(col, sub string) string { return col + " IN (" + sub + ")" },
	Param:     func(n int) string { return fmt.Sprintf("?%d", n) },
	Lower:     func(e string) string { return "lower(" + e + ")" }, // ASCII only without ICU
	HasPrefix: func(e, p string) string { return "instr(" + e + ", " + p + ") = 1" },
	Contains:  func(e, p string) string { return "instr(" + e + ", " + p + ") > 0" },
	Time:      timeValue,
	// Not from expires_at: SQLite computes a generated column from the
	// row, never from an index that holds it.
	NotExpired: func(p string) (string, []string) {
		return "(ttl_ms <= 0 OR created_at + ttl_ms > " + p + ")", []string{"created_at", "ttl_ms"}
	},
}

// List implements [store.Lister]: see [sqlstore.Dialect.List] for the
// queries. It reads on the read pool.
func (s *Store) List(ctx context.Context, p store.ListParams) (*store.ListPage, error) {
	q, err := p.Query()
	if err != nil {
		return nil, err
	}
	sq := dialect.List(q, columns)
	tasks, err := s.listRows(ctx, sq.Page, sq.PageArgs, scanRecord)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	page, err := sqlstore.Page(q, tasks, func() ([]*task.Record, error) {
		return s.listRows(ctx, sq.Boundary, sq.BoundaryArgs, func(sc scanner) (*task.Record, error) {
			var created int64
			r := &task.Record{}
			err := sc.Scan(&created, &r.ID)
			r.CreatedAt = timeFrom(created)
			return r, err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	return page, nil
}

// listRows runs the query q on the read pool and scans each row.
func (s *Store) listRows(ctx context.Context, q string, args []any, scan func(scanner) (*task.Record, error)) ([]*task.Record, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var rs []*task.Record
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, rows.Err()
}
