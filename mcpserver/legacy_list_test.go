package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/mcpserver"
)

// legacySession is a 2025-11-25 session of one principal on c.
type legacySession struct {
	t     *testing.T
	c     *testClient
	token string
	id    string
}

// initialize opens a session as the principal of token.
func initialize(t *testing.T, c *testClient, token string) *legacySession {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + token}}
	resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h,
		body: []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)})
	sid := resp.header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: HTTP %d, no session: %s", resp.status, resp.body)
	}
	return &legacySession{t: t, c: c, token: token, id: sid}
}

// call sends one request in the session and returns its reply.
func (s *legacySession) call(method, params string) *rpcReply {
	s.t.Helper()
	h := http.Header{"Authorization": {"Bearer " + s.token}, "Mcp-Session-Id": {s.id}, "Mcp-Protocol-Version": {"2025-11-25"}}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	return s.c.do(s.t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(body)}).reply(s.t)
}

// TestLegacyListPages: tasks/list pages through all of a principal's
// 2025-11-25 tasks, newest first, each once; another principal lists none
// of them and cannot read them, and its session does not serve the first.
func TestLegacyListPages(t *testing.T) {
	c := startServer(t, serverConfig{tokens: mcpserver.Tokens{"a-token": "alice", "b-token": "bob"}})
	alice, bob := initialize(t, c, "a-token"), initialize(t, c, "b-token")
	const n = 55 // more than one page
	var created []string
	for range n {
		rep := alice.call("tools/call", `{"name":"slow_compute","arguments":{"seconds":60},"task":{}}`)
		var cr struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if rep.Error != nil || json.Unmarshal(rep.Result, &cr) != nil || cr.Task.TaskID == "" {
			t.Fatalf("tools/call: %s", rep.raw)
		}
		created = append(created, cr.Task.TaskID)
	}

	type page struct {
		Tasks []struct {
			TaskID    string `json:"taskId"`
			CreatedAt string `json:"createdAt"`
		} `json:"tasks"`
		NextCursor string `json:"nextCursor"`
	}
	var listed, times []string
	pages := 0
	for cursor := ""; pages == 0 || cursor != ""; pages++ {
		params := "{}"
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		rep := alice.call("tasks/list", params)
		var p page
		if rep.Error != nil || json.Unmarshal(rep.Result, &p) != nil {
			t.Fatalf("tasks/list: %s", rep.raw)
		}
		for _, tk := range p.Tasks {
			listed, times = append(listed, tk.TaskID), append(times, tk.CreatedAt)
		}
		cursor = p.NextCursor
	}
	if pages < 2 {
		t.Errorf("%d tasks in %d page(s), want more than one page", n, pages)
	}
	if !slices.IsSortedFunc(times, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("not newest first: %v", times)
	}
	got, want := slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(created))
	if !slices.Equal(got, want) {
		t.Errorf("listed %d tasks, want each of the %d created once", len(listed), n)
	}

	rep := bob.call("tasks/list", "{}")
	var p page
	if rep.Error != nil || json.Unmarshal(rep.Result, &p) != nil || len(p.Tasks) != 0 {
		t.Errorf("bob's tasks/list: %s", rep.raw)
	}
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if rep := bob.call(m, fmt.Sprintf(`{"taskId":%q}`, created[0])); rep.Error == nil || rep.Error.Code != -32602 || rep.Error.Message != "Failed to retrieve task: Task not found" {
			t.Errorf("bob's %s of alice's task: %s", m, rep.raw)
		}
	}
	// Alice's session id is of no use to bob.
	h := http.Header{"Authorization": {"Bearer b-token"}, "Mcp-Session-Id": {alice.id}, "Mcp-Protocol-Version": {"2025-11-25"}}
	if resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`)}); resp.status != http.StatusNotFound {
		t.Errorf("bob with alice's session id: HTTP %d, want 404", resp.status)
	}
}
