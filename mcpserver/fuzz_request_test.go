package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/tasktools"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// FuzzRequest sends arbitrary bodies with arbitrary method and name headers
// to the whole handler. It must never panic or answer 5xx, and every 4xx
// to a request (not a notification, whose error body is optional) must
// carry a JSON-RPC error body (TASKS-SPEC §2.12).
func FuzzRequest(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	for _, s := range []struct{ method, name, body string }{
		{"tasks/get", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + meta + `,"taskId":"x"}}`},
		{"tasks/update", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{` + meta + `,"taskId":"x","inputResponses":{"k":{}}}}`},
		{"tools/call", "slow_compute", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"slow_compute","arguments":{"seconds":0}}}`},
		{"tools/call", "export_report", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{` + meta + `,"name":"export_report","arguments":{"rows":"x"}}}`},
		{"tasks/cancel", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel"}`},
		{"", "", `{"jsonrpc":"2.0","id":1}`},
		{"tasks/get", "x", `[1,2]`},
		{"tasks/get", "x", `{`},
	} {
		f.Add(s.method, s.name, s.body)
	}
	srv := mcpserver.New(&mcp.Implementation{Name: "fuzz", Version: "1"}, nil)
	if err := tasktools.Register(srv, nil); err != nil {
		f.Fatal(err)
	}
	eng, err := engine.New(memory.New(), srv.EngineTools(), &engine.Options{Workers: -1})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler(eng)
	f.Fuzz(func(t *testing.T, method, name, body string) {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(context.Background()))
		if rec.Code >= 500 {
			t.Fatalf("HTTP %d for %q: %s", rec.Code, body, rec.Body)
		}
		var m map[string]json.RawMessage
		isNotification := json.Unmarshal([]byte(body), &m) == nil && m["id"] == nil && m["method"] != nil
		if rec.Code >= 400 && rec.Code != http.StatusNotFound && !isNotification {
			var msg struct {
				Error *struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(rec.Body.Bytes(), &msg) != nil || msg.Error == nil {
				t.Fatalf("HTTP %d without a JSON-RPC error body for %q (Mcp-Method %q): %q", rec.Code, body, method, rec.Body)
			}
		}
	})
}
