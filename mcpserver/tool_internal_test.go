package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestHasDefaults: a schema has defaults for withDefaults where
// ApplyDefaults looks for them, in its properties at any depth, and only
// there.
func TestHasDefaults(t *testing.T) {
	for _, c := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object"}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, false},
		{`{"type":"object","properties":{"a":{"type":"string","default":"x"}}}`, true},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer","default":1}}}}}`, true},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"default":1}}}}}}`, false},
	} {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(c.schema), &s); err != nil {
			t.Fatal(err)
		}
		if got := hasDefaults(&s); got != c.want {
			t.Errorf("hasDefaults(%s) = %v, want %v", c.schema, got, c.want)
		}
	}
}
