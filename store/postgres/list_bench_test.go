package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/store/storetest"
)

// syntheticEnd is the creation time of the newest synthetic task, fixed
// so that a loaded schema can be kept between runs.
var syntheticEnd = time.Date(2026, time.July, 28, 12, 0, 0, 0, time.UTC)

// BenchmarkList times the list queries and counts on a store of
// MCPTASKS_LIST_TASKS synthetic tasks (default 1,000,000; see
// storetest.Synthetic) in the test server's database. The tasks are
// loaded once, with COPY, into the schema mcptasks_list_N, which is kept
// for the next run (DROP SCHEMA it to load again). With -v it logs the
// plan of each list query, with its timings and buffers.
//
//	go test ./store/postgres -run XXX -bench BenchmarkList -benchtime 20x -v
func BenchmarkList(b *testing.B) {
	n := syntheticCount(b)
	s := openSynthetic(b, fmt.Sprintf("mcptasks_list_%d", n), n)
	if testing.Verbose() {
		for _, c := range storetest.ListCases(n, syntheticEnd) {
			q, err := c.Params.Query()
			if err != nil {
				b.Fatal(err)
			}
			sq := dialect.List(q, columns)
			b.Logf("%s:\n%s\n\tboundary:\n%s", c.Name, explain(b, s, sq.Page, sq.PageArgs...), explain(b, s, sq.Boundary, sq.BoundaryArgs...))
		}
	}
	storetest.BenchmarkLister(b, s, n, syntheticEnd)
}

// syntheticCount returns the number of synthetic tasks the benchmarks use.
func syntheticCount(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("MCPTASKS_LIST_TASKS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			b.Fatalf("MCPTASKS_LIST_TASKS=%q: want a number of tasks, at least 10", v)
		}
	}
	return n
}

// openSynthetic opens a store on the schema, loading the n synthetic tasks
// into it first if it does not hold them.
func openSynthetic(b *testing.B, schema string, n int) *Store {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL())
	if err != nil {
		if os.Getenv(pgtest.EnvRequire) == "1" {
			b.Fatalf("connect: %v", err)
		}
		b.Skipf("no Postgres: %v", err)
	}
	_, err = conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	conn.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s := open(b, pgtest.WithParam(pgtest.URL(), "options", "-csearch_path="+schema), &Options{QueryTimeout: time.Hour, StatementTimeout: -1})
	var have int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM mcptasks_tasks`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == n {
		return s
	}
	if have != 0 {
		b.Fatalf("schema %s holds %d tasks, not %d: drop it to load it again", schema, have, n)
	}
	start := time.Now()
	cols := strings.Fields(strings.ReplaceAll(columns, ",", " "))
	i := 0
	_, err = s.pool.CopyFrom(ctx, pgx.Identifier{"mcptasks_tasks"}, append(cols, "expires_at"), pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		return insertValues(storetest.Synthetic(i-1, n, syntheticEnd))
	}))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE mcptasks_tasks"); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d tasks into schema %s in %v", n, schema, time.Since(start).Round(time.Second))
	return s
}

// explain returns the plan of q, with its timings and buffers.
func explain(tb testing.TB, s *Store, q string, args ...any) string {
	tb.Helper()
	rows, err := s.pool.Query(context.Background(), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q, args...)
	if err != nil {
		tb.Fatalf("EXPLAIN: %v", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatalf("EXPLAIN: %v", err)
	}
	return "\t\t" + strings.Join(lines, "\n\t\t")
}

// BenchmarkCreateIndexes measures what the indexes of migration 006 cost a
// create: the store of BenchmarkCreate (DisableNotify, so that the
// serialized NOTIFY does not hide the difference) with some of them
// dropped. Empty/* creates into a new, empty schema; Tasks1000k/* into the
// schema of BenchmarkList and into a copy of it without the indexes of
// 006 (mcptasks_list_N_no006), both loaded first if need be, and deletes
// the tasks it made afterwards. Compare the variants of one run, as
// -count interleaves them:
//
//	go test ./store/postgres -run XXX -bench BenchmarkCreateIndexes -benchtime 2s -count 5
func BenchmarkCreateIndexes(b *testing.B) {
	variants := []struct {
		name string
		drop []string
	}{
		{"Without006", indexes006},
		{"CreatedOnly", []string{"mcptasks_tasks_principal"}},
		{"PrincipalOnly", []string{"mcptasks_tasks_created"}},
		{"With006", nil},
	}
	for _, v := range variants {
		b.Run("Empty/"+v.name, func(b *testing.B) {
			s := open(b, pgtest.DSN(b), &Options{DisableNotify: true})
			dropIndexes(b, s, v.drop)
			benchCreates(b, s)
		})
	}
	n := syntheticCount(b)
	for _, v := range []struct {
		name, schema string
		drop         []string
	}{
		{"Without006", fmt.Sprintf("mcptasks_list_%d_no006", n), indexes006},
		{"With006", fmt.Sprintf("mcptasks_list_%d", n), nil},
	} {
		b.Run(fmt.Sprintf("Tasks%dk/%s", n/1000, v.name), func(b *testing.B) {
			s := openSynthetic(b, v.schema, n)
			dropIndexes(b, s, v.drop)
			s.opts.DisableNotify = true
			ids := benchCreates(b, s)
			b.StopTimer()
			if _, err := s.pool.Exec(context.Background(), `DELETE FROM mcptasks_tasks WHERE id = ANY($1)`, ids); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// indexes006 are the indexes that migration 006 makes.
var indexes006 = []string{"mcptasks_tasks_created", "mcptasks_tasks_principal", "mcptasks_tasks_status", "mcptasks_tasks_finished"}

// dropIndexes drops the indexes, if they exist.
func dropIndexes(b *testing.B, s *Store, names []string) {
	for _, idx := range names {
		if _, err := s.pool.Exec(context.Background(), "DROP INDEX IF EXISTS "+idx); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCreates creates tasks from 4 goroutines per CPU, as BenchmarkCreate
// does, and returns their ids.
func benchCreates(b *testing.B, s *Store) []string {
	return storetest.BenchmarkCreate(b, s, 4, true)
}
