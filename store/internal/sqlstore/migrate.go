package sqlstore

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
)

// Migration is one numbered schema change, read from a file
// NNN_name.up.sql.
type Migration struct {
	Version int
	Name    string // file name
	SQL     string
}

var migrationName = regexp.MustCompile(`^([0-9]+)_[a-z0-9_]+\.up\.sql$`)

// LoadMigrations reads the migrations in dir of fsys, ordered by version. It
// rejects a file whose name is not NNN_name.up.sql, two files with one
// version, and versions that do not run 1, 2, 3… without a gap. Its errors
// start with "migrations: ".
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			return nil, fmt.Errorf("migrations: %s: name is not NNN_name.up.sql", e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("migrations: %s: %w", e.Name(), err)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("migrations: none in %s", dir)
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		switch {
		case i > 0 && m.Version == ms[i-1].Version:
			return nil, fmt.Errorf("migrations: %s and %s have the same version %d", ms[i-1].Name, m.Name, m.Version)
		case m.Version != i+1:
			return nil, fmt.Errorf("migrations: %s has version %d, want %d: versions run from 1 without gaps", m.Name, m.Version, i+1)
		}
	}
	return ms, nil
}
