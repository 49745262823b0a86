package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

var twoPrincipals = mcpserver.Tokens{"tokA": "alice", "tokB": "bob"}

// TestAuth_ForeignTaskLooksUnknown checks the auth binding of tasks
// (TASKS-SPEC §3.17, DESIGN invariants): bob's tasks/get, tasks/update and
// tasks/cancel on alice's tasks fail exactly as they do for an id that does
// not exist or is malformed, byte for byte, and leave alice's tasks as they
// were.
func TestAuth_ForeignTaskLooksUnknown(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{tokens: twoPrincipals})

	// alice's tasks: one parked for input, one finished.
	parked := c.createTask(t, "tokA", "confirm_delete", `{"filename":"notes.txt"}`)
	finished := c.createTask(t, "tokA", "failing_job", `{}`)
	c.waitStatus(t, "tokA", parked, "input_required", nil)
	c.waitStatus(t, "tokA", finished, "completed", nil)
	before := map[string]string{}
	for _, id := range []string{parked, finished} {
		_, rep := c.getTask(t, "tokA", id)
		before[id] = canonical(t, rep.Result)
	}

	// Every request uses the same JSON-RPC id, so that whole bodies can be
	// compared.
	bodies := map[string]string{
		"tasks/get":    `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"_meta":$META,"taskId":%q}}`,
		"tasks/update": `{"jsonrpc":"2.0","id":7,"method":"tasks/update","params":{"_meta":$META,"taskId":%q,"inputResponses":{"confirm-delete":{"action":"accept","content":{"confirm":true}}}}}`,
		"tasks/cancel": `{"jsonrpc":"2.0","id":7,"method":"tasks/cancel","params":{"_meta":$META,"taskId":%q}}`,
	}
	// The reference: bob asking about an id that was never issued.
	unknown := task.NewID()
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		ref := c.rpc(t, "tokB", method, unknown, fmt.Sprintf(bodies[method], unknown))
		rep := ref.reply(t)
		if rep.Error == nil || rep.Error.Code != -32602 {
			t.Fatalf("%s of an unknown id: got %s, want a -32602 error", method, ref.body)
		}
		if err := validateExchange(method, rep.raw); err != nil {
			t.Errorf("%s of an unknown id: %v", method, err)
		}
		cases := []struct{ who, token, id string }{
			{"bob, alice's parked task", "tokB", parked},
			{"bob, alice's finished task", "tokB", finished},
			{"bob, another unknown id", "tokB", task.NewID()},
			{"bob, malformed id", "tokB", "not-a-task-id"},
			{"bob, id with odd characters", "tokB", "../" + parked},
			{"bob, id one character short", "tokB", parked[1:]},
			{"alice, unknown id", "tokA", unknown},
			{"alice, malformed id", "tokA", "not-a-task-id"},
		}
		for _, tc := range cases {
			t.Run(method+"/"+tc.who, func(t *testing.T) {
				got := c.rpc(t, tc.token, method, tc.id, fmt.Sprintf(bodies[method], tc.id))
				if got.status != ref.status || got.header.Get("Content-Type") != ref.header.Get("Content-Type") || !bytes.Equal(got.body, ref.body) {
					t.Errorf("response differs from the one for an unknown id:\ngot:  %d %s %q\nwant: %d %s %q",
						got.status, got.header.Get("Content-Type"), got.body,
						ref.status, ref.header.Get("Content-Type"), ref.body)
				}
			})
		}
	}

	// Nothing bob did reached alice's tasks.
	for _, id := range []string{parked, finished} {
		_, rep := c.getTask(t, "tokA", id)
		if now := canonical(t, rep.Result); now != before[id] {
			t.Errorf("alice's task changed:\nwas: %s\nnow: %s", before[id], now)
		}
	}
	// alice herself can still answer her task, which then completes.
	resp := c.rpc(t, "tokA", "tasks/update", parked, fmt.Sprintf(bodies["tasks/update"], parked))
	if rep := resp.reply(t); rep.Error != nil {
		t.Fatalf("alice's tasks/update: %s", rep.raw)
	}
	c.waitStatus(t, "tokA", parked, "completed", nil)
}

// TestAuth_Unauthenticated checks that requests without a valid bearer
// token get HTTP 401 with a WWW-Authenticate challenge and a JSON-RPC
// error body, and never reach a task.
func TestAuth_Unauthenticated(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{tokens: twoPrincipals})
	id := c.createTask(t, "tokA", "confirm_delete", `{"filename":"notes.txt"}`)
	c.waitStatus(t, "tokA", id, "input_required", nil)
	_, rep := c.getTask(t, "tokA", id)
	before := canonical(t, rep.Result)

	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"_meta":$META,"taskId":%q}}`, id)
	for _, tc := range []struct{ name, authorization string }{
		{"no token", ""},
		{"wrong token", "Bearer tokC"},
		{"token of another scheme", "Basic tokA"},
		{"empty bearer", "Bearer "},
		{"token with a suffix", "Bearer tokAx"},
		{"token prefix", "Bearer tok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("MCP-Protocol-Version", wireVersion)
			h.Set("Mcp-Method", "tasks/cancel")
			h.Set("Mcp-Name", id)
			if tc.authorization != "" {
				h.Set("Authorization", tc.authorization)
			}
			resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(expandMeta(body))})
			if resp.status != http.StatusUnauthorized {
				t.Fatalf("HTTP %d %s, want 401", resp.status, resp.body)
			}
			if resp.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without a WWW-Authenticate header")
			}
			if rep := resp.reply(t); rep.Error == nil {
				t.Errorf("401 body is not a JSON-RPC error: %s", resp.body)
			} else if err := validateExchange("tasks/cancel", rep.raw); err != nil {
				t.Errorf("401 body: %v", err)
			}
		})
	}
	_, rep = c.getTask(t, "tokA", id)
	if now := canonical(t, rep.Result); now != before {
		t.Errorf("task changed by unauthenticated requests:\nwas: %s\nnow: %s", before, now)
	}
}

// TestAuth_NoUserID: a request that an authenticating wrapper let in
// without naming its user (go-sdk's TokenInfo.UserID is optional) gets
// HTTP 500 on every route, and no task is made: before, every such
// request was the one local principal, so each user of such a verifier
// could read, answer and cancel the others' tasks.
func TestAuth_NoUserID(t *testing.T) {
	t.Parallel()
	st := memory.New()
	c := startServer(t, serverConfig{store: st, verifier: func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "tokA" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: []string{"tasks"}, Expiration: time.Now().Add(time.Hour)}, nil
	}})
	for _, tc := range []struct{ method, name, body string }{
		{"tools/call", "slow_compute", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META,"name":"slow_compute","arguments":{"seconds":60}}}`},
		{"tasks/get", task.NewID(), `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"_meta":$META,"taskId":"x"}}`},
		{"tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":$META}}`},
	} {
		resp := c.rpc(t, "tokA", tc.method, tc.name, strings.Replace(tc.body, `"x"`, `"`+tc.name+`"`, 1))
		rep := resp.reply(t)
		if resp.status != http.StatusInternalServerError || rep.Error == nil || !strings.Contains(rep.Error.Message, "names no user") {
			t.Errorf("%s with a token that names no user: HTTP %d %.200s; want 500 and -32603", tc.method, resp.status, resp.body)
		}
	}
	if page, err := st.List(t.Context(), store.ListParams{Limit: 10}); err != nil || len(page.Tasks) != 0 {
		t.Errorf("tasks made by requests without a principal: %v %v", page, err)
	}
}

// createTask calls a task-capable tool as the token's principal and
// returns the new task's id.
func (c *testClient) createTask(t *testing.T, token, tool, args string) string {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"create","method":"tools/call","params":{"_meta":$META,"name":%q,"arguments":%s}}`, tool, args)
	resp := c.rpc(t, token, "tools/call", tool, body)
	rep := resp.reply(t)
	if err := validateExchange("tools/call", rep.raw); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var v taskView
	if rep.Error != nil || json.Unmarshal(rep.Result, &v) != nil || v.ResultType != "task" || v.TaskID == "" {
		t.Fatalf("%s: want a CreateTaskResult, got HTTP %d %s", tool, resp.status, resp.body)
	}
	return v.TaskID
}
