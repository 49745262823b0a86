package sqlite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store/storetest"
)

// syntheticEnd is the creation time of the newest synthetic task, fixed
// so that a loaded database can be kept between runs.
var syntheticEnd = time.Date(2026, time.July, 28, 12, 0, 0, 0, time.UTC)

// BenchmarkList times the list queries and counts on a store of
// MCPTASKS_LIST_TASKS synthetic tasks (default 1,000,000; see
// storetest.Synthetic). The database is loaded once, with a bulk insert,
// into MCPTASKS_LIST_DB (default $TMPDIR/mcptasks-list-N.db) and kept for
// the next run; delete the file to load it again. With -v it logs the
// query plan of each list query.
//
//	go test ./store/sqlite -run XXX -bench BenchmarkList -benchtime 20x -v
func BenchmarkList(b *testing.B) {
	n, path := syntheticPath(b)
	s := openSynthetic(b, path, n)
	defer s.Close()
	if testing.Verbose() {
		for _, c := range storetest.ListCases(n, syntheticEnd) {
			q, err := c.Params.Query()
			if err != nil {
				b.Fatal(err)
			}
			sq := dialect.List(q, columns)
			b.Logf("%s:\n\tpage: %s\n\tboundary: %s", c.Name,
				strings.Join(explain(b, s, sq.Page, sq.PageArgs...), "; "),
				strings.Join(explain(b, s, sq.Boundary, sq.BoundaryArgs...), "; "))
		}
	}
	storetest.BenchmarkLister(b, s, n, syntheticEnd)
}

// syntheticPath returns the number of synthetic tasks the benchmarks use,
// and the file of their database.
func syntheticPath(b *testing.B) (n int, path string) {
	n = 1_000_000
	if v := os.Getenv("MCPTASKS_LIST_TASKS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			b.Fatalf("MCPTASKS_LIST_TASKS=%q: want a number of tasks, at least 10", v)
		}
	}
	path = os.Getenv("MCPTASKS_LIST_DB")
	if path == "" {
		path = filepath.Join(os.TempDir(), fmt.Sprintf("mcptasks-list-%d.db", n))
	}
	return n, path
}

// openSynthetic opens the store at path, loading the n synthetic tasks
// into it first if it does not hold them.
func openSynthetic(b *testing.B, path string, n int) *Store {
	ctx := context.Background()
	s, err := Open(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	var have int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM tasks`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == n {
		return s
	}
	if have != 0 {
		s.Close()
		b.Fatalf("%s holds %d tasks, not %d: delete it to load it again", path, have, n)
	}
	start := time.Now()
	const batch = 10_000
	for i := 0; i < n; i += batch {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		st := tx.StmtContext(ctx, s.ws.insert)
		for j := i; j < min(i+batch, n); j++ {
			vals, err := recordValues(storetest.Synthetic(j, n, syntheticEnd))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.ExecContext(ctx, vals...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("loaded %d tasks into %s in %v", n, path, time.Since(start).Round(time.Second))
	return s
}

// explain returns the query plan of q, one step a line.
func explain(tb testing.TB, s *Store, q string, args ...any) []string {
	tb.Helper()
	rows, err := s.r.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		tb.Fatalf("EXPLAIN: %v", err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			tb.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return plan
}

// BenchmarkCreateIndexes measures what the indexes of migration 006 cost a
// create: the store of BenchmarkCreate with some of them dropped. Empty/*
// creates into a new, empty store; Tasks1M/* into a copy of the store of
// BenchmarkList, loaded first if need be (1,000,000 tasks, or
// MCPTASKS_LIST_TASKS). Compare the variants of one run, as -count
// interleaves them:
//
//	go test ./store/sqlite -run XXX -bench BenchmarkCreateIndexes -benchtime 2s -count 5
func BenchmarkCreateIndexes(b *testing.B) {
	variants := []struct {
		name string
		drop []string
	}{
		{"Without006", []string{"tasks_created", "tasks_principal", "tasks_status", "tasks_finished"}},
		{"CreatedOnly", []string{"tasks_principal"}},
		{"PrincipalOnly", []string{"tasks_created"}},
		{"With006", nil},
	}
	for _, v := range variants {
		b.Run("Empty/"+v.name, func(b *testing.B) {
			s := openTemp(b)
			defer s.Close()
			benchCreates(b, s, v.drop)
		})
	}
	n, path := syntheticPath(b)
	for v := range variants {
		b.Run(fmt.Sprintf("Tasks%dk/%s", n/1000, variants[v].name), func(b *testing.B) {
			dst := filepath.Join(os.TempDir(), fmt.Sprintf("mcptasks-create-%s-%d.db", variants[v].name, n))
			if _, err := os.Stat(dst); err != nil {
				openSynthetic(b, path, n).Close()
				if err := copyFile(dst, path); err != nil {
					b.Fatal(err)
				}
			}
			s, err := Open(context.Background(), dst, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchCreates(b, s, variants[v].drop)
		})
	}
}

// benchCreates drops the indexes, then creates tasks from 8 goroutines per
// CPU, as BenchmarkCreate does.
func benchCreates(b *testing.B, s *Store, drop []string) {
	for _, idx := range drop {
		if _, err := s.w.Exec("DROP INDEX IF EXISTS " + idx); err != nil {
			b.Fatal(err)
		}
	}
	storetest.BenchmarkCreate(b, s, 8, true)
}

// copyFile copies the SQLite database src, closed, to dst.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
