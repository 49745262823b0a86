package sqlstore_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/task"
)

// TestRecords: the map holds at most its count and its bytes, keeps the
// last record put when it fits, counts bytes exactly through replaces and
// removals, and never keeps a record over a sixteenth of the byte bound.
func TestRecords(t *testing.T) {
	rec := func(id string, argBytes int) *task.Record {
		return &task.Record{ID: id, Args: json.RawMessage(`{"x":"` + strings.Repeat("a", argBytes) + `"}`)}
	}
	small := rec("a", 100).Size() // every id is one byte long
	var many []*task.Record
	for _, id := range strings.Split("abcdefghijklmnopqrst", "") {
		many = append(many, rec(id, 100))
	}
	for _, c := range []struct {
		name     string
		max      int
		maxBytes int64
		puts     []*task.Record
		remove   string
		wantLen  int
		last     string // the id that must be held, if any
		absent   string // the id that must not be held, if any
	}{
		{name: "count bound", max: 2, maxBytes: 1 << 20,
			puts: []*task.Record{rec("a", 100), rec("b", 100), rec("c", 100)}, wantLen: 2, last: "c"},
		{name: "byte bound", max: 100, maxBytes: 16 * small,
			puts: many, wantLen: 16, last: "t"},
		{name: "replace", max: 2, maxBytes: 1 << 20,
			puts: []*task.Record{rec("a", 100), rec("b", 100), rec("a", 900)}, wantLen: 2, last: "a"},
		{name: "too large", max: 10, maxBytes: 16 * small,
			puts: []*task.Record{rec("a", 100), rec("b", 101)}, wantLen: 1, last: "a", absent: "b"},
		{name: "remove", max: 10, maxBytes: 1 << 20,
			puts: []*task.Record{rec("a", 100), rec("b", 100)}, remove: "a", wantLen: 1, last: "b", absent: "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := sqlstore.NewRecords(c.max, c.maxBytes)
			for _, r := range c.puts {
				m.Put(r, r.Size())
			}
			if c.remove != "" {
				m.Remove(c.remove)
			}
			var sum int64
			m.Each(func(r *task.Record) { sum += r.Size() })
			if m.Len() != c.wantLen || m.Bytes() != sum || sum > c.maxBytes {
				t.Errorf("%d records, counted %d bytes, they hold %d; want %d records, counted exactly, at most %d bytes", m.Len(), m.Bytes(), sum, c.wantLen, c.maxBytes)
			}
			if c.last != "" && m.Get(c.last) == nil {
				t.Errorf("%s is not held", c.last)
			}
			if c.absent != "" && m.Get(c.absent) != nil {
				t.Errorf("%s is held", c.absent)
			}
			m.Clear()
			if m.Len() != 0 || m.Bytes() != 0 {
				t.Errorf("after Clear: %d records, %d bytes", m.Len(), m.Bytes())
			}
		})
	}
}
