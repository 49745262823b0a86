package sqlstore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Dialect is what the list queries of a SQL store need to know of its
// database.
type Dialect struct {
	// Table is the tasks table.
	Table string
	// RowID is the column that finds a row fastest (SQLite's rowid, or
	// the primary key).
	RowID string
	// In is the SQL that is true when col is among the values that the
	// query sub returns.
	In func(col, sub string) string
	// Param returns the placeholder of the n-th parameter, from 1.
	Param func(n int) string
	// Lower is the SQL of a value folded to lower case in ASCII letters
	// only.
	Lower func(expr string) string
	// HasPrefix is the SQL that is true when expr starts with the
	// parameter param.
	HasPrefix func(expr, param string) string
	// Contains is the SQL that is true when expr contains the parameter
	// param.
	Contains func(expr, param string) string
	// Time is the column value of a time.
	Time func(t time.Time) any
	// NotExpired is the SQL that is true when a task's TTL has not
	// elapsed at the time of the parameter param, and the columns it
	// reads.
	NotExpired func(param string) (cond string, cols []string)
}

// ListSQL is the SQL of one page of a listing: Page, with PageArgs, returns
// the matching rows' columns; Boundary, with BoundaryArgs, returns the
// (created_at, id) of the last task the page may examine and of the one
// after it, if the store has them, for a page that did not fill.
type ListSQL struct {
	Page, Boundary         string
	PageArgs, BoundaryArgs []any
}

// List returns the SQL of the page of q, selecting columns. The page walks
// one index newest first, from the cursor: the index of Principal if set,
// else the claimable index for working tasks, else the status index, else
// the creation index. It examines at most q.ScanLimit of the index's tasks and
// checks the other filters on them (in the index, for the columns the
// index has); then it reads the matching rows (at most q.Limit+1) by
// d.RowID.
func (d Dialect) List(q *store.ListQuery, columns string) ListSQL {
	var (
		args     []any
		scan     []string // conditions of the index walk
		residual []string // conditions checked on the rows examined
	)
	param := func(v any) string {
		args = append(args, v)
		return d.Param(len(args))
	}
	switch {
	case q.Principal != "":
		scan = append(scan, "principal = "+param(q.Principal))
	case q.Status == task.Working:
		// The claimable index: the status implies its WHERE.
		scan = append(scan, "status = 'working'")
	case q.Status != "":
		scan = append(scan, "status = "+param(string(q.Status)), "status <> 'working'")
	}
	if q.After {
		scan = append(scan, fmt.Sprintf("(created_at, id) < (%s, %s)", param(d.Time(q.AfterCreated)), param(q.AfterID)))
	}
	if !q.CreatedAfter.IsZero() {
		scan = append(scan, "created_at >= "+param(d.Time(q.CreatedAfter)))
	}
	if !q.CreatedBefore.IsZero() {
		scan = append(scan, "created_at < "+param(d.Time(q.CreatedBefore)))
	}
	scanArgs := len(args)
	// The residual conditions, and the columns they read: the walk reads
	// only those, so that it stays in the index when the index has them.
	var cols []string
	check := func(cond string, reads ...string) {
		for _, c := range reads {
			if !slices.Contains(cols, c) {
				cols = append(cols, c)
			}
		}
		residual = append(residual, cond)
	}
	if q.Principal != "" && q.Status != "" {
		check("status = "+param(string(q.Status)), "status")
	}
	if q.Tool != "" {
		check("tool = "+param(q.Tool), "tool")
	}
	if q.IDPrefix != "" {
		check(d.HasPrefix("id", param(q.IDPrefix)), "id")
	}
	if q.Text != "" {
		check(d.Contains(d.Lower("status_message"), param(store.LowerASCII(q.Text))), "status_message")
	}
	if !q.Now.IsZero() {
		cond, reads := d.NotExpired(param(d.Time(q.Now)))
		check(cond, reads...)
	}

	where := "TRUE"
	if len(scan) > 0 {
		where = strings.Join(scan, " AND ")
	}
	const order = "ORDER BY created_at DESC, id DESC"
	walk := func(sel string) string {
		return fmt.Sprintf("SELECT %s FROM %s WHERE %s %s", sel, d.Table, where, order)
	}
	sel := strings.Join(append([]string{d.RowID + " AS rid"}, cols...), ", ")
	filter := "TRUE"
	if len(residual) > 0 {
		filter = strings.Join(residual, " AND ")
	}
	// The walk's rows come out in its order, which the filter keeps: the
	// first Limit+1 that match are the page's (and one more).
	matches := fmt.Sprintf("SELECT rid FROM (%s LIMIT %s) w WHERE %s LIMIT %s",
		walk(sel), param(q.ScanLimit), filter, param(q.Limit+1))
	page := fmt.Sprintf("SELECT %s FROM %s WHERE %s %s", columns, d.Table, d.In(d.RowID, matches), order)
	pageArgs := args

	// The boundary walk repeats the scan's parameters.
	boundary := walk("created_at, id") + " LIMIT 2 OFFSET " + d.Param(scanArgs+1)
	boundaryArgs := append(append([]any(nil), args[:scanArgs]...), q.ScanLimit-1)
	return ListSQL{Page: page, PageArgs: pageArgs, Boundary: boundary, BoundaryArgs: boundaryArgs}
}

// Page returns the page of q from the tasks its Page query returned (at
// most q.Limit+1, in order). For a page that did not fill, it asks ends for
// what the Boundary query returns (the tasks, with their CreatedAt and ID
// only), to tell a scan that stopped at its limit, which gets a cursor,
// from one that reached the end.
func Page(q *store.ListQuery, tasks []*task.Record, ends func() ([]*task.Record, error)) (*store.ListPage, error) {
	page := &store.ListPage{Tasks: tasks}
	if len(tasks) > q.Limit {
		page.Tasks = tasks[:q.Limit]
		last := page.Tasks[q.Limit-1]
		page.Next = q.Cursor(last.CreatedAt, last.ID)
		return page, nil
	}
	rs, err := ends()
	if err != nil {
		return nil, err
	}
	if len(rs) == 2 {
		page.Next = q.Cursor(rs[0].CreatedAt, rs[0].ID)
	}
	return page, nil
}

// Rows are the rows of a query, as database/sql and pgx return them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanTaskCounts reads rows of (tool, status, count).
func ScanTaskCounts(rows Rows) (store.TaskCounts, error) {
	c := store.TaskCounts{}
	for rows.Next() {
		var tool, status string
		var n int
		if err := rows.Scan(&tool, &status, &n); err != nil {
			return nil, err
		}
		c.Add(tool, task.Status(status), n)
	}
	return c, rows.Err()
}

// ScanMinutes adds to ms rows of (minute, created, finished), the minute
// in minutes since the Unix epoch.
func ScanMinutes(rows Rows, ms store.Minutes) error {
	for rows.Next() {
		var minute int64
		var created, finished int
		if err := rows.Scan(&minute, &created, &finished); err != nil {
			return err
		}
		ms.Add(time.Unix(minute*60, 0), created, finished)
	}
	return rows.Err()
}

// ScanQueue reads rows of (status, held, unowned, count, oldest created_at
// in Unix milliseconds) of the live tasks, and counts them as
// store.QueueCounts.Add does.
func ScanQueue(rows Rows) (*store.QueueCounts, error) {
	q := &store.QueueCounts{}
	for rows.Next() {
		var (
			status        string
			held, unowned bool
			n             int
			oldest        int64
		)
		if err := rows.Scan(&status, &held, &unowned, &n, &oldest); err != nil {
			return nil, err
		}
		switch {
		case held && status == string(task.Working):
			q.Running += n
		case held:
			q.WaitingForInput += n
		case status == string(task.InputRequired) && unowned:
			q.Suspended += n
		default:
			q.Claimable += n
			if t := time.UnixMilli(oldest).UTC(); q.OldestClaimable.IsZero() || t.Before(q.OldestClaimable) {
				q.OldestClaimable = t
			}
		}
	}
	return q, rows.Err()
}
