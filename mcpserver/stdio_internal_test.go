package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestStdioPlainError: a plain-text HTTP error of the handler (go-sdk's
// transport refusing a request) reaches the stdio client as a JSON-RPC
// error under the request's id, written as every reply writes ids: decoded,
// without HTML escapes. A refused notification gets nothing.
func TestStdioPlainError(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":"a<\u0042>","method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":"a<B>","error":{"code":-32600,"message":"session not found"}}` + "\n"},
		{`{"jsonrpc":"2.0","id":-0,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"session not found"}}` + "\n"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ""},
	} {
		var out strings.Builder
		b := &stdioBridge{out: &out,
			h: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "session not found", http.StatusNotFound)
			})}
		b.handle(context.Background(), []byte(c.line))
		if out.String() != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.line, out.String(), c.want)
		}
	}
}
