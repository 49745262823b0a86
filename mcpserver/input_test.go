package mcpserver_test

//lint:file-ignore SA1019 sampling and roots are deprecated features, but still input a task may ask for

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
)

// inputTools are tools that ask for each kind of input from inside a task,
// none of which declares Requires: the input helpers check the
// capabilities of the task's originating request themselves.
func inputTools(s *mcpserver.Server) error {
	opts := mcpserver.ToolOptions{Task: mcpserver.TaskRequired}
	if err := mcpserver.AddTool(s, &mcp.Tool{Name: "summarize"}, opts, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := mcpserver.CreateMessage(ctx, "summary", &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize the report"}}},
			MaxTokens: 100,
		})
		if err != nil {
			return nil, nil, err
		}
		text, _ := res.Content.(*mcp.TextContent)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "summary by " + res.Model + ": " + text.Text}}}, nil, nil
	}); err != nil {
		return err
	}
	if err := mcpserver.AddTool(s, &mcp.Tool{Name: "list_roots"}, opts, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := mcpserver.ListRoots(ctx, "roots")
		if err != nil {
			return nil, nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "roots: " + strings.Join(uris, " ")}}}, nil, nil
	}); err != nil {
		return err
	}
	return mcpserver.AddTool(s, &mcp.Tool{Name: "open_url"}, opts, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := mcpserver.Elicit(ctx, "open", &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/sign-in", ElicitationID: "e1"})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "url: " + res.Action}}}, nil, nil
	})
}

// TestInputHelpers asks for sampling, roots and URL-mode elicitation from
// inside tasks: the input request is sent only to a client that declared
// its kind, the answer is checked against it (-32602 naming the key and
// the field, and the key stays open), and a valid answer reaches the
// handler. A client that did not declare the kind gets a tool error that
// says so, and nothing is asked.
func TestInputHelpers(t *testing.T) {
	t.Parallel()
	const (
		sampling = `{"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
		roots    = `{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
		url      = `{"elicitation":{"url":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
		form     = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
		none     = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	)
	c := startServer(t, serverConfig{register: inputTools})
	for _, tc := range []struct {
		name, tool, caps string
		key, method      string // the input request; "" for none
		bad, badWant     string // an invalid answer and what its error names
		good, wantText   string // a valid answer and the result text
	}{
		{name: "Sampling", tool: "summarize", caps: sampling, key: "summary", method: "sampling/createMessage",
			bad: `{"role":"assistant","content":{"type":"text","text":"ok"}}`, badWant: `params.inputResponses["summary"]: model is required`,
			good: `{"role":"assistant","content":{"type":"text","text":"All fine."},"model":"m1"}`, wantText: "summary by m1: All fine."},
		{name: "Roots", tool: "list_roots", caps: roots, key: "roots", method: "roots/list",
			bad: `{"roots":[{"name":"a"}]}`, badWant: `params.inputResponses["roots"]: roots[0].uri is required`,
			good: `{"roots":[{"uri":"file:///src","name":"src"}]}`, wantText: "roots: file:///src"},
		{name: "URL", tool: "open_url", caps: url, key: "open", method: "elicitation/create",
			bad: `{"action":"maybe"}`, badWant: `params.inputResponses["open"]: action must be`,
			good: `{"action":"accept"}`, wantText: "url: accept"},
		{name: "NoSampling", tool: "summarize", caps: form, wantText: "the client did not declare the sampling capability"},
		{name: "NoRoots", tool: "list_roots", caps: none, wantText: "the client did not declare the roots capability"},
		{name: "URLToFormOnly", tool: "open_url", caps: form, wantText: "the client did not declare the elicitation capability (url mode)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tc.caps + `}`
			rep := c.rpc(t, "", "tools/call", tc.tool, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":%s,"name":%q,"arguments":{}}}`, meta, tc.tool)).reply(t)
			var created taskView
			if rep.Error != nil || json.Unmarshal(rep.Result, &created) != nil || created.TaskID == "" {
				t.Fatalf("create: %s", rep.raw)
			}
			id := created.TaskID
			if tc.key != "" {
				res := c.waitStatus(t, "", id, "input_required", nil)
				var v taskView
				_ = json.Unmarshal(res, &v)
				var req struct {
					Method string `json:"method"`
				}
				if err := json.Unmarshal(v.InputRequests[tc.key], &req); err != nil || req.Method != tc.method || len(v.InputRequests) != 1 {
					t.Fatalf("inputRequests = %v, want one %s under %q", v.InputRequests, tc.method, tc.key)
				}
				update := func(answer string) *rpcReply {
					return c.rpc(t, "", "tasks/update", id, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/update","params":{"_meta":$META,"taskId":%q,"inputResponses":{%q:%s}}}`, id, tc.key, answer)).reply(t)
				}
				if rep := update(tc.bad); rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, tc.badWant) {
					t.Errorf("invalid answer: %s, want -32602 containing %q", rep.raw, tc.badWant)
				}
				c.waitStatus(t, "", id, "input_required", nil) // the key is still open
				if rep := update(tc.good); rep.Error != nil {
					t.Fatalf("valid answer: %s", rep.raw)
				}
			}
			var done struct {
				Result struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal(c.waitStatus(t, "", id, "completed", nil), &done); err != nil || len(done.Result.Content) == 0 {
				t.Fatalf("result: %v", err)
			}
			if got := done.Result.Content[0].Text; got != tc.wantText {
				t.Errorf("result text %q, want %q", got, tc.wantText)
			}
		})
	}
}

// TestElicitSuspended: a handler of a re-runnable tool whose Elicit is
// suspended passes engine.ErrSuspended up, which is no tool result: the
// task stays input_required with no worker holding it, and the answer
// runs the handler again, whose Elicit returns the stored answer.
func TestElicitSuspended(t *testing.T) {
	t.Parallel()
	st := memory.New()
	c := startServer(t, serverConfig{store: st, suspendAfter: -1})
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	rep := c.rpc(t, "", "tools/call", "confirm_delete", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":`+meta+`,"name":"confirm_delete","arguments":{"filename":"a.txt"}}}`).reply(t)
	var created taskView
	if rep.Error != nil || json.Unmarshal(rep.Result, &created) != nil || created.TaskID == "" {
		t.Fatalf("create: %s", rep.raw)
	}
	id := created.TaskID
	c.waitStatus(t, "", id, "input_required", nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if store.Suspended(r) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %s, owner %q: not suspended", r.Status, r.LeaseOwner)
		}
		time.Sleep(10 * time.Millisecond) // the poll interval of this test
	}
	if rep := c.rpc(t, "", "tasks/update", id, `{"jsonrpc":"2.0","id":2,"method":"tasks/update","params":{"_meta":$META,"taskId":"`+id+`","inputResponses":{"confirm-delete":{"action":"accept","content":{"confirm":true}}}}}`).reply(t); rep.Error != nil {
		t.Fatalf("answer: %s", rep.raw)
	}
	var done struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(c.waitStatus(t, "", id, "completed", nil), &done); err != nil || len(done.Result.Content) == 0 {
		t.Fatalf("result: %v", err)
	}
	if got := done.Result.Content[0].Text; got != "Deleted a.txt" || done.Result.IsError {
		t.Errorf("result %q (isError %v), want \"Deleted a.txt\"", got, done.Result.IsError)
	}
}
