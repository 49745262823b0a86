package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

// TestFailureRedactsURL: an upstream error that carries the upstream's URL
// (net/http's *url.Error, wrapped by go-sdk) is shown to the task's client
// and logged without the URL's user information and query, which may
// carry a secret.
func TestFailureRedactsURL(t *testing.T) {
	var logged strings.Builder
	p := &Proxy{name: "http://h/mcp", log: slog.New(slog.NewTextHandler(&logged, nil))}
	err := fmt.Errorf("calling %q: %w", "tools/call", &url.Error{Op: "Post", URL: "http://bob:pw@h/mcp?key=SECRET#frag", Err: errors.New("dial tcp: connection refused")})
	e := p.failure(nil, "upstream %s: tools/call %q failed: %v", p.name, "t", err)
	for _, secret := range []string{"SECRET", "pw", "frag"} {
		if strings.Contains(e.Message, secret) || strings.Contains(logged.String(), secret) {
			t.Errorf("%q shown: %s; logged: %s", secret, e.Message, logged.String())
		}
	}
	if !strings.Contains(e.Message, `Post "http://h/mcp": dial tcp: connection refused`) {
		t.Errorf("message %q lacks the error and where it went", e.Message)
	}
}
