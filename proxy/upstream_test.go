package proxy

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestMessageLimit checks the bound on one message of an HTTP upstream: a
// JSON reply larger than it fails, blank lines in it or not; an SSE stream
// of many small events, larger in all, does not, and one large event in it
// fails.
func TestMessageLimit(t *testing.T) {
	const max = 100
	event := func(n int) string { return "data: " + strings.Repeat("x", n) + "\r\n\r\n" }
	tests := []struct {
		name  string
		body  string
		whole bool // a JSON reply, not an SSE stream
		fail  bool
	}{
		{"SmallJSON", `{"result":"` + strings.Repeat("x", 80) + `"}`, true, false},
		{"LargeJSON", `{"result":"` + strings.Repeat("x", 200) + `"}`, true, true},
		{"LargeJSONWithBlankLines", `{"result":[` + strings.Repeat(`"xxxxxxxxxx",`+"\n\n", 20) + `1]}`, true, true},
		{"ManySmallEvents", strings.Repeat(event(80), 50), false, false},
		{"OneLargeEvent", event(80) + event(200) + event(10), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &messageLimit{rc: io.NopCloser(strings.NewReader(tt.body)), max: max, whole: tt.whole}
			b, err := io.ReadAll(l)
			if got := errors.Is(err, errMessageTooLarge); got != tt.fail {
				t.Fatalf("read %d of %d bytes: error %v; want a too-large error: %v", len(b), len(tt.body), err, tt.fail)
			}
			if !tt.fail && string(b) != tt.body {
				t.Errorf("read %q, want the body unchanged", b)
			}
		})
	}
}
