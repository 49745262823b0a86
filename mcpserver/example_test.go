package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// This example makes a slow tool task-backed, serves it, and calls it the
// way a 2026-07-28 client does: tools/call answers with a task, tasks/get
// returns its result once the handler has finished.
func Example() {
	ctx := context.Background()
	srv := mcpserver.New(&mcp.Implementation{Name: "example", Version: "1.0"},
		&mcpserver.Options{Store: memory.New()})
	type in struct {
		Rows int `json:"rows"`
	}
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "export", Description: "Export rows."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(ctx context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			_ = mcpserver.SetStatus(ctx, "Exporting")
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: fmt.Sprintf("exported %d rows", in.Rows)},
			}}, nil, nil
		})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Shutdown(ctx)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	created := post(ts.URL, "tools/call", `"name":"export","arguments":{"rows":3}`)
	fmt.Println(created["resultType"], created["status"])
	id := created["taskId"].(string)
	for {
		got := post(ts.URL, "tasks/get", `"taskId":"`+id+`"`)
		if got["status"] == "completed" {
			fmt.Println(got["status"], got["result"].(map[string]any)["content"])
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// task working
	// completed [map[text:exported 3 rows type:text]]
}

// post sends one stateless 2026-07-28 request that declares the Tasks
// extension and returns its result.
func post(url, method, params string) map[string]any {
	var p map[string]any
	if err := json.Unmarshal([]byte("{"+params+"}"), &p); err != nil {
		panic(err)
	}
	c := &mcptest.Client{URL: url, Capabilities: mcptest.Caps(true, false)}
	res, err := c.Call(context.Background(), method, p)
	if err != nil {
		panic(err)
	}
	return res
}

// serve starts srv and serves it on httptest; stop stops both.
func serve(srv *mcpserver.Server) (url string, stop func()) {
	if err := srv.Start(context.Background()); err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	return ts.URL, func() { ts.Close(); _ = srv.Shutdown(context.Background()) }
}

type greeting struct {
	Text string `json:"text"`
}

// greet is an ordinary go-sdk tool handler.
func greet(_ context.Context, _ *mcp.CallToolRequest, in struct {
	Name string `json:"name"`
}) (*mcp.CallToolResult, greeting, error) {
	return nil, greeting{Text: "Hello, " + in.Name}, nil
}

// A handler written for go-sdk's mcp.AddTool is what mcpserver.AddTool
// takes: the same value serves a plain go-sdk server and, as a task, a
// client that declares the Tasks extension. Its output schema is inferred
// from its output type, and the output becomes structuredContent.
func ExampleAddTool_goSDKHandler() {
	var h mcp.ToolHandlerFor[struct {
		Name string `json:"name"`
	}, greeting] = greet
	mcp.AddTool(mcp.NewServer(&mcp.Implementation{Name: "plain"}, nil), &mcp.Tool{Name: "greet"}, h)

	srv := mcpserver.New(&mcp.Implementation{Name: "tasks", Version: "1.0"}, &mcpserver.Options{Store: memory.New()})
	if err := mcpserver.AddTool(srv, &mcp.Tool{Name: "greet"}, mcpserver.ToolOptions{}, h); err != nil {
		panic(err)
	}
	url, stop := serve(srv)
	defer stop()
	created := post(url, "tools/call", `"name":"greet","arguments":{"name":"Ada"}`)
	id := created["taskId"].(string)
	for {
		got := post(url, "tasks/get", `"taskId":"`+id+`"`)
		if got["status"] == "completed" {
			fmt.Println(created["resultType"], got["status"], got["result"].(map[string]any)["structuredContent"])
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// task completed map[text:Hello, Ada]
}

// Elicit in a call that runs inline (here: a client without the Tasks
// extension) is an MRTR round: the call answers input_required with the
// question, and the client calls again with the answer and the
// requestState, which runs the handler again, now with its answer.
func ExampleElicit() {
	srv := mcpserver.New(&mcp.Implementation{Name: "ask", Version: "1.0"}, &mcpserver.Options{Store: memory.New()})
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "delete"}, mcpserver.ToolOptions{},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			ans, err := mcpserver.Elicit(ctx, "sure", &mcp.ElicitParams{
				Message: "Delete everything?",
				RequestedSchema: map[string]any{"type": "object",
					"properties": map[string]any{"yes": map[string]any{"type": "boolean"}}},
			})
			if err != nil {
				return nil, nil, err // ErrInputRequired: the round is the answer
			}
			verdict := "kept"
			if ans.Action == "accept" && ans.Content["yes"] == true {
				verdict = "deleted"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: verdict}}}, nil, nil
		})
	if err != nil {
		panic(err)
	}
	url, stop := serve(srv)
	defer stop()

	c := &mcptest.Client{URL: url, Capabilities: mcptest.Caps(false, true)} // form elicitation, no tasks
	ctx := context.Background()
	params := map[string]any{"name": "delete", "arguments": map[string]any{}}
	round, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		panic(err)
	}
	q := round["inputRequests"].(map[string]any)["sure"].(map[string]any)
	fmt.Println(round["resultType"], q["method"], q["params"].(map[string]any)["message"])

	params["inputResponses"] = map[string]any{"sure": map[string]any{"action": "accept", "content": map[string]any{"yes": true}}}
	params["requestState"] = round["requestState"]
	done, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		panic(err)
	}
	fmt.Println(done["resultType"], done["content"])
	// Output:
	// input_required elicitation/create Delete everything?
	// complete [map[text:deleted type:text]]
}

// Prepare runs before a task is created: here it asks for a confirmation
// in an MRTR round, so that a refused call never becomes a task, and
// returns the arguments the task is created with.
func ExampleToolOptions_prepare() {
	srv := mcpserver.New(&mcp.Implementation{Name: "prepare", Version: "1.0"}, &mcpserver.Options{Store: memory.New()})
	confirm := func(_ context.Context, req *mcp.CallToolRequest, args json.RawMessage) (json.RawMessage, mcp.Result, error) {
		if r, ok := req.Params.InputResponses["go"].(*mcp.ElicitResult); ok && r.Action == "accept" {
			return args, nil, nil
		}
		return nil, mcpserver.InputRequired(mcp.InputRequestMap{"go": &mcp.ElicitParams{
			Message: "Start the export?", RequestedSchema: map[string]any{"type": "object"},
		}}, ""), nil
	}
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "export"},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired, Prepare: confirm},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "exported"}}}, nil, nil
		})
	if err != nil {
		panic(err)
	}
	url, stop := serve(srv)
	defer stop()

	c := &mcptest.Client{URL: url, Capabilities: mcptest.Caps(true, true)}
	ctx := context.Background()
	params := map[string]any{"name": "export", "arguments": map[string]any{}}
	round, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		panic(err)
	}
	fmt.Println(round["resultType"], round["taskId"] != nil)
	params["inputResponses"] = map[string]any{"go": map[string]any{"action": "accept", "content": map[string]any{}}}
	created, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		panic(err)
	}
	fmt.Println(created["resultType"], created["status"])
	// Output:
	// input_required false
	// task working
}
