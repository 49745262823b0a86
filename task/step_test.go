package task

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckStep(t *testing.T) {
	tests := []struct {
		name, step string
		result     string
		want       error // nil: accepted
	}{
		{"ok", "query", `{"rows":1}`, nil},
		{"null", "query", `null`, nil},
		{"at the bound", "query", `"` + strings.Repeat("x", MaxStepBytes-2) + `"`, nil},
		{"over the bound", "query", `"` + strings.Repeat("x", MaxStepBytes-1) + `"`, ErrStepTooLarge},
		{"no name", "", `1`, ErrInvalidStep},
		{"long name", strings.Repeat("n", MaxStepName+1), `1`, ErrInvalidStep},
		{"invalid JSON", "query", `{`, ErrInvalidStep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckStep(tt.step, json.RawMessage(tt.result))
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("CheckStep = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestRecordSteps: Size counts a record's steps, and Clone copies them.
func TestRecordSteps(t *testing.T) {
	r := &Record{ID: "t"}
	base := r.Size()
	r.Steps = map[string]json.RawMessage{"query": json.RawMessage(`[1,2,3]`)}
	if got, want := r.Size()-base, int64(64+len("query")+len("[1,2,3]")); got != want {
		t.Errorf("a step adds %d to Size, want %d", got, want)
	}
	c := r.Clone()
	c.Steps["query"][1] = '9'
	c.Steps["other"] = json.RawMessage(`1`)
	if string(r.Steps["query"]) != "[1,2,3]" || len(r.Steps) != 1 {
		t.Errorf("changing a clone changed the steps: %s", r.Steps)
	}
	if n := StepsBytes(r.Steps); n != len("query")+len("[1,2,3]") {
		t.Errorf("StepsBytes = %d", n)
	}
}
