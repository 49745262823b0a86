package mcpserver

import (
	"context"
	"io"
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
		ctx, cancel := context.WithCancel(context.Background())
		b := newStdioBridge(ctx, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "session not found", http.StatusNotFound)
		}), &out, cancel)
		if serve := b.accept(ctx, ctx, []byte(c.line)); serve != nil {
			serve()
		}
		cancel()
		if out.String() != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.line, out.String(), c.want)
		}
	}
}

// TestStdioReadsLikeHTTP: the bridge reads a line as the guard reads a
// body. Mcp-Name comes from the member its method names (another string
// member does not count: TASKS-SPEC §2.13); valid JSON of other shapes is
// the server's to answer, under its id, and only a line that is not JSON
// gets -32700 from the bridge; a notification gets nothing, whatever the
// server says of it (§2.2).
func TestStdioReadsLikeHTTP(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for _, c := range []struct {
		line string
		name string // the Mcp-Name the server must see; "-": not called
		want string // what the client must read
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + meta + `,"name":"x","taskId":"t1"}}`, "t1", "answer"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"taskId":"t1","name":"greet"}}`, "greet", "answer"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{` + meta + `,"name":"n","uri":"file:///a"}}`, "file:///a", "answer"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `,"name":"greet"}}`, "", "answer"},
		{`{"jsonrpc":"2.0","id":7,"method":5}`, "", "answer"},
		{`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"_meta":5,"taskId":"t1"}}`, "", "answer"},
		{`{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":5}}`, "", ""},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/list"`, "-", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not a JSON-RPC message"}}` + "\n"},
	} {
		var out strings.Builder
		name := "-"
		const answer = `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"refused"}}`
		ctx, cancel := context.WithCancel(context.Background())
		b := newStdioBridge(ctx, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name = r.Header.Get("Mcp-Name")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, answer)
		}), &out, cancel)
		if serve := b.accept(ctx, ctx, []byte(c.line)); serve != nil {
			serve()
		}
		cancel()
		want := c.want
		if want == "answer" {
			want = answer + "\n"
		}
		if name != c.name || out.String() != want {
			t.Errorf("%s:\nMcp-Name %q, want %q\nwrote %q\n want %q", c.line, name, c.name, out.String(), want)
		}
	}
}
