package mcpserver

import (
	"encoding/json"
	"testing"
)

// clientMeta is the _meta of a typical 2026-07-28 tools/call.
const clientMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"wire-test","version":"1.0.0"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// TestTaskMetaKept: what a task keeps of _meta, member by member.
func TestTaskMetaKept(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, ``},
		{`null`, ``},
		{`{}`, ``},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7}`, ``},
		{clientMeta, `{"io.modelcontextprotocol/clientInfo":{"name":"wire-test","version":"1.0.0"}}`},
		{`{"b":1,"a":{"x":[1,{"y":[]}]},"progressToken":"p"}`, `{"b":1,"a":{"x":[1,{"y":[]}]}}`},
		{` { "a" : [ 1 , {"b":2} ] , "progressToken" : {"x":[]}, "c" : "}" } `, `{"a":[ 1 , {"b":2} ],"c":"}"}`},
		{`{"progress\u0054oken":1,"x\"y":2}`, `{"x\"y":2}`},
	} {
		got, err := taskMeta(json.RawMessage(c.in))
		if c.in == "" {
			got, err = taskMeta(nil)
		}
		if err != nil || string(got) != c.want {
			t.Errorf("taskMeta(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`[]`, `"x"`, `{"a":}`, `{"a":[}`} {
		if _, err := taskMeta(json.RawMessage(bad)); err == nil {
			t.Errorf("taskMeta(%s): no error", bad)
		}
	}
}

// BenchmarkTaskMeta is the cost a create pays to keep the _meta of a
// typical request.
func BenchmarkTaskMeta(b *testing.B) {
	raw := json.RawMessage(clientMeta)
	for b.Loop() {
		if kept, err := taskMeta(raw); err != nil || kept == nil {
			b.Fatal(kept, err)
		}
	}
}

// BenchmarkParse is the guard's decode of a typical tasks/get, the path of
// every poll.
func BenchmarkParse(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"_meta":` + clientMeta +
		`,"taskId":"AaI7FjRyf13lqkLz3wraOp5FskJ6Vkdb"}}`)
	for b.Loop() {
		var m message
		if code, _ := m.parse(body); code != 0 || m.Params.Meta == nil {
			b.Fatal(code)
		}
	}
}
