package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
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
