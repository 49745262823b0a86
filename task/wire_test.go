package task_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/task"
)

// TestMillis decodes ttlMs and pollIntervalMs from every JSON number, and
// refuses other values with an error that names the field.
func TestMillis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr string // substring of the error, if one is wanted
	}{
		{in: `900000`, want: 900000},
		{in: `900000.0`, want: 900000},
		{in: `9e5`, want: 900000},
		{in: `500.5`, want: 501},
		{in: `0.4`, want: 0},
		{in: `-1`, want: -1},
		{in: `"900000"`, wantErr: `cannot unmarshal string "900000" into Go struct field Info.ttlMs`},
		{in: `true`, wantErr: "cannot unmarshal bool into Go struct field Info.ttlMs"},
		{in: `{}`, wantErr: "cannot unmarshal object into Go struct field Info.ttlMs"},
		{in: `1e300`, wantErr: "cannot unmarshal number 1e300 into Go struct field Info.ttlMs"},
	} {
		var in task.Info
		err := json.Unmarshal([]byte(`{"ttlMs":`+tc.in+`}`), &in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ttlMs %s: error %v, want one containing %q", tc.in, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("ttlMs %s: %v", tc.in, err)
		case in.TTLMs == nil || int64(*in.TTLMs) != tc.want:
			t.Errorf("ttlMs %s: got %v, want %d", tc.in, in.TTLMs, tc.want)
		}
	}
	var in task.Info
	if err := json.Unmarshal([]byte(`{"ttlMs":null}`), &in); err != nil || in.TTLMs != nil {
		t.Errorf("ttlMs null: %v, %v; want nil", in.TTLMs, err)
	}
	if b, _ := json.Marshal(task.Info{TTLMs: new(task.Millis(900000))}); !strings.Contains(string(b), `"ttlMs":900000}`) {
		t.Errorf("encoded %s, want an integer ttlMs", b)
	}
}
