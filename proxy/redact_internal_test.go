package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

// TestFailureRedactsURL: an upstream error that carries a URL with secrets
// (net/http's *url.Error, wrapped by go-sdk, or flattened into text by it)
// is shown to the task's client and logged without the URL's user
// information, query and fragment.
func TestFailureRedactsURL(t *testing.T) {
	const upstream = "http://bob:pw@h/mcp?key=SECRET#frag"
	dial := &url.Error{Op: "Post", URL: upstream, Err: errors.New("dial tcp: connection refused")}
	redirect := &url.Error{Op: "Get", URL: "http://other/mcp?token=SECRET", Err: errors.New("refused")}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"Wrapped", fmt.Errorf("calling %q: %w", "tools/call", dial), `Post "http://h/mcp": dial tcp: connection refused`},
		{"Flattened", fmt.Errorf("reconnecting: %v", dial), `Post "http://h/mcp": dial tcp: connection refused`},
		{"Redirect", fmt.Errorf("following: %w", redirect), `Get "http://other/mcp": refused`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logged strings.Builder
			p := &Proxy{up: Upstream{URL: upstream}, name: "http://h/mcp", log: slog.New(slog.NewTextHandler(&logged, nil))}
			e := p.failure(nil, "upstream %s: tools/call %q failed: %v", p.name, "t", tt.err)
			for _, secret := range []string{"SECRET", "pw", "frag"} {
				if strings.Contains(e.Message, secret) || strings.Contains(logged.String(), secret) {
					t.Errorf("%q shown: %s; logged: %s", secret, e.Message, logged.String())
				}
			}
			if !strings.Contains(e.Message, tt.want) {
				t.Errorf("message %q lacks %q", e.Message, tt.want)
			}
			if err := p.up.redacted(tt.err); strings.Contains(err.Error(), "SECRET") || !errors.Is(err, tt.err) {
				t.Errorf("redacted: %v (wrapping the error: %v)", err, errors.Is(err, tt.err))
			}
		})
	}
}
