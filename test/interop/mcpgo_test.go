package interop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// confirmer is an mcp-go elicitation handler that confirms and counts.
type confirmer struct{ asked atomic.Int32 }

func (c *confirmer) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c.asked.Add(1)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true},
	}}, nil
}

// newMCPGo returns an initialized mcp-go client of url as the principal
// of token.
func newMCPGo(t *testing.T, ctx context.Context, url, token string, h *confirmer) *mcpclient.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithElicitationHandler(h))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go-interop", Version: "1.0.0"}
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{Form: &struct{}{}}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != "2025-11-25" || res.Capabilities.Tasks == nil || res.Capabilities.Tasks.Requests == nil ||
		res.Capabilities.Tasks.List == nil || res.Capabilities.Tasks.Cancel == nil {
		t.Fatalf("initialize: version %s, tasks capability %+v", res.ProtocolVersion, res.Capabilities.Tasks)
	}
	return c
}

// createTask sends tools/call with params.task through mcp-go's transport
// (its CallTool returns a CallToolResult, not a task) and returns the task.
func createTask(t *testing.T, ctx context.Context, c *mcpclient.Client, tool string, args map[string]any) mcp.Task {
	t.Helper()
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(time.Now().UnixNano())), Method: "tools/call",
		Params: map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 60000}},
	})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	if resp.Error != nil {
		t.Fatalf("tools/call %s: %+v", tool, resp.Error)
	}
	var cr mcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &cr); err != nil || cr.Task.TaskId == "" || cr.Task.Status != mcp.TaskStatusWorking {
		t.Fatalf("tools/call %s: %s (%v)", tool, resp.Result, err)
	}
	return cr.Task
}

// TestMCPGoClient: mcp-go's client (its 2025-11-25 tasks API) against
// serve, as two principals.
func TestMCPGoClient(t *testing.T) {
	url := serve(t, "127.0.0.1:19411")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := &confirmer{}
	alice := newMCPGo(t, ctx, url, tokens["alice"], h)

	tools, err := alice.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	support := map[string]mcp.TaskSupport{}
	for _, tl := range tools.Tools {
		if tl.Execution != nil {
			support[tl.Name] = tl.Execution.TaskSupport
		}
	}
	if support["confirm_delete"] != mcp.TaskSupportRequired || support["slow_compute"] != mcp.TaskSupportOptional {
		t.Errorf("taskSupport: %v", support)
	}

	// A task with a question: tasks/result carries it, the handler
	// answers, and tasks/result returns the tool's result.
	tk := createTask(t, ctx, alice, "confirm_delete", map[string]any{"filename": "a.txt"})
	var res *mcp.TaskResultResult
	for res == nil {
		st, err := alice.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: tk.TaskId}})
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == mcp.TaskStatusInputRequired || st.Status.IsTerminal() {
			if res, err = alice.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: tk.TaskId}}); err != nil {
				t.Fatalf("tasks/result: %v", err)
			}
			break
		}
		time.Sleep(50 * time.Millisecond) // bounded by ctx: the poll interval of a client
	}
	if h.asked.Load() != 1 || len(res.Content) == 0 || !strings.Contains(textOf(res.Content[0]), "Deleted a.txt") {
		t.Errorf("asked %d times; result %+v", h.asked.Load(), res)
	}

	// A running task, cancelled.
	slow := createTask(t, ctx, alice, "slow_compute", map[string]any{"seconds": 60})
	cancelled, err := alice.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: slow.TaskId}})
	if err != nil || cancelled.Status != mcp.TaskStatusCancelled {
		t.Errorf("tasks/cancel: %+v, %v", cancelled, err)
	}

	list, err := alice.ListTasks(ctx, mcp.ListTasksRequest{})
	if err != nil {
		t.Fatalf("tasks/list: %v", err)
	}
	if len(list.Tasks) != 2 || list.Tasks[0].TaskId != slow.TaskId || list.Tasks[1].TaskId != tk.TaskId {
		t.Errorf("tasks/list: %+v", list.Tasks)
	}

	// Bob sees none of it.
	bob := newMCPGo(t, ctx, url, tokens["bob"], &confirmer{})
	if _, err := bob.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: tk.TaskId}}); err == nil {
		t.Error("bob read alice's task")
	}
	if _, err := bob.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: tk.TaskId}}); err == nil {
		t.Error("bob read alice's result")
	}
	if _, err := bob.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: tk.TaskId}}); err == nil || !errors.Is(err, mcp.ErrInvalidParams) {
		t.Errorf("bob's cancel of alice's task: %v", err)
	}
	if bl, err := bob.ListTasks(ctx, mcp.ListTasksRequest{}); err != nil || len(bl.Tasks) != 0 {
		t.Errorf("bob's tasks/list: %+v, %v", bl, err)
	}
}

func textOf(c mcp.Content) string {
	if tc, ok := c.(mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
