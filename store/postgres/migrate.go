package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
)

// migrationFS holds the schema migrations, NNN_name.up.sql, numbered from 001
// without gaps. A change to the schema is a new file; applied files never
// change.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

const migrationDir = "migrations"

// loadMigrations reads the migrations in dir of fsys, ordered by version:
// see [sqlstore.LoadMigrations].
func loadMigrations(fsys fs.FS, dir string) ([]sqlstore.Migration, error) {
	ms, err := sqlstore.LoadMigrations(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
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
// transaction on conn that holds the migration lock, with no time limit
// but ctx's, and records each in
// mcptasks_migrations. It fails if the database has a version newer than
// the newest migration.
func migrate(ctx context.Context, conn *pgxpool.Conn, ms []sqlstore.Migration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// Nor do the server's timeouts (statement_timeout, which the dsn
		// or the role may set, lock_timeout) end a long migration, or the
		// wait for another replica's.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
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
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migrate: %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO mcptasks_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("migrate: %s: %w", m.Name, err)
			}
		}
		return nil
	})
}
