package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/mcptest"
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
	h := fuzzHandler(f, false)
	f.Fuzz(func(t *testing.T, method, name, body string) {
		rec := fuzzPost(h, method, name, body)
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

// FuzzFastPath sends each request to two servers on empty stores, one with
// the fast path and one without it (every request through go-sdk), and
// wants the same answer from both: the fast path takes only what go-sdk
// would take, and answers it as go-sdk would, for tasks/* and for the
// tools/call that create tasks. Answers are compared by HTTP status,
// JSON-RPC id, error code and result (an SSE reply counts as the JSON it
// carries; a created task's id and times, new on each server, are left
// out); the golden transcripts compare the full text.
func FuzzFastPath(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	metaElicit := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	for _, s := range []struct{ method, name, body string }{
		{"tasks/get", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + meta + `,"taskId":"x"}}`},
		{"tasks/get", "AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA", `{"jsonrpc":"2.0","id":"a","method":"tasks/get","params":{` + meta + `,"taskId":"AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA"}}`},
		{"tasks/update", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{` + meta + `,"taskId":"x","inputResponses":{"k":{}}}}`},
		{"tasks/cancel", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{` + meta + `,"taskId":"x"}}`},
		{"tasks/cancel", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"_meta":{},"taskId":"x"}}`},
		{"tasks/get", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"taskId":"x"}}`},
		{"tasks/get", "x", `{"jsonrpc":"2.0","id":1.5,"method":"tasks/get","params":{` + meta + `,"taskId":"x"}}`},
		{"tasks/get", "x", `{"jsonrpc":"2.0","id":1,"Method":"tasks/get","params":{` + meta + `,"TaskId":"x"}}`},
		{"tasks/get", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + meta + `,"taskId":"x"}} x`},
		{"tasks/get", "x", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + meta + `,"taskId":5}}`},
		{"tasks/get", "=?base64?eA==?=", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + meta + `,"taskId":"x"}}`},
		{"tools/call", "slow_compute", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"slow_compute","arguments":{"seconds":60,"label":"a"}}}`},
		{"tools/call", "slow_compute", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"slow_compute","arguments":{"seconds":"60"}}}`},
		{"tools/call", "failing_job", `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{` + meta + `,"name":"failing_job"}}`},
		{"tools/call", "export_report", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + metaElicit + `,"name":"export_report","arguments":{"rows":3}}}`},
		{"tools/call", "export_report", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"export_report","arguments":{"rows":3}}}`},
		{"tools/call", "test_tool_with_task", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + metaElicit + `,"name":"test_tool_with_task","arguments":{}}}`},
		{"tools/call", "confirm_delete", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{` + metaElicit + `,"name":"confirm_delete","arguments":{"filename":"a"},"requestState":"x"}}`},
		{"tools/call", "greet", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{` + meta + `,"name":"slow_compute","arguments":{"seconds":1}}}`},
		{"tools/call", "nope", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{` + meta + `,"name":"nope","arguments":{}}}`},
	} {
		f.Add(s.method, s.name, s.body)
	}
	fast, sdk := fuzzHandler(f, false), fuzzHandler(f, true)
	type answer struct {
		Status int
		ID     json.RawMessage
		Code   *int64
		Result json.RawMessage
	}
	ask := func(h http.Handler, method, name, body string) answer {
		rec := fuzzPost(h, method, name, body)
		out := rec.Body.String()
		if i := strings.LastIndex(out, "data: "); i >= 0 { // SSE: the last event
			out = out[i+len("data: "):]
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		a := answer{Status: rec.Code}
		if json.Unmarshal([]byte(out), &msg) == nil {
			a.ID, a.Result = msg.ID, withoutNewTask(msg.Result)
			if msg.Error != nil {
				a.Code = &msg.Error.Code
			}
		}
		return a
	}
	f.Fuzz(func(t *testing.T, method, name, body string) {
		if beyondFloat64ID(body) {
			t.Skip("go-sdk answers an integer id beyond 2^53 under the nearest float64; the fast path writes it exactly (TestReplyID)")
		}
		a, b := ask(fast, method, name, body), ask(sdk, method, name, body)
		if a.Status != b.Status || string(a.ID) != string(b.ID) || (a.Code == nil) != (b.Code == nil) ||
			(a.Code != nil && *a.Code != *b.Code) || !jsonSame(a.Result, b.Result) {
			t.Fatalf("Mcp-Method %q, Mcp-Name %q, body %q:\nfast path: HTTP %d id %s code %v result %s\ngo-sdk:    HTTP %d id %s code %v result %s",
				method, name, body, a.Status, a.ID, deref(a.Code), a.Result, b.Status, b.ID, deref(b.Code), b.Result)
		}
	})
}

// fuzzHandler returns the handler of a started server with the test tools
// on an empty memory store, running no handlers of tasks. Its tools run
// fast: a mutated request may call slow_compute or export_report inline
// (without the Tasks extension), within the request.
func fuzzHandler(tb testing.TB, noFastPath bool) http.Handler {
	srv := mcpserver.New(&mcp.Implementation{Name: "fuzz", Version: "1"}, &mcpserver.Options{DisableFastPath: noFastPath,
		Store: memory.New(), Engine: &engine.Options{Workers: -1}})
	if err := tasktools.Register(srv, &tasktools.Options{Step: time.Millisecond, Second: time.Microsecond}); err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv.Handler()
}

// fuzzPost is postRequest with a bound on the request: an inline call
// whose seconds were mutated into millions still ends within the fuzzer's
// limit of 10 s per input (FuzzFastPath sends each input twice).
func fuzzPost(h http.Handler, method, name, body string) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", "/mcp", strings.NewReader(body))
	mcptest.SetHeaders(req.Header, method, name)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// beyondFloat64ID reports whether body is a request whose id is an
// integer that a float64 does not hold exactly.
func beyondFloat64ID(body string) bool {
	var m struct{ ID json.RawMessage }
	if json.Unmarshal([]byte(body), &m) != nil {
		return false
	}
	n, err := strconv.ParseInt(string(m.ID), 10, 64)
	return err == nil && (n > 1<<53 || n < -(1<<53))
}

// withoutNewTask returns a CreateTaskResult without the values that differ
// between two servers creating the same task: its id and times. Other
// results are returned as they are.
func withoutNewTask(result json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || string(m["resultType"]) != `"task"` {
		return result
	}
	for _, k := range []string{"taskId", "createdAt", "lastUpdatedAt"} {
		if _, ok := m[k]; ok {
			m[k] = json.RawMessage(`"…"`)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return result
	}
	return b
}

// postRequest sends body to h as a POST with the headers of a 2026-07-28
// request of method about name.
func postRequest(h http.Handler, method, name, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	mcptest.SetHeaders(req.Header, method, name)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// tasksBody returns the body of a request for method whose _meta declares
// the Tasks extension, with the other params params.
func tasksBody(method, params string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},` + params + `}}`
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// jsonSame reports whether a and b are the same JSON value, or both absent.
func jsonSame(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
