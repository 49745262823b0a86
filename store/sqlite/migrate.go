package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

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
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return ms, nil
}

// migrate applies the migrations that db lacks, in one transaction, and
// records each in schema_migrations. It fails if db has a version newer
// than the newest migration.
func migrate(ctx context.Context, db *sql.DB, ms []sqlstore.Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback()
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL -- unix milliseconds
	)`
	if _, err := tx.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("migrate: database schema version %d is newer than this program's %d", current, len(ms))
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UnixMilli()); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
