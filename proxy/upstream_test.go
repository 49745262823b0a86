package proxy

import (
	"errors"
	"io"
	"net/http"
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
		{"JSONOfTheLimit", strings.Repeat("x", max), true, false},
		{"JSONPastTheLimit", strings.Repeat("x", max+1), true, true},
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

// TestCancelWatchBoundsReplies: the transport of an HTTP upstream bounds
// its replies by message: a JSON reply whole, blank lines in it or not; an
// SSE stream event by event.
func TestCancelWatchBoundsReplies(t *testing.T) {
	chunk := strings.Repeat("x", 1<<20) + "\n\n" // blank lines: only between SSE events do they end a message
	big := strings.Repeat(chunk, maxUpstreamMessage/len(chunk)+1)
	for _, tt := range []struct {
		contentType string
		fail        bool
	}{
		{"application/json", true},
		{"text/event-stream; charset=utf-8", false},
		{"Text/Event-Stream", false},
	} {
		t.Run(tt.contentType, func(t *testing.T) {
			w := &cancelWatch{sent: make(chan struct{}), rt: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {tt.contentType}},
					Body: io.NopCloser(strings.NewReader(big)), Request: r}, nil
			})}
			req, _ := http.NewRequest(http.MethodGet, "http://up/mcp", nil)
			resp, err := w.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			if got := errors.Is(err, errMessageTooLarge); got != tt.fail {
				t.Errorf("reading %d bytes: %v; want a too-large error: %v", len(big), err, tt.fail)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
