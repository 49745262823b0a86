package pgtest

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens a connection on dsn that is closed when t ends.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func currentSchema(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var s *string
	if err := conn.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s == nil {
		t.Fatal("current_schema() is NULL: the search_path names no existing schema")
	}
	return *s
}

func TestDSN_FreshSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := connect(t, DSN(t))
	b := connect(t, DSN(t))

	sa, sb := currentSchema(t, a), currentSchema(t, b)
	if !schemaName.MatchString(sa) || !schemaName.MatchString(sb) || sa == sb {
		t.Fatalf("schemas %q and %q: want two distinct pgtest schemas", sa, sb)
	}
	var tables int
	if err := a.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("new schema has %d tables, want 0", tables)
	}

	// An unqualified table lands in the test's schema, unseen by the other.
	if _, err := a.Exec(ctx, `CREATE TABLE t (x int)`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, `CREATE TABLE t (y text)`); err != nil {
		t.Fatalf("the same table name in another test's schema: %v", err)
	}
	var where string
	if err := a.QueryRow(ctx, `SELECT schemaname FROM pg_tables WHERE tablename = 't' AND schemaname = $1`, sa).Scan(&where); err != nil {
		t.Fatalf("table t is not in %s: %v", sa, err)
	}

	var comment string
	if err := a.QueryRow(ctx, `SELECT obj_description(to_regnamespace($1), 'pg_namespace')`, sa).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if comment != t.Name() {
		t.Errorf("schema comment = %q, want the test name %q", comment, t.Name())
	}
}

func TestDSN_DroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var schema string
	t.Run("Use", func(t *testing.T) {
		conn := connect(t, DSN(t))
		schema = currentSchema(t, conn)
		if _, err := conn.Exec(context.Background(), `CREATE TABLE t (x int)`); err != nil {
			t.Fatal(err)
		}
	})
	if schema == "" {
		t.Skip("the subtest did not get a schema")
	}
	// Any connection to the server will do to look.
	conn := connect(t, URL())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("schema %s still exists after its test ended", schema)
	}
}

// recorder is a testing.TB whose Skip and Fatal record their message and
// end the goroutine, as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls dsn with r in a goroutine of its own, so that Goexit ends only it.
func (r *recorder) run(base string, require bool) (dsnReturned string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		dsnReturned = dsn(r, base, require)
	}()
	<-done
	return dsnReturned
}

// closedPort returns an address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestDSN_Unreachable(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	base := "postgres://postgres@" + addr + "/test?sslmode=disable&connect_timeout=2"
	tests := []struct {
		name    string
		require bool
	}{
		{"Skips", false},
		{"FailsWhenRequired", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			start := time.Now()
			if got := r.run(base, tt.require); got != "" {
				t.Fatalf("dsn returned %q for a closed port", got)
			}
			if d := time.Since(start); d > connectTimeout {
				t.Errorf("dsn took %v to give up on a closed port", d)
			}
			msg, other := r.skipped, r.failed
			if tt.require {
				msg, other = r.failed, r.skipped
			}
			if other != "" || !strings.Contains(msg, "Postgres unreachable at "+addr+"/test") {
				t.Fatalf("skipped %q, failed %q", r.skipped, r.failed)
			}
			want := "set " + EnvURL
			if tt.require {
				want = EnvRequire + "=1"
			}
			if !strings.Contains(msg, want) {
				t.Errorf("message %q does not say %q", msg, want)
			}
		})
	}
}

func TestDSN_BadURL(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	r.run("postgres://host:notaport/db", false)
	if r.failed == "" || r.skipped != "" || !strings.Contains(r.failed, EnvURL) {
		t.Errorf("skipped %q, failed %q; want a failure naming %s", r.skipped, r.failed, EnvURL)
	}
}

func TestWithSearchPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base string
		options    string // the options run-time parameter pgx sends
	}{
		{"URL", "postgres://u@h:5432/db?sslmode=disable", "-csearch_path=s1"},
		{"URLWithOptions", "postgres://u@h/db?options=-cwork_mem%3D8MB", "-cwork_mem=8MB -csearch_path=s1"},
		{"PostgresqlScheme", "postgresql://u@h/db", "-csearch_path=s1"},
		{"KeywordValue", "host=h user=u dbname=db sslmode=disable", "-csearch_path=s1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withSearchPath(tt.base, "s1")
			cfg, err := pgx.ParseConfig(got)
			if err != nil {
				t.Fatalf("ParseConfig(%q): %v", got, err)
			}
			if o := cfg.RuntimeParams["options"]; o != tt.options {
				t.Errorf("withSearchPath(%q) = %q: options %q, want %q", tt.base, got, o, tt.options)
			}
			if cfg.Host != "h" || cfg.User != "u" || cfg.Database != "db" {
				t.Errorf("withSearchPath(%q) = %q lost the target", tt.base, got)
			}
		})
	}
}

func TestNewSchemaName(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	a, b := newSchemaName(now), newSchemaName(now)
	if a == b {
		t.Errorf("two names are both %q", a)
	}
	m := schemaName.FindStringSubmatch(a)
	if m == nil || m[1] != "1800000000" {
		t.Errorf("name %q does not carry its time", a)
	}
	if len(a) > 63 {
		t.Errorf("name %q is longer than an identifier may be", a)
	}
}
