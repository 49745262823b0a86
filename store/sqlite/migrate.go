package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"time"
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
		return nil, fmt.Errorf("sqlite: migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			return nil, fmt.Errorf("sqlite: migrations: %s: name is not NNN_name.up.sql", e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("sqlite: migrations: %s: %w", e.Name(), err)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("sqlite: migrations: %w", err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("sqlite: migrations: none in %s", dir)
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		switch {
		case i > 0 && m.version == ms[i-1].version:
			return nil, fmt.Errorf("sqlite: migrations: %s and %s have the same version %d", ms[i-1].name, m.name, m.version)
		case m.version != i+1:
			return nil, fmt.Errorf("sqlite: migrations: %s has version %d, want %d: versions run from 1 without gaps", m.name, m.version, i+1)
		}
	}
	return ms, nil
}

// migrate applies the migrations that db lacks, in one transaction, and
// records each in schema_migrations. It fails if db has a version newer
// than the newest migration.
func migrate(ctx context.Context, db *sql.DB, ms []migration) error {
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
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UnixMilli()); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
