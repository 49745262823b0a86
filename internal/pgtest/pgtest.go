// Package pgtest gives each test a fresh, empty Postgres schema of its own, and skips the test when there is no Postgres to run it on.
//
// The server is the one named by the MCPTASKS_POSTGRES_URL environment
// variable, or [DefaultURL]. When it cannot be reached, [DSN] skips the
// test, unless MCPTASKS_REQUIRE_SERVICES=1 (CI sets it), in which case it
// fails the test: a CI run must not pass by skipping.
//
// A schema per test, not a database per test: creating a schema is cheap,
// tests run in parallel on one server without seeing each other's tables,
// and a schema is dropped with everything in it at the end of the test.
// NOTIFY channels are per database, not per schema: tests that listen use
// channel names of their own.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables that configure the package.
const (
	// EnvURL names the Postgres server tests use, as a URL or a
	// keyword/value connection string.
	EnvURL = "MCPTASKS_POSTGRES_URL"
	// EnvRequire, set to 1, turns a skip for an unreachable server into
	// a failure.
	EnvRequire = "MCPTASKS_REQUIRE_SERVICES"
)

// DefaultURL is the server used when MCPTASKS_POSTGRES_URL is unset: a
// local Postgres with trust authentication.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// connectTimeout bounds each connection pgtest makes itself, so that a
// server that does not answer skips the test instead of hanging it.
const connectTimeout = 5 * time.Second

// schemaPrefix starts the name of every schema pgtest creates:
// pgtest_<unix seconds>_<random hex>.
const schemaPrefix = "pgtest_"

// staleAfter is the age past which a schema left behind by a killed test
// run is dropped by the next run.
const staleAfter = 6 * time.Hour

// URL returns the connection string of the test server: MCPTASKS_POSTGRES_URL,
// or DefaultURL when it is unset.
func URL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

// DSN creates a new, empty schema for t and returns a connection string
// whose search_path is that schema alone, so that unqualified table names
// land in it. The schema is dropped, with everything in it, when t ends;
// close the connections made with the DSN before then (cleanups run last
// registered first, so a store closed in a later t.Cleanup is fine).
//
// DSN skips t when the server cannot be reached, or fails it if
// MCPTASKS_REQUIRE_SERVICES=1.
func DSN(t testing.TB) string {
	t.Helper()
	return dsn(t, URL(), os.Getenv(EnvRequire) == "1")
}

// dsn is DSN for the server at base.
func dsn(t testing.TB, base string, require bool) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		t.Fatalf("pgtest: %s is not a valid connection string: %v", EnvURL, err)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)

	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		if require {
			t.Fatalf("Postgres unreachable at %s: %v; %s=1 requires it", where, err, EnvRequire)
		}
		t.Skipf("Postgres unreachable at %s: %v; set %s", where, err, EnvURL)
	}
	defer conn.Close(context.Background())

	dropStaleOnce.Do(func() { dropStale(ctx, t, conn) })

	schema := newSchemaName(time.Now())
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	// The comment says which test made the schema, for whoever finds it.
	if _, err := conn.Exec(ctx, "COMMENT ON SCHEMA "+ident+" IS "+quote(t.Name())); err != nil {
		t.Fatalf("pgtest: comment on schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(base, schema)
}

// newSchemaName returns a fresh schema name that records when it was made.
func newSchemaName(now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return schemaPrefix + strconv.FormatInt(now.Unix(), 10) + "_" + hex.EncodeToString(b[:])
}

var schemaName = regexp.MustCompile(`^` + schemaPrefix + `([0-9]+)_[0-9a-f]+$`)

// dropStaleOnce makes the first DSN of a test process drop the schemas
// that killed runs left behind.
var dropStaleOnce sync.Once

// dropStale drops the pgtest schemas older than staleAfter. It only logs
// its failures: leftovers do not make a test wrong.
func dropStale(ctx context.Context, t testing.TB, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, schemaPrefix)
	if err != nil {
		t.Logf("pgtest: list stale schemas: %v", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Logf("pgtest: list stale schemas: %v", err)
		return
	}
	for _, name := range names {
		m := schemaName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		sec, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || time.Since(time.Unix(sec, 0)) < staleAfter {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Logf("pgtest: drop stale schema %s: %v", name, err)
		}
	}
}

// WithParam returns dsn, a postgres:// URL or a keyword/value string, with
// the connection parameter key set to value (application_name, say).
func WithParam(dsn, key, value string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set(key, value)
		// Spaces as %20: pgx, unlike net/url, does not read + as a space.
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String()
	}
	return strings.TrimSpace(dsn) + " " + key + "=" + value
}

// withSearchPath returns base with its search_path set to schema, through
// the options parameter that libpq understands too (psql "$DSN" works).
func withSearchPath(base, schema string) string {
	opt := "-csearch_path=" + schema
	if u, err := url.Parse(base); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		if o := q.Get("options"); o != "" {
			opt = o + " " + opt
		}
		q.Set("options", opt)
		// Spaces as %20: pgx, unlike net/url, does not read + as a space.
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String()
	}
	// A keyword/value string: a later keyword overrides an earlier one, so
	// an options keyword in base is replaced; pgtest does not merge it.
	return strings.TrimSpace(base) + " options='" + opt + "'"
}

// quote returns s as an SQL string literal.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
