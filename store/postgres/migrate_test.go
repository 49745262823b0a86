package postgres

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	file := func(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }
	tests := []struct {
		name     string
		files    []string
		versions []int  // on success
		err      string // on failure, a part of the message
	}{
		{"One", []string{"001_init.up.sql"}, []int{1}, ""},
		{"Three", []string{"003_c.up.sql", "001_a.up.sql", "002_b.up.sql"}, []int{1, 2, 3}, ""},
		{"WideNumbers", []string{"0001_a.up.sql", "0002_b.up.sql"}, []int{1, 2}, ""},
		{"Gap", []string{"001_a.up.sql", "003_c.up.sql"}, nil, "has version 3, want 2"},
		{"NotFromOne", []string{"002_b.up.sql"}, nil, "has version 2, want 1"},
		{"Duplicate", []string{"001_a.up.sql", "002_b.up.sql", "002_c.up.sql"}, nil, "same version 2"},
		{"DuplicateDifferentWidth", []string{"001_a.up.sql", "1_b.up.sql"}, nil, "same version 1"},
		{"NoNumber", []string{"001_a.up.sql", "init.up.sql"}, nil, "init.up.sql: name is not"},
		{"NoUp", []string{"001_a.sql"}, nil, "001_a.sql: name is not"},
		{"Down", []string{"001_a.up.sql", "001_a.down.sql"}, nil, "001_a.down.sql: name is not"},
		{"Empty", nil, nil, "none in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"m": &fstest.MapFile{Mode: fs.ModeDir | 0o755}}
			for _, f := range tt.files {
				fsys["m/"+f] = file("SELECT 1;")
			}
			ms, err := loadMigrations(fsys, "m")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("loadMigrations = %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("loadMigrations: %v", err)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.version)
			}
			if len(got) != len(tt.versions) {
				t.Fatalf("versions = %v, want %v", got, tt.versions)
			}
			for i := range got {
				if got[i] != tt.versions[i] {
					t.Fatalf("versions = %v, want %v", got, tt.versions)
				}
			}
		})
	}
}

// TestEmbeddedMigrations checks the migrations this package ships.
func TestEmbeddedMigrations(t *testing.T) {
	t.Parallel()
	ms, err := loadMigrations(migrationFS, migrationDir)
	if err != nil {
		t.Fatalf("embedded migrations: %v", err)
	}
	if ms[0].name != "001_init.up.sql" {
		t.Errorf("first migration is %s", ms[0].name)
	}
}
