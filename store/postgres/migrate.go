package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFS holds the schema migrations, NNN_name.up.sql, numbered from 001
// without gaps. A change to the schema is a new file; applied files never
// change.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

const migrationDir = "migrations"

// migration is one numbered schema change.
type migration struct {
	version int
	name    string // file name
	sql     string
}

var migrationName = regexp.MustCompile(`^([0-9]+)_[a-z0-9_]+\.up\.sql$`)

// loadMigrations reads the migrations in dir of fsys, ordered by version. It
// rejects a file whose name is not NNN_name.up.sql, two files with one
// version, and versions that do not run 1, 2, 3… without a gap.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			return nil, fmt.Errorf("postgres: migrations: %s: name is not NNN_name.up.sql", e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("postgres: migrations: %s: %w", e.Name(), err)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("postgres: migrations: %w", err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("postgres: migrations: none in %s", dir)
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		switch {
		case i > 0 && m.version == ms[i-1].version:
			return nil, fmt.Errorf("postgres: migrations: %s and %s have the same version %d", ms[i-1].name, m.name, m.version)
		case m.version != i+1:
			return nil, fmt.Errorf("postgres: migrations: %s has version %d, want %d: versions run from 1 without gaps", m.name, m.version, i+1)
		}
	}
	return ms, nil
}

// migrationLockSQL takes the transaction-scoped advisory lock that
// serializes the migrations of one schema: replicas that start at once wait
// for the first, then find nothing left to do. The key is derived from the
// schema, so that tests in schemas of their own do not wait for each other.
const migrationLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('mcptasks_migrations:' || $1, 0))`

// createMigrationsSQL creates the table of applied versions.
const createMigrationsSQL = `CREATE TABLE IF NOT EXISTS mcptasks_migrations (
	version    integer     NOT NULL PRIMARY KEY,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// migrate applies the migrations that the database lacks, in one
// transaction that holds the migration lock, and records each in
// mcptasks_migrations. It fails if the database has a version newer than
// the newest migration.
func migrate(ctx context.Context, pool *pgxpool.Pool, ms []migration) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if schema == nil {
			return errors.New("migrate: no schema of the search_path exists: create it, or fix search_path in the dsn")
		}
		if _, err := tx.Exec(ctx, migrationLockSQL, *schema); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, createMigrationsSQL); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM mcptasks_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if current > len(ms) {
			return fmt.Errorf("migrate: schema %s is at version %d, newer than this program's %d", *schema, current, len(ms))
		}
		for _, m := range ms[current:] {
			// Without arguments, Exec uses the simple protocol, which runs
			// the file's many statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migrate: %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO mcptasks_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("migrate: %s: %w", m.name, err)
			}
		}
		return nil
	})
}
