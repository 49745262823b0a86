package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/storetest"
	"github.com/mcptasks/mcptasks/task"
)

// openTemp opens a store on a new file in t's temporary directory. The
// caller closes it.
func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "tasks.db"), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

var t0 = time.Date(2026, time.July, 28, 10, 30, 0, 0, time.UTC)

func newTask(id string) *task.Record {
	return &task.Record{
		ID: id, Principal: "alice", Tool: "echo", Args: json.RawMessage(`{"n": 1}`),
		Status: task.Working, CreatedAt: t0, UpdatedAt: t0, TTL: time.Hour,
	}
}

func TestOpen_Reopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tasks.db")
	opts := []*Options{nil, {MaxReadConns: 1}}
	s := storetest.Reopen(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), path, opts[0])
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		opts = opts[1:]
		return s
	}).(*Store)
	ms, err := loadMigrations(migrationFS, migrationDir)
	if err != nil {
		t.Fatal(err)
	}
	var versions int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != len(ms) {
		t.Errorf("schema_migrations has %d rows after reopening, want %d", versions, len(ms))
	}
}

func TestOpen_Pragmas(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	defer s.Close()
	tests := []struct {
		pragma string
		writer string
		reader string
	}{
		{"journal_mode", "wal", "wal"},
		{"synchronous", "2", "2"}, // FULL
		{"foreign_keys", "1", "1"},
		{"busy_timeout", "5000", "5000"},
		{"query_only", "0", "1"},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			pool string
			got  func() (string, error)
			want string
		}{
			{"writer", func() (v string, err error) { return v, s.w.QueryRow("PRAGMA " + tt.pragma).Scan(&v) }, tt.writer},
			{"reader", func() (v string, err error) { return v, s.r.QueryRow("PRAGMA " + tt.pragma).Scan(&v) }, tt.reader},
		} {
			got, err := c.got()
			if err != nil {
				t.Fatalf("%s: PRAGMA %s: %v", c.pool, tt.pragma, err)
			}
			if got != c.want {
				t.Errorf("%s: PRAGMA %s = %s, want %s", c.pool, tt.pragma, got, c.want)
			}
		}
	}

	// The read pool cannot write.
	if _, err := s.r.Exec(`DELETE FROM tasks`); err == nil {
		t.Error("a write on the read pool succeeded")
	}
}

func TestOpen_BadArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		opts *Options
		want string
	}{
		{"EmptyPath", "", nil, "path is empty"},
		{"Memory", ":memory:", nil, ":memory:"},
		{"QuestionMark", filepath.Join(dir, "a?b.db"), nil, "contains '?'"},
		{"NegativeBusyTimeout", filepath.Join(dir, "a.db"), &Options{BusyTimeout: -time.Second}, "BusyTimeout"},
		{"NegativeMaxReadConns", filepath.Join(dir, "a.db"), &Options{MaxReadConns: -1}, "MaxReadConns"},
		{"MissingDirectory", filepath.Join(dir, "no", "such", "dir", "a.db"), nil, "open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(context.Background(), tt.path, tt.opts)
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded, want an error naming %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v, want it to name %q", err, tt.want)
			}
		})
	}
}

// TestOpen_ConcurrentNewFile opens a new file from several goroutines at
// once, as a server and a worker starting on a fresh volume do: each
// switches the file to WAL, which fails at once with SQLITE_BUSY while
// another switches it, and every Open must wait for it and succeed.
func TestOpen_ConcurrentNewFile(t *testing.T) {
	t.Parallel()
	const rounds, opens = 20, 2 // two at a time collide the most (TestOpen_Busy makes it certain)
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "tasks.db")
		errs := make([]error, opens)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				s, err := Open(context.Background(), path, nil)
				if err == nil {
					err = s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: Open %d: %v", round, i, err)
			}
		}
	}
}

// TestOpen_Busy checks how long Open tries while the file is locked by
// another connection: up to BusyTimeout while it is busy, not at all for
// another error.
func TestOpen_Busy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string) // makes the file fail Open
		timeout time.Duration
		busy    bool // Open fails with SQLITE_BUSY after timeout, not at once
	}{
		{"Locked", holdWriteLock, 200 * time.Millisecond, true},
		{"NotADatabase", func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 512), 0o600); err != nil {
				t.Fatal(err)
			}
		}, time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "tasks.db")
			tt.prepare(t, path)
			start := time.Now()
			s, err := Open(context.Background(), path, &Options{BusyTimeout: tt.timeout})
			took := time.Since(start)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if isBusy(err) != tt.busy {
				t.Errorf("Open: %v; want SQLITE_BUSY: %v", err, tt.busy)
			}
			if waited := took >= tt.timeout; waited != tt.busy {
				t.Errorf("Open failed after %v with BusyTimeout %v; want it to wait for BusyTimeout: %v", took, tt.timeout, tt.busy)
			}
		})
	}
}

// holdWriteLock makes path a new database in its default journal mode and
// holds its write lock, as a connection does between switching it to WAL
// and committing the switch, until t ends.
func holdWriteLock(t *testing.T, path string) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.ExecContext(ctx, "ROLLBACK") })
}

func TestOpen_NewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := s.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999_future.up.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database from a newer program succeeded")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open: %v, want it to say the schema is newer", err)
	}
}

// TestQueryPlans checks that no query of the store scans the tasks table.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	defer s.Close()
	claimAll, claimArgs := claimQuery(store.ClaimParams{Now: t0})
	claimTools, toolArgs := claimQuery(store.ClaimParams{Now: t0, Tools: []string{"a", "b"}, Limit: 5})
	working, err := store.ListParams{Status: task.Working, Limit: 10}.Query()
	if err != nil {
		t.Fatal(err)
	}
	listWorking := dialect.List(working, columns)
	// The live tasks are read through the partial indexes that hold them
	// (no index holds them all): never by a walk of every task.
	live := []string{"tasks_claimable", "tasks_status", "tasks_finished", "PRIMARY KEY"}
	tests := []struct {
		name  string
		query string
		args  []any
		sorts bool     // a temporary B-tree groups counts or orders a page
		only  []string // if set, the indexes the plan may read tasks by
	}{
		{"Get", getSQL, []any{"t1"}, false, nil},
		{"Update", updateSQL, make([]any, strings.Count(stateMarks, "?")+1), false, nil}, // the state columns, then the id
		{"Heartbeat", heartbeatSQL, []any{"t1", 1, 0, 0}, false, nil},
		{"Claim", claimAll, claimArgs, false, []string{"tasks_claimable"}},
		{"ClaimTools", claimTools, toolArgs, false, []string{"tasks_claimable"}},
		{"DeleteExpired", deleteExpiredSQL, []any{0, 10}, false, nil},
		{"CountActive", countActiveSQL, []any{0}, false, live},
		{"CountTasks", countTasksSQL, []any{0, 0}, true, live},
		{"Queue", queueSQL, []any{0}, true, live},
		{"ListWorking", listWorking.Page, listWorking.PageArgs, true, live},
		{"ListWorkingBoundary", listWorking.Boundary, listWorking.BoundaryArgs, false, live},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := s.w.Query("EXPLAIN QUERY PLAN "+tt.query, tt.args...)
			if err != nil {
				t.Fatalf("EXPLAIN: %v", err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, notUsed int
				var detail string
				if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			t.Logf("plan: %q", plan)
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN tasks") && !strings.Contains(step, "INDEX") {
					t.Errorf("plan scans the table: %q", plan)
				}
				if strings.Contains(step, "TEMP B-TREE") && !tt.sorts {
					t.Errorf("plan sorts: %q", plan)
				}
				if strings.Contains(step, "tasks USING") && tt.only != nil &&
					!slices.ContainsFunc(tt.only, func(ix string) bool { return strings.Contains(step, ix) }) {
					t.Errorf("plan reads tasks by another index than %q: %q", tt.only, step)
				}
			}
		})
	}
}

// TestInvalidJSONInMaps: the maps are stored as JSON, which must parse.
func TestInvalidJSONInMaps(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	defer s.Close()
	storetest.InvalidJSON(t, s, func(r *task.Record) { r.Answers = map[string]json.RawMessage{"a": json.RawMessage(`{not json`)} })
}

func TestContextCancelled(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	defer s.Close()
	storetest.ContextCancelled(t, s)
}

// BenchmarkGet reads 1,000 tasks round-robin, with the read cache and
// without it (every Get a read transaction).
func BenchmarkGet(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"cache", 0}, {"nocache", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Open(context.Background(), filepath.Join(b.TempDir(), "tasks.db"), &Options{CacheSize: bc.size})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchmarkGet(b, s, 1)
		})
	}
}

func BenchmarkGetFor(b *testing.B) {
	storetest.BenchmarkGetFor(b, func(b *testing.B) store.Store { return openTemp(b) })
}

// BenchmarkCreate measures creates from 8 goroutines per CPU: concurrent
// creates share commits.
func BenchmarkCreate(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	storetest.BenchmarkCreate(b, s, 8, false)
}

// TestGroupCommit_CallerCancel checks that a caller whose context ends
// while its write waits for a group commit affects no other write of the
// group: SQLite rolls back a whole transaction when a change in it is
// interrupted. A write that returned nil is stored; one that returned the
// context's error is not.
func TestGroupCommit_CallerCancel(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	defer s.Close()
	for round := range 30 {
		var wg sync.WaitGroup
		errs := make([]error, 16)
		ids := make([]string, len(errs))
		for i := range errs {
			ids[i] = task.NewID()
			ctx, cancel := context.WithCancel(context.Background())
			wg.Go(func() {
				if i%2 == 1 {
					go cancel() // races the write: before, during or after
				}
				errs[i] = s.Create(ctx, newTask(ids[i]))
				cancel()
			})
		}
		wg.Wait()
		for i, err := range errs {
			_, getErr := s.Get(context.Background(), ids[i])
			switch {
			case err == nil && getErr != nil:
				t.Errorf("round %d: write %d returned nil but Get says %v", round, i, getErr)
			case err != nil && i%2 == 0:
				t.Errorf("round %d: write %d, not cancelled, failed: %v", round, i, err)
			case err != nil && !errors.Is(err, context.Canceled):
				t.Errorf("round %d: write %d failed with %v, want context.Canceled", round, i, err)
			case err != nil && getErr == nil:
				t.Errorf("round %d: write %d returned %v but is stored", round, i, err)
			}
		}
	}
}

// TestGroupCommit_FailsAlone checks that a write that fails before it
// changed anything, with an error that is not a store rule's (a task that
// cannot be decoded, a query SQLite refuses), fails alone: the creates
// committed in the same group are stored. Each case runs its write and
// the creates in one group (inOneGroup).
func TestGroupCommit_FailsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tooManyTools := make([]string, 40_000) // SQLite takes 32,766 parameters
	for i := range tooManyTools {
		tooManyTools[i] = fmt.Sprint("tool", i)
	}
	tests := []struct {
		name  string
		write func(s *Store) error
		want  string // in the write's error
	}{
		{"ClaimUndecodable", func(s *Store) error {
			_, err := s.Claim(ctx, store.ClaimParams{Owner: "w", Now: t0, LeaseExpiresAt: t0.Add(time.Minute), Limit: 1})
			return err
		}, "task poison: history"},
		{"ClaimTooManyTools", func(s *Store) error {
			_, err := s.Claim(ctx, store.ClaimParams{Owner: "w", Now: t0, LeaseExpiresAt: t0.Add(time.Minute), Tools: tooManyTools})
			return err
		}, "too many SQL variables"},
		{"CancelUndecodable", func(s *Store) error {
			_, err := s.RequestCancel(ctx, store.CancelParams{ID: "poison", Principal: "alice", Now: t0})
			return err
		}, "task poison: history"},
		{"CreateWithKeyOfUndecodable", func(s *Store) error {
			r := newTask("key-taker")
			r.IdempotencyKey = "poison-key"
			return s.Create(ctx, r)
		}, "task poison: history"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				s := openTemp(t)
				defer s.Close()
				// The oldest task, the first a claim reads, has a history
				// that is not JSON.
				poison := newTask("poison")
				poison.CreatedAt = t0.Add(-time.Minute)
				poison.IdempotencyKey = "poison-key"
				if err := s.Create(ctx, poison); err != nil {
					t.Fatal(err)
				}
				if _, err := s.w.ExecContext(ctx, `UPDATE tasks SET history = '{' WHERE id = 'poison'`); err != nil {
					t.Fatal(err)
				}
				ids := []string{"before-1", "before-2", "after-1", "after-2"}
				writes := []func() error{
					func() error { return s.Create(ctx, newTask(ids[0])) },
					func() error { return s.Create(ctx, newTask(ids[1])) },
					func() error { return tt.write(s) },
					func() error { return s.Create(ctx, newTask(ids[2])) },
					func() error { return s.Create(ctx, newTask(ids[3])) },
				}
				errs := inOneGroup(t, s, writes)
				if err := errs[2]; err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("the failing write returned %v, want an error naming %q", err, tt.want)
				}
				for i, err := range slices.Delete(errs, 2, 3) {
					if err != nil {
						t.Errorf("create %s in the group of the failing write: %v", ids[i], err)
					} else if _, err := s.Get(ctx, ids[i]); err != nil {
						t.Errorf("create %s returned nil, but Get: %v", ids[i], err)
					}
				}
			})
		})
	}
}

// inOneGroup runs the writes of s at once, in the order given, in one
// group commit, and returns their errors. It must run in a synctest
// bubble, where s was opened: it holds the commit loop in a write of its
// own until every write waits for the loop, which then takes them all.
func inOneGroup(t *testing.T, s *Store, writes []func() error) []error {
	t.Helper()
	release := make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.inTx(context.Background(), "hold", func(*wtx) error { <-release; return nil })
	}()
	synctest.Wait() // the commit loop runs the holding write
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Go(func() { errs[i] = w() })
		synctest.Wait() // w waits for the commit loop, after those before it
	}
	close(release)
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatalf("holding write: %v", err)
	}
	return errs
}

// TestKeepsTx checks which errors of a statement leave its transaction as
// it was (beforeChange marks only those): SQLite may roll the transaction
// back on an error of the database other than SQLITE_ERROR.
func TestKeepsTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, sqlErr := db.ExecContext(ctx, "SELECT no_such_column FROM sqlite_master")
	path := filepath.Join(t.TempDir(), "locked.db")
	holdWriteLock(t, path)
	locked, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer locked.Close()
	_, busyErr := locked.ExecContext(ctx, "BEGIN IMMEDIATE")
	if !isBusy(busyErr) {
		t.Fatalf("BEGIN IMMEDIATE on a locked file: %v, want SQLITE_BUSY", busyErr)
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"Decode", fmt.Errorf("task t: history: %w", &json.SyntaxError{}), true},
		{"SQLError", fmt.Errorf("claim: %w", sqlErr), true},
		{"Busy", fmt.Errorf("claim: %w", busyErr), false},
		{"TxDone", fmt.Errorf("claim: %w", sql.ErrTxDone), false},
		{"BadConn", fmt.Errorf("claim: %w", driver.ErrBadConn), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || errors.Unwrap(tt.err) == nil {
				t.Fatalf("no error to check: %v", tt.err)
			}
			if got := keepsTx(tt.err); got != tt.want {
				t.Errorf("keepsTx(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
