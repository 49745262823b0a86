package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// TestMinPollInterval: with the optional poll limit on, a second tasks/get
// of the same task within the interval gets HTTP 429, Retry-After and
// CodePollTooFast; other tasks are not affected. Off by default.
func TestMinPollInterval(t *testing.T) {
	for _, limit := range []time.Duration{0, time.Hour} {
		srv := pollLimitServer(t, limit, 2*time.Hour)
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
		h := srv.Handler()
		post := func(method, name, params string) *httptest.ResponseRecorder {
			return postRequest(h, method, name, tasksBody(method, params))
		}
		create := func() string {
			var res struct {
				Result struct {
					TaskID string `json:"taskId"`
				} `json:"result"`
			}
			if err := json.Unmarshal(post("tools/call", "wait", `"name":"wait","arguments":{}`).Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			return res.Result.TaskID
		}
		get := func(id string) *httptest.ResponseRecorder { return post("tasks/get", id, `"taskId":"`+id+`"`) }
		a, b := create(), create()
		if rec := get(a); rec.Code != http.StatusOK {
			t.Fatalf("limit %s: first poll: HTTP %d", limit, rec.Code)
		}
		rec := get(a)
		if limit == 0 {
			if rec.Code != http.StatusOK {
				t.Errorf("no limit: second poll: HTTP %d %s", rec.Code, rec.Body)
			}
			continue
		}
		var msg struct {
			Error struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &msg)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || msg.Error.Code != mcpserver.CodePollTooFast {
			t.Errorf("second poll within the limit: HTTP %d, Retry-After %q, code %d; want 429, set, %d",
				rec.Code, rec.Header().Get("Retry-After"), msg.Error.Code, mcpserver.CodePollTooFast)
		}
		if rec := get(b); rec.Code != http.StatusOK {
			t.Errorf("another task's first poll: HTTP %d", rec.Code)
		}
		// An id that is no task's is not remembered (ids of any length
		// would grow the limiter): every poll of it gets not found.
		bogus := strings.Repeat("x", 4096)
		for range 2 {
			if rec := get(bogus); rec.Code != http.StatusBadRequest {
				t.Errorf("a poll of an id that is no task's: HTTP %d %s, want 400 (not found)", rec.Code, rec.Body)
			}
		}
	}
}

// TestMinPollIntervalAboveSuggested: Start refuses a poll limit longer
// than the poll interval a task tool suggests, naming both: clients that
// poll as told would be refused.
func TestMinPollIntervalAboveSuggested(t *testing.T) {
	srv := pollLimitServer(t, 3*time.Second, 0) // the tool suggests the default, 1s
	err := srv.Start(context.Background())
	if err == nil {
		_ = srv.Shutdown(context.Background())
		t.Fatal("Start took MinPollInterval 3s with a suggested poll interval of 1s")
	}
	if msg := err.Error(); !errors.Is(err, mcpserver.ErrMinPollInterval) || !strings.Contains(msg, "MinPollInterval 3s") || !strings.Contains(msg, "1s") || !strings.Contains(msg, `"wait"`) {
		t.Errorf("Start: %v, want it to name MinPollInterval, the interval and the tool", err)
	}
}

// TestMinPollInterval_Legacy: the poll limit holds for a 2025-11-25
// tasks/get too.
func TestMinPollInterval_Legacy(t *testing.T) {
	srv := pollLimitServer(t, time.Hour, 2*time.Hour)
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	h := srv.Handler()
	session := ""
	post := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if session = rec.Header().Get("Mcp-Session-Id"); session == "" {
		t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	var created struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	rec = post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{},"task":{}}}`)
	if json.Unmarshal(mcptest.LastMessage(rec.Body.Bytes()), &created) != nil || created.Result.Task.TaskID == "" {
		t.Fatalf("tools/call: %s", rec.Body)
	}
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + created.Result.Task.TaskID + `"}}`
	if rec := post(get); rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"error"`) {
		t.Fatalf("first poll: %d %s", rec.Code, rec.Body)
	}
	if rec := post(get); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("second poll within the limit: %d %s, want 429 with Retry-After", rec.Code, rec.Body)
	}
}

// pollLimitServer returns a server, not started, with the poll limit
// limit, whose one task tool "wait" suggests the poll interval suggested
// (the engine's default if zero) and runs no handler.
func pollLimitServer(t *testing.T, limit, suggested time.Duration) *mcpserver.Server {
	t.Helper()
	srv := mcpserver.New(&mcp.Implementation{Name: "limit", Version: "1"}, &mcpserver.Options{MinPollInterval: limit,
		Store: memory.New(), Engine: &engine.Options{Workers: -1, DefaultPollInterval: suggested}})
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "wait"}, mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
