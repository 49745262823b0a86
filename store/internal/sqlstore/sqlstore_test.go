package sqlstore_test

import (
	"encoding/json"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/task"
)

func TestAddCount(t *testing.T) {
	t.Parallel()
	var c store.ActiveCounts
	sqlstore.AddCount(&c, "working", 5, 2)
	sqlstore.AddCount(&c, "input_required", 3, 1)
	if want := (store.ActiveCounts{Working: 5, InputRequired: 3, Queued: 3}); c != want {
		t.Fatalf("counts = %+v, want %+v", c, want)
	}
}

func TestEncodeDecodeRaws(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   map[string]json.RawMessage
		enc  any                        // EncodeRaws(in)
		dec  map[string]json.RawMessage // DecodeRaws of enc
	}{
		{"Nil", nil, nil, nil},
		{"Empty", map[string]json.RawMessage{}, nil, nil},
		{
			"SortedKeys",
			map[string]json.RawMessage{"b": json.RawMessage(`2`), "a": json.RawMessage(`{"x": [1, 2]}`), "c": json.RawMessage(`"s"`)},
			`{"a":{"x": [1, 2]},"b":2,"c":"s"}`,
			map[string]json.RawMessage{"a": json.RawMessage(`{"x": [1, 2]}`), "b": json.RawMessage(`2`), "c": json.RawMessage(`"s"`)},
		},
		{
			"EmptyValueIsNull",
			map[string]json.RawMessage{"a": nil, "b": {}},
			`{"a":null,"b":null}`,
			map[string]json.RawMessage{"a": json.RawMessage(`null`), "b": json.RawMessage(`null`)},
		},
		{
			"SpaceTrimmedKeyEscaped",
			map[string]json.RawMessage{`q"k`: json.RawMessage(" \n true \t")},
			`{"q\"k":true}`,
			map[string]json.RawMessage{`q"k`: json.RawMessage(`true`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			enc, err := sqlstore.EncodeRaws(tt.in)
			if err != nil {
				t.Fatalf("EncodeRaws: %v", err)
			}
			if enc != tt.enc {
				t.Fatalf("EncodeRaws = %#v, want %#v", enc, tt.enc)
			}
			var b []byte
			if s, ok := enc.(string); ok {
				b = []byte(s)
			}
			dec, err := sqlstore.DecodeRaws(b)
			if err != nil {
				t.Fatalf("DecodeRaws: %v", err)
			}
			if (dec == nil) != (tt.dec == nil) || !maps.EqualFunc(dec, tt.dec, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
				t.Fatalf("DecodeRaws = %q, want %q", dec, tt.dec)
			}
		})
	}
}

func TestEncodeRawsInvalid(t *testing.T) {
	t.Parallel()
	enc, err := sqlstore.EncodeRaws(map[string]json.RawMessage{"a": json.RawMessage(`1`), "bad": json.RawMessage(`{nope`)})
	if err == nil || !strings.Contains(err.Error(), `key "bad": not valid JSON`) {
		t.Fatalf("EncodeRaws = %v, %v, want an error about key \"bad\"", enc, err)
	}
}

func TestDecodeRawsInvalid(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{nope`, `[1]`, `"s"`} {
		if m, err := sqlstore.DecodeRaws([]byte(in)); err == nil {
			t.Errorf("DecodeRaws(%s) = %q, want an error", in, m)
		}
	}
}

func TestEncodeDecodeError(t *testing.T) {
	t.Parallel()
	if v, err := sqlstore.EncodeError(nil); v != nil || err != nil {
		t.Fatalf("EncodeError(nil) = %v, %v, want nil, nil", v, err)
	}
	if e, err := sqlstore.DecodeError(nil); e != nil || err != nil {
		t.Fatalf("DecodeError(nil) = %v, %v, want nil, nil", e, err)
	}
	in := &task.Error{Code: -32000, Message: `a "b"`, Data: json.RawMessage(` {"k": 1} `)}
	enc, err := sqlstore.EncodeError(in)
	if err != nil {
		t.Fatalf("EncodeError: %v", err)
	}
	if want := `{"code":-32000,"message":"a \"b\"","data":{"k": 1}}`; enc != want {
		t.Fatalf("EncodeError = %#v, want %#v", enc, want)
	}
	out, err := sqlstore.DecodeError([]byte(enc.(string)))
	if err != nil {
		t.Fatalf("DecodeError: %v", err)
	}
	if out.Code != in.Code || out.Message != in.Message || string(out.Data) != `{"k": 1}` {
		t.Fatalf("DecodeError = %+v, want %+v", out, in)
	}
	if _, err := sqlstore.EncodeError(&task.Error{Data: json.RawMessage(`{nope`)}); err == nil || !strings.HasPrefix(err.Error(), "data: ") {
		t.Fatalf("EncodeError of invalid data = %v, want a data: error", err)
	}
}

func TestRawValueFrom(t *testing.T) {
	t.Parallel()
	if v := sqlstore.RawValue(nil); v != nil {
		t.Errorf("RawValue(nil) = %#v, want nil", v)
	}
	if v := sqlstore.RawValue(json.RawMessage(`{}`)); v != "{}" {
		t.Errorf("RawValue({}) = %#v, want the string {}", v)
	}
	if r := sqlstore.RawFrom([]byte{}); r != nil {
		t.Errorf("RawFrom(empty) = %q, want nil", r)
	}
	if r := sqlstore.RawFrom([]byte(`1`)); string(r) != "1" {
		t.Errorf("RawFrom(1) = %q, want 1", r)
	}
}

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
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
		{"Directory", []string{"001_a.up.sql", "002_b.up.sql/"}, nil, "002_b.up.sql: name is not"},
		{"Empty", nil, nil, "none in m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{"m": &fstest.MapFile{Mode: fs.ModeDir | 0o755}}
			for _, f := range tt.files {
				if dir, ok := strings.CutSuffix(f, "/"); ok {
					fsys["m/"+dir] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
					continue
				}
				fsys["m/"+f] = &fstest.MapFile{Data: []byte("SELECT " + f + ";")}
			}
			ms, err := sqlstore.LoadMigrations(fsys, "m")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("LoadMigrations = %v, want an error containing %q", err, tt.err)
				}
				if !strings.HasPrefix(err.Error(), "migrations: ") {
					t.Errorf("error %q does not start with %q", err, "migrations: ")
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadMigrations: %v", err)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.Version)
				if want := "SELECT " + m.Name + ";"; m.SQL != want {
					t.Errorf("%s: SQL = %q, want %q", m.Name, m.SQL, want)
				}
			}
			if !slices.Equal(got, tt.versions) {
				t.Fatalf("versions = %v, want %v", got, tt.versions)
			}
		})
	}
}

func TestLoadMigrationsNoDir(t *testing.T) {
	t.Parallel()
	if _, err := sqlstore.LoadMigrations(fstest.MapFS{}, "m"); err == nil || !strings.HasPrefix(err.Error(), "migrations: ") {
		t.Fatalf("LoadMigrations of a missing dir = %v, want a migrations: error", err)
	}
}
