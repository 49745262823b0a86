package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
)

// fastPathCheckedSDK is the go-sdk version whose answers the fast path was
// last checked to reproduce: FuzzFastPath run against it for a while, and
// TestWire passing with the fast path on and off. The fast path answers
// tasks/* and task creation itself, copying what go-sdk checks and how it
// replies; a new go-sdk may check or answer differently.
const fastPathCheckedSDK = "v1.8.0"

// TestFastPath_CheckedAgainstSDK fails when go.mod moves go-sdk to another
// version than the one the fast path was checked against. Then run
//
//	go test ./mcpserver -run TestWire
//	go test ./mcpserver -run '^$' -fuzz FuzzFastPath -fuzztime 10m
//
// fix what differs, and update fastPathCheckedSDK.
func TestFastPath_CheckedAgainstSDK(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/modelcontextprotocol/go-sdk\s+(\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/modelcontextprotocol/go-sdk")
	}
	if regexp.MustCompile(`(?m)^\s*(?:replace\s+)?github\.com/modelcontextprotocol/go-sdk(\s+\S+)?\s*=>`).Match(mod) {
		t.Fatalf("go.mod replaces go-sdk, but the fast path was checked against go-sdk %s only", fastPathCheckedSDK)
	}
	if got := string(m[1]); got != fastPathCheckedSDK {
		t.Fatalf("go.mod requires go-sdk %s, but the fast path was checked against %s: run TestWire and FuzzFastPath "+
			"(see TestFastPath_CheckedAgainstSDK), fix what differs, then set fastPathCheckedSDK to %s", got, fastPathCheckedSDK, got)
	}
}

// TestReplyID checks the id of the reply on both routes, the fast path and
// go-sdk's: the id as go-sdk decodes and encodes it again, or an invalid
// request for an id that is neither a string nor an integer. An integer
// beyond 2^53, which go-sdk rounds, comes back exactly from the fast path.
func TestReplyID(t *testing.T) {
	t.Parallel()
	routes := map[string]http.Handler{"fast path": fuzzHandler(t, false), "go-sdk": fuzzHandler(t, true)}
	for _, c := range []struct {
		id, want string // want "" for an invalid request
	}{
		{`7`, `7`},
		{`-0`, `0`},
		{`9007199254740992`, `9007199254740992`},
		{`-9007199254740992`, `-9007199254740992`},
		{`9223372036854775808`, ``}, // beyond int64
		{`1.5`, ``},
		{`1e2`, ``},
		{`"a<b>&c"`, `"a<b>&c"`},
		{`"\u0041"`, `"A"`},
		{`"\/"`, `"/"`},
		{"\"\xff\"", "\"\uFFFD\""},
		{`"\ud800"`, "\"\uFFFD\""},
		{`"é"`, `"é"`},
		{`"\u00e9"`, `"é"`},
		{`"\u2028\n"`, `"\u2028\n"`},
		{`"\u0001"`, `"\u0001"`},
		{`[1]`, ``},
	} {
		body := `{"jsonrpc":"2.0","id":` + c.id + `,"method":"tasks/get","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"taskId":"x"}}`
		for route, h := range routes {
			rec := postRequest(h, "tasks/get", "x", body)
			var reply struct {
				ID    json.RawMessage
				Error struct{ Code int64 }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
				t.Fatalf("%s, id %s: %v in %q", route, c.id, err, rec.Body)
			}
			if c.want == "" {
				if rec.Code != http.StatusBadRequest || reply.Error.Code != -32600 {
					t.Errorf("%s, id %s: HTTP %d, error %d; want an invalid request (400, -32600)", route, c.id, rec.Code, reply.Error.Code)
				}
				continue
			}
			if string(reply.ID) != c.want {
				t.Errorf("%s, id %s: reply id %s, want %s", route, c.id, reply.ID, c.want)
			}
		}
	}
	beyond := `9007199254740993` // 2^53+1, a float64 no more
	body := `{"jsonrpc":"2.0","id":` + beyond + `,"method":"tasks/get","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"taskId":"x"}}`
	if out := postRequest(routes["fast path"], "tasks/get", "x", body).Body.String(); !strings.Contains(out, `"id":`+beyond+`,`) {
		t.Errorf("fast path, id %s: %q, want the id back exactly", beyond, out)
	}
	// The last event of a task subscription, which ends at once: its one
	// task is unknown.
	for route, h := range routes {
		body := `{"jsonrpc":"2.0","id":"a<b>","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"notifications":{"taskIds":["x"]}}}`
		out := postRequest(h, "subscriptions/listen", "", body).Body.String()
		if !strings.Contains(out, `{"jsonrpc":"2.0","id":"a<b>",`) {
			t.Errorf("%s: subscriptions/listen with id \"a<b>\": %q, want the final response with the id as sent", route, out)
		}
	}
}

// TestRoutesAgree sends requests that the fast path declines, or that are
// well-formed in unusual ways, to a server with the fast path and to one
// without it, and wants the same answer, as the rule of each case demands.
// Each case was an answer that differed between the routes, or broke a
// rule on both.
func TestRoutesAgree(t *testing.T) {
	t.Parallel()
	const noTasks = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	const tasks = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	cases := []struct {
		name            string
		method, mcpName string
		header          map[string]string // set over mcptest.SetHeaders'
		body            string
		status          int   // the HTTP status both must answer
		code            int64 // the JSON-RPC error code both must answer; 0: a result
	}{
		{
			// TASKS-SPEC §3.2, §3.12: go-sdk takes the media type in any
			// case, so the fast path declines it; the middleware refuses.
			name: "listen without the extension, media type in capitals", method: "subscriptions/listen",
			header: map[string]string{"Content-Type": "application/JSON"},
			body:   `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + noTasks + `,"notifications":{"taskIds":["x"]}}}`,
			status: http.StatusBadRequest, code: -32021,
		},
		{
			name: "listen without the extension, a params member of another shape", method: "subscriptions/listen",
			body:   `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + noTasks + `,"name":5,"notifications":{"taskIds":["x"]}}}`,
			status: http.StatusBadRequest, code: -32021,
		},
		{
			// TASKS-SPEC §3.13: Mcp-Name must equal params.taskId.
			name: "tasks/get with a wrong Mcp-Name and a params member of another shape", method: "tasks/get", mcpName: "y",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + tasks + `,"name":5,"taskId":"x"}}`,
			status: http.StatusBadRequest, code: -32020,
		},
		{
			name: "tasks/cancel without Mcp-Name, a params member of another shape", method: "tasks/cancel",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{` + tasks + `,"notifications":5,"taskId":"x"}}`,
			status: http.StatusBadRequest, code: -32020,
		},
		{
			// go-sdk parses the media type: a parameter without a value
			// is not application/json.
			name: "a media type parameter without a value", method: "tasks/get", mcpName: "x",
			header: map[string]string{"Content-Type": "application/json;foo"},
			body:   `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + tasks + `,"taskId":"x"}}`,
			status: http.StatusUnsupportedMediaType,
		},
		{
			// TASKS-SPEC §2.12: a POST's Last-Event-ID is ignored.
			name: "Last-Event-ID on a POST", method: "tasks/get", mcpName: "x",
			header: map[string]string{"Last-Event-ID": "1"},
			body:   `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + tasks + `,"taskId":"x"}}`,
			status: http.StatusBadRequest, code: -32602, // x is not found
		},
		// _meta values of other types than go-sdk's: it refuses them.
		{
			name: "clientInfo of another shape", method: "tools/call", mcpName: "slow_compute",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":5},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"name":"slow_compute","arguments":{"seconds":1}}}`,
			status: http.StatusBadRequest, code: -32602,
		},
		{
			name: "a capability of another shape", method: "tools/call", mcpName: "slow_compute",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":"x"},"extensions":{"io.modelcontextprotocol/tasks":{}}}},"name":"slow_compute","arguments":{"seconds":1}}}`,
			status: http.StatusBadRequest, code: -32602,
		},
		{
			name: "extensions not an object", method: "tasks/get", mcpName: "x",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":[]}},"taskId":"x"}}`,
			status: http.StatusBadRequest, code: -32602,
		},
		{
			// MaxTaskMetaBytes bounds the capabilities as go-sdk re-encodes
			// them: without their spaces.
			name: "capabilities padded with spaces past MaxTaskMetaBytes", method: "tools/call", mcpName: "slow_compute",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}` + strings.Repeat(" ", mcpserver.MaxTaskMetaBytes) + `}},"name":"slow_compute","arguments":{"seconds":1}}}`,
			status: http.StatusOK,
		},
		// Members given twice, and members a request does not have.
		{
			name: "params twice", method: "tools/call", mcpName: "slow_compute",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + tasks + `,"name":"slow_compute","arguments":{"seconds":1}},"params":{"name":"slow_compute"}}`,
			status: http.StatusBadRequest, code: -32602,
		},
		{
			name: "an error member", method: "tasks/get", mcpName: "x",
			body:   `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{` + tasks + `,"taskId":"x"},"error":5}`,
			status: http.StatusBadRequest, code: -32600,
		},
	}
	routes := map[string]http.Handler{"fast path": fuzzHandler(t, false), "go-sdk": fuzzHandler(t, true)}
	for _, c := range cases {
		for route, h := range routes {
			req := httptest.NewRequest("POST", "/mcp", strings.NewReader(c.body))
			mcptest.SetHeaders(req.Header, c.method, c.mcpName)
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			out := mcptest.LastMessage(rec.Body.Bytes())
			var msg struct {
				Error *struct{ Code int64 } `json:"error"`
			}
			_ = json.Unmarshal(out, &msg)
			var code int64
			if msg.Error != nil {
				code = msg.Error.Code
			}
			if rec.Code != c.status || code != c.code {
				t.Errorf("%s, %s: HTTP %d, code %d (%.300s), want HTTP %d, code %d", c.name, route, rec.Code, code, out, c.status, c.code)
			}
		}
	}
}
