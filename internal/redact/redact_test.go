package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/internal/redact"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://alice:s3cret@api.example/mcp?api_key=K#frag", "https://api.example/mcp"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"},
		{"http://h/p?", "http://h/p"},
		{"http://alice:s3cret@h.example/%zz", ""},
	} {
		if got := redact.URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	const raw = "http://alice:s3cret@h.example/mcp?api_key=TOPSECRET"
	const target = "https://other.example/x?token=REDIRECTED"
	u, _ := url.Parse(raw)
	for _, err := range []error{
		fmt.Errorf("tasks/get %s: %w", raw, &url.Error{Op: "Post", URL: u.Redacted(), Err: errors.New("EOF")}),
		fmt.Errorf("calling %q: %w", raw, errors.New("closed")),
		&url.Error{Op: "Get", URL: target, Err: errors.New("stopped after 10 redirects")},
	} {
		got := redact.Text(err.Error(), err, raw)
		for _, secret := range []string{"s3cret", "TOPSECRET", "REDIRECTED", "alice"} {
			if strings.Contains(got, secret) {
				t.Errorf("Text(%q) = %q: still has %q", err, got, secret)
			}
		}
	}
}
