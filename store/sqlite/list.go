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
	rows, err := s.r.QueryContext(ctx, sq.Page, sq.PageArgs...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	defer rows.Close()
	page := &store.ListPage{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list tasks: %w", err)
		}
		page.Tasks = append(page.Tasks, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	if len(page.Tasks) > q.Limit {
		page.Tasks = page.Tasks[:q.Limit]
		last := page.Tasks[q.Limit-1]
		page.Next = q.Cursor(last.CreatedAt, last.ID)
		return page, nil
	}
	// A short page: did the scan stop at its limit, or at the end?
	b, err := s.r.QueryContext(ctx, sq.Boundary, sq.BoundaryArgs...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	defer b.Close()
	var ends []task.Record
	for b.Next() {
		var created int64
		var id string
		if err := b.Scan(&created, &id); err != nil {
			return nil, fmt.Errorf("sqlite: list tasks: %w", err)
		}
		ends = append(ends, task.Record{ID: id, CreatedAt: timeFrom(created)})
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list tasks: %w", err)
	}
	if len(ends) == 2 {
		page.Next = q.Cursor(ends[0].CreatedAt, ends[0].ID)
	}
	return page, nil
}
