package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/client"
)

// TestExplainNotFound: an HTTP 404 of a call sent to a path other than
// /mcp says where MCP endpoints usually are, with the URL to try (without
// the URL's password); a 404 at /mcp, of a task's poll, or another status
// is left as it is.
func TestExplainNotFound(t *testing.T) {
	notFound := &client.HTTPError{StatusCode: 404, Body: "404 page not found", Method: "tools/call"}
	for _, tt := range []struct {
		name, endpoint string
		err            error
		hint           string // "" for none
	}{
		{"Root", "http://127.0.0.1:8080/", notFound, "try http://127.0.0.1:8080/mcp"},
		{"NoPath", "http://127.0.0.1:8080", notFound, "try http://127.0.0.1:8080/mcp"},
		{"OtherPath", "https://u:s3cret@example.com/api?x=1", notFound, "try https://u:xxxxx@example.com/mcp"},
		{"Discover", "http://127.0.0.1:8080/", &client.HTTPError{StatusCode: 404, Method: "server/discover"}, "try http://127.0.0.1:8080/mcp"},
		{"AtMCP", "http://127.0.0.1:8080/mcp", notFound, ""},
		{"Poll", "http://127.0.0.1:8080/", &client.HTTPError{StatusCode: 404, Method: "tasks/get"}, ""},
		{"OtherStatus", "http://127.0.0.1:8080/", &client.HTTPError{StatusCode: 500, Method: "tools/call"}, ""},
		{"NotHTTP", "http://127.0.0.1:8080/", errors.New("connection refused"), ""},
		{"Nil", "http://127.0.0.1:8080/", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := explainNotFound(tt.endpoint, tt.err)
			if tt.hint == "" {
				if got != tt.err {
					t.Errorf("got %v, want %v as it is", got, tt.err)
				}
				return
			}
			if !errors.Is(got, tt.err) || !strings.HasPrefix(got.Error(), tt.err.Error()+"\n") || !strings.Contains(got.Error(), tt.hint) || strings.Contains(got.Error(), "s3cret") {
				t.Errorf("got %q; want %q, then a line with %q", got, tt.err, tt.hint)
			}
		})
	}
}
