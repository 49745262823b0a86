package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/storetest"
	"github.com/mcptasks/mcptasks/task"
)

// open opens a store on dsn that is closed when t ends.
func open(t testing.TB, dsn string, opts *Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openTemp opens a store in a fresh schema, closed when t ends.
func openTemp(t testing.TB) *Store {
	t.Helper()
	return open(t, pgtest.DSN(t), nil)
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		// A channel of its own: the suite's Listen test must not hear
		// the tasks of other tests, which have the same ids.
		s, err := Open(context.Background(), pgtest.DSN(t), &Options{NotifyChannel: testChannel()})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

// TestStore_SimpleProtocol runs the suite as through a pooler that needs
// the simple protocol (PgBouncer in transaction mode, before 1.21): no
// prepared statements, every value sent as text.
func TestStore_SimpleProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("the suite runs once with the extended protocol in -short")
	}
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), pgtest.WithParam(pgtest.DSN(t), "default_query_exec_mode", "simple_protocol"), nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

var t0 = time.Date(2026, time.July, 28, 10, 30, 0, 0, time.UTC)

func newTask(id string) *task.Record {
	return &task.Record{
		ID: id, Principal: "alice", Tool: "echo", Args: json.RawMessage(`{"n": 1}`),
		Status: task.Working, CreatedAt: t0, UpdatedAt: t0, TTL: time.Hour,
	}
}

// TestOpen_MigrationsOutlastTimeouts: the migrations are bounded by
// Open's context only, neither by QueryTimeout nor by the server's
// statement_timeout: a replica that waits for another's long migration
// (here, a lock held for 1 s) opens once it is done. Before, Open gave up
// after QueryTimeout (5 s by default), and an upgrade that rebuilds an
// index of a million tasks could never finish.
func TestOpen_MigrationsOutlastTimeouts(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, migrationLockSQL, schema); err != nil {
		t.Fatal(err)
	}
	const held = time.Second
	opened := make(chan error, 1)
	start := time.Now()
	go func() {
		s, err := Open(ctx, dsn, &Options{QueryTimeout: 200 * time.Millisecond, StatementTimeout: 200 * time.Millisecond})
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	time.Sleep(held)
	if err := tx.Commit(ctx); err != nil { // the other replica's migration ends
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open while another replica migrated for %v (QueryTimeout and statement_timeout 200 ms): %v", held, err)
	}
	if d := time.Since(start); d < held {
		t.Errorf("Open returned after %v, before the migration lock was free (%v)", d, held)
	}
}

func TestOpen_ConcurrentMigrations(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	const replicas = 8
	stores := make([]*Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open #%d: %v", i, err)
			continue
		}
		defer stores[i].Close()
	}
	if t.Failed() {
		return
	}
	ms, err := loadMigrations(migrationFS, migrationDir)
	if err != nil {
		t.Fatal(err)
	}
	var rows, versions, newest int
	err = stores[0].pool.QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT version), max(version) FROM mcptasks_migrations`).Scan(&rows, &versions, &newest)
	if err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) || versions != len(ms) || newest != len(ms) {
		t.Errorf("mcptasks_migrations has %d rows of %d versions up to %d, want each of the %d versions once", rows, versions, newest, len(ms))
	}
	// Every replica works on the one table.
	for i, s := range stores {
		if err := s.Create(context.Background(), newTask(fmt.Sprintf("t%d", i))); err != nil {
			t.Errorf("Create on replica %d: %v", i, err)
		}
	}
}

func TestOpen_Reopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s := storetest.Reopen(t, func(t *testing.T) store.Store {
		s, err := Open(ctx, dsn, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}).(*Store)
	ms, err := loadMigrations(migrationFS, migrationDir)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM mcptasks_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) {
		t.Errorf("mcptasks_migrations has %d rows after reopening, want %d", n, len(ms))
	}
}

func TestOpen_NewerSchema(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	s := open(t, dsn, nil)
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO mcptasks_migrations (version, name) VALUES (999, '999_future.up.sql')`); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(context.Background(), dsn, nil)
	if err == nil {
		s2.Close()
		t.Fatal("Open of a schema from a newer program succeeded")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open: %v, want it to say the schema is newer", err)
	}
}

func TestOpen_MissingSchema(t *testing.T) {
	t.Parallel()
	dsn := pgtest.WithParam(pgtest.DSN(t), "options", "-csearch_path=no_such_schema_here")
	s, err := Open(context.Background(), dsn, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open with a search_path of no existing schema succeeded")
	}
	if !strings.Contains(err.Error(), "search_path") {
		t.Errorf("Open: %v, want it to name the search_path", err)
	}
}

func TestOpen_BadArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		dsn  string
		opts *Options
		want string
	}{
		{"EmptyDSN", " ", nil, "dsn is empty"},
		{"BadDSN", "postgres://h:notaport/db", nil, "parse dsn"},
		{"NegativeMaxConns", "postgres://h/db", &Options{MaxConns: -1}, "MaxConns"},
		{"NegativeQueryTimeout", "postgres://h/db", &Options{QueryTimeout: -time.Second}, "QueryTimeout"},
		{"NegativeEventBuffer", "postgres://h/db", &Options{EventBuffer: -1}, "EventBuffer"},
		{"LongChannel", "postgres://h/db", &Options{NotifyChannel: strings.Repeat("c", 64)}, "NotifyChannel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(context.Background(), tt.dsn, tt.opts)
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

func TestOpen_Unreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	s, err := Open(context.Background(), "postgres://postgres@"+addr+"/test?sslmode=disable", &Options{QueryTimeout: time.Second})
	if err == nil {
		s.Close()
		t.Fatal("Open of a closed port succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open took %v to fail", d)
	}
}

// TestOpen_Settings checks the session settings and table storage
// parameters the store relies on.
func TestOpen_Settings(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	show := func(s *Store, name string) string {
		t.Helper()
		var v string
		if err := s.pool.QueryRow(context.Background(), "SHOW "+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name     string
		dsn      string
		opts     *Options
		settings map[string]string
	}{
		{"Defaults", dsn, nil, map[string]string{
			"statement_timeout": "30s", "idle_in_transaction_session_timeout": "30s", "application_name": "mcptasks",
		}},
		{"Options", dsn, &Options{StatementTimeout: 1500 * time.Millisecond}, map[string]string{
			"statement_timeout": "1500ms", "idle_in_transaction_session_timeout": "1500ms",
		}},
		{"DSNWins", pgtest.WithParam(pgtest.WithParam(dsn, "statement_timeout", "7000"), "application_name", "replica-3"), nil, map[string]string{
			"statement_timeout": "7s", "application_name": "replica-3",
		}},
		{"Disabled", dsn, &Options{StatementTimeout: -1}, map[string]string{
			"statement_timeout": "0", "idle_in_transaction_session_timeout": "0",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, tt.dsn, tt.opts)
			for k, want := range tt.settings {
				if got := show(s, k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}

	s := open(t, dsn, nil)
	var opts []string
	err := s.pool.QueryRow(context.Background(),
		`SELECT reloptions FROM pg_class WHERE oid = 'mcptasks_tasks'::regclass`).Scan(&opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fillfactor=70", "autovacuum_vacuum_scale_factor=0.01"} {
		if !strings.Contains(strings.Join(opts, " "), want) {
			t.Errorf("mcptasks_tasks storage parameters %q lack %s", opts, want)
		}
	}
}

// TestTimesTruncated checks that times keep milliseconds, and only them,
// as in every backend, though timestamptz could keep microseconds.
func TestTimesTruncated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	r := newTask("t1")
	r.CreatedAt = t0.Add(1500 * time.Microsecond)
	r.UpdatedAt = t0.Add(-500 * time.Microsecond)
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(t0.Add(time.Millisecond)) || !got.UpdatedAt.Equal(t0.Add(-time.Millisecond)) {
		t.Errorf("times = %v, %v; want them floored to the millisecond", got.CreatedAt, got.UpdatedAt)
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt in %v, want UTC", got.CreatedAt.Location())
	}
}

func TestInvalidJSON(t *testing.T) {
	t.Parallel()
	storetest.InvalidJSON(t, openTemp(t),
		func(r *task.Record) { r.Args = json.RawMessage(`{not json`) },
		func(r *task.Record) { r.Result = json.RawMessage(`[1,`) },
		func(r *task.Record) { r.Answers = map[string]json.RawMessage{"a": json.RawMessage(`{`)} },
	)
}

func TestContextCancelled(t *testing.T) {
	t.Parallel()
	storetest.ContextCancelled(t, openTemp(t))
}

// freezer is a TCP proxy in front of Postgres that can stop forwarding, as
// a database that hangs (a network partition, a stuck server) would.
type freezer struct {
	l      net.Listener
	target string
	frozen chan struct{} // closed by freeze
	done   chan struct{} // closed by stop
	once   sync.Once

	mu    sync.Mutex
	conns []net.Conn
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{l: l, target: target, frozen: make(chan struct{}), done: make(chan struct{})}
	go f.serve()
	return f
}

func (f *freezer) addr() string { return f.l.Addr().String() }

func (f *freezer) freeze() { f.once.Do(func() { close(f.frozen) }) }

func (f *freezer) stop() {
	close(f.done)
	f.l.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

func (f *freezer) serve() {
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, u)
		f.mu.Unlock()
		go f.pipe(u, c)
		go f.pipe(c, u)
	}
}

// pipe copies src to dst until either fails, holding back everything once
// frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-f.frozen:
				<-f.done
				return
			default:
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

// TestQueryTimeout checks that a database that stops answering makes calls
// fail within QueryTimeout, or the caller's deadline, instead of hanging.
func TestQueryTimeout(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		t.Skip("the test puts a TCP proxy in front of the server; MCPTASKS_POSTGRES_URL names a Unix socket")
	}
	// Migrate first, directly: through the proxy, under its short timeout,
	// the migrations need not finish on a loaded machine.
	direct, err := Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	direct.Close()
	f := newFreezer(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	host, port, _ := net.SplitHostPort(f.addr())
	proxied := pgtest.WithParam(pgtest.WithParam(dsn, "host", host), "port", port)
	const timeout = 500 * time.Millisecond
	// Migrate first, directly: the migrations may take longer than the
	// short timeout on a busy machine, and are not what the test checks.
	open(t, dsn, nil).Close()
	s, err := Open(context.Background(), proxied, &Options{QueryTimeout: timeout})
	if err != nil {
		f.stop()
		t.Fatalf("Open through the proxy: %v", err)
	}
	t.Cleanup(func() {
		// The proxy first: pgx sends a cancel request for each query that
		// timed out, and waits up to 15s for it, in Close, on a frozen
		// network.
		f.stop()
		s.Close()
	})
	ctx := context.Background()
	if err := s.Create(ctx, newTask("t1")); err != nil {
		t.Fatalf("Create: %v", err)
	}

	f.freeze()
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Get", func(ctx context.Context) error { _, err := s.Get(ctx, "t1"); return err }},
		{"Create", func(ctx context.Context) error { return s.Create(ctx, newTask("t2")) }},
		{"Claim", func(ctx context.Context) error {
			_, err := s.Claim(ctx, store.ClaimParams{Owner: "w", Now: t0, LeaseExpiresAt: t0.Add(time.Minute)})
			return err
		}},
		{"Answer", func(ctx context.Context) error {
			_, err := s.Answer(ctx, store.AnswerParams{ID: "t1", Principal: "alice", Now: t0})
			return err
		}},
		{"Listen", func(ctx context.Context) error { _, err := s.Listen(ctx); return err }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.call(ctx)
		if d := time.Since(start); err == nil || d > timeout+2*time.Second {
			t.Errorf("%s on a frozen database = %v after %v, want an error after about %v", c.name, err, d, timeout)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want it to wrap context.DeadlineExceeded", c.name, err)
		}
	}

	// A caller's own deadline wins over QueryTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Get(ctx, "t1"); err == nil || time.Since(start) > timeout {
		t.Errorf("Get with a 100ms deadline = %v after %v", err, time.Since(start))
	}
}

// TestClaim_ManyStores checks that four replicas claiming from one table at
// once never take the same task.
func TestClaim_ManyStores(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	const replicas, tasks = 4, 200
	stores := make([]*Store, replicas)
	for i := range stores {
		stores[i] = open(t, dsn, &Options{MaxConns: 4})
	}
	ctx := context.Background()
	for i := range tasks {
		r := newTask(fmt.Sprintf("t%03d", i))
		r.CreatedAt = t0.Add(time.Duration(i%13) * time.Millisecond)
		if err := stores[i%replicas].Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(time.Minute)
	var (
		mu     sync.Mutex
		owners = map[string]string{}
		wg     sync.WaitGroup
	)
	for i, s := range stores {
		for g := range 2 { // two workers per replica
			owner := fmt.Sprintf("r%d/w%d", i, g)
			wg.Go(func() {
				for {
					cs, err := s.Claim(ctx, store.ClaimParams{Owner: owner, Now: now, LeaseExpiresAt: now.Add(time.Hour), Limit: 3})
					if err != nil {
						t.Errorf("%s: Claim: %v", owner, err)
						return
					}
					if len(cs) == 0 {
						return
					}
					mu.Lock()
					for _, c := range cs {
						if prev, ok := owners[c.ID]; ok {
							t.Errorf("%s claimed by %s and %s", c.ID, prev, owner)
						}
						owners[c.ID] = owner
						if c.Attempt != 1 || c.Lost || c.LeaseOwner != owner {
							t.Errorf("%s: attempt %d lost %v owner %q", c.ID, c.Attempt, c.Lost, c.LeaseOwner)
						}
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(owners) != tasks {
		t.Errorf("%d tasks claimed, want %d", len(owners), tasks)
	}
	perOwner := map[string]int{}
	for _, o := range owners {
		perOwner[o]++
	}
	t.Logf("claims per worker: %v", perOwner)
	var n int
	if err := stores[0].pool.QueryRow(ctx, `SELECT count(*) FROM mcptasks_tasks WHERE attempt <> 1`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d tasks have an attempt other than 1", n)
	}
}

// TestQueryPlans checks that Get, Claim, Heartbeat, the row lock, the
// sweep, the counts of live tasks and the list of working ones read by
// index on a table of a realistic shape: mostly finished tasks, some live,
// half with a TTL.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	const rows = 5000
	_, err := s.pool.Exec(ctx, `
		INSERT INTO mcptasks_tasks (id, principal, tool, args, status, created_at, updated_at, ttl_ms, expires_at)
		SELECT 'id-' || g, 'alice', 'tool-' || (g % 5), '{}',
		       CASE WHEN g % 10 = 0 THEN 'working' ELSE 'completed' END,
		       $1::timestamptz + g * interval '1 second', $1::timestamptz + g * interval '1 second',
		       CASE WHEN g % 2 = 0 THEN 3600000 ELSE 0 END,
		       CASE WHEN g % 2 = 0 THEN $1::timestamptz + g * interval '1 second' + interval '1 hour' END
		FROM generate_series(1, $2::int) g`, t0, rows)
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE mcptasks_tasks`); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Hour + time.Minute) // a few dozen TTLs have elapsed
	claimAll, claimArgs := claimQuery(store.ClaimParams{Owner: "w", Now: now, LeaseExpiresAt: now.Add(time.Minute), Limit: 10}, "t")
	claimTools, toolArgs := claimQuery(store.ClaimParams{Owner: "w", Now: now, LeaseExpiresAt: now.Add(time.Minute), Limit: 10, Tools: []string{"tool-0", "tool-1"}}, "t")
	claimNoLimit, noLimitArgs := claimQuery(store.ClaimParams{Owner: "w", Now: now, LeaseExpiresAt: now.Add(time.Minute)}, "t")
	working, err := store.ListParams{Status: task.Working, Limit: 10}.Query()
	if err != nil {
		t.Fatal(err)
	}
	listWorking := dialect.List(working, columns)
	tests := []struct {
		name  string
		query string
		args  []any
		index string // the index the plan must use
	}{
		{"Get", getSQL, []any{"id-42"}, "mcptasks_tasks_pkey"},
		{"Lock", lockSQL, []any{"id-42"}, "mcptasks_tasks_pkey"},
		{"Update", updateSQL, []any{"id-42", "working", "", now, nil, nil, nil, nil, false, 1, "w", now, 0, nil, nil}, "mcptasks_tasks_pkey"},
		{"Heartbeat", heartbeatManySQL, []any{[]string{"id-42", "id-43"}, []int32{1, 1}, now, now}, "mcptasks_tasks_pkey"},
		{"Claim", claimAll, claimArgs, "mcptasks_tasks_claimable"},
		{"ClaimTools", claimTools, toolArgs, "mcptasks_tasks_claimable"},
		{"ClaimNoLimit", claimNoLimit, noLimitArgs, "mcptasks_tasks_claimable"},
		{"DeleteExpired", deleteExpiredSQL, []any{now, int64(100)}, "mcptasks_tasks_expires_at"},
		// The live tasks: the working and held ones by the claimable
		// index, those waiting for input by the status index.
		{"CountActive", countActiveSQL, []any{now}, "mcptasks_tasks_claimable"},
		{"CountActiveWaiting", countActiveSQL, []any{now}, "mcptasks_tasks_status"},
		{"CountTasks", countTasksSQL, []any{now, now}, "mcptasks_tasks_claimable"},
		{"CountTasksWaiting", countTasksSQL, []any{now, now}, "mcptasks_tasks_status"},
		{"Queue", queueSQL, []any{now}, "mcptasks_tasks_claimable"},
		{"QueueWaiting", queueSQL, []any{now}, "mcptasks_tasks_status"},
		{"ListWorking", listWorking.Page, listWorking.PageArgs, "mcptasks_tasks_claimable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := s.pool.Query(ctx, "EXPLAIN "+tt.query, tt.args...)
			if err != nil {
				t.Fatalf("EXPLAIN: %v", err)
			}
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, line)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			t.Logf("plan:\n%s", text)
			if strings.Contains(text, "Seq Scan") {
				t.Errorf("plan scans the table:\n%s", text)
			}
			if !strings.Contains(text, tt.index) {
				t.Errorf("plan does not use %s:\n%s", tt.index, text)
			}
		})
	}
}

// BenchmarkGet measures primary-key reads from 4×GOMAXPROCS goroutines.
func BenchmarkGet(b *testing.B) {
	storetest.BenchmarkGet(b, openTemp(b), 4)
}

func BenchmarkGetFor(b *testing.B) {
	storetest.BenchmarkGetFor(b, func(b *testing.B) store.Store { return openTemp(b) })
}

// BenchmarkCreate measures durable inserts from 4×GOMAXPROCS goroutines,
// with and without the created event.
func BenchmarkCreate(b *testing.B) {
	for _, bb := range []struct {
		name string
		opts *Options
	}{
		{"Notify", nil},
		{"DisableNotify", &Options{DisableNotify: true}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			storetest.BenchmarkCreate(b, open(b, pgtest.DSN(b), bb.opts), 4, false)
		})
	}
}

// TestHistoryClaimedBounds checks that the bounds written as literals in
// historyClaimed are those of package task.
func TestHistoryClaimedBounds(t *testing.T) {
	t.Parallel()
	for _, want := range []string{
		fmt.Sprintf("coalesce(history, '[]')) >= %d", task.MaxHistory),
		fmt.Sprintf("THEN history - %d ELSE", task.HistoryHead),
		fmt.Sprintf("'kind', '%s'", task.HistoryClaimed),
		fmt.Sprintf("left($3, %d)", task.MaxHistoryName),
	} {
		if !strings.Contains(historyClaimed, want) {
			t.Errorf("historyClaimed lacks %q", want)
		}
	}
}
