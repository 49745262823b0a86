package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// This example serves a task-backed tool that asks one question, calls it,
// answers the question through an InputHandler, and prints the result.
func Example() {
	// The server: one tool that runs as a task and asks for confirmation.
	srv := mcpserver.New(&mcp.Implementation{Name: "example", Version: "1.0"}, nil)
	type in struct {
		File string `json:"file"`
	}
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "delete", Description: "Delete a file after confirmation."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(ctx context.Context, run *engine.Run, in in) (*mcp.CallToolResult, error) {
			ans, err := mcpserver.Elicit(ctx, run, "confirm", &mcp.ElicitParams{
				Message: "Delete " + in.File + "?",
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
				},
			})
			if err != nil {
				return nil, err
			}
			verdict := "kept"
			if ans.Action == "accept" && ans.Content["ok"] == true {
				verdict = "deleted"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.File + " " + verdict}}}, nil
		})
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(memory.New(), srv.EngineTools(), &engine.Options{DefaultPollInterval: 100 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	eng.Start(context.Background())
	defer eng.Shutdown(context.Background())
	ts := httptest.NewServer(srv.Handler(eng))
	defer ts.Close()

	// The client: accept every question.
	c := client.New(ts.URL, &client.Options{
		InputHandler: client.InputHandlerFunc(func(_ context.Context, key string, req *client.InputRequest) (any, error) {
			fmt.Printf("asked %s: %s\n", key, req.Elicit.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		}),
	})
	ctx := context.Background()
	res, err := c.CallTool(ctx, "delete", map[string]any{"file": "report.csv"})
	if err != nil {
		panic(err)
	}
	fmt.Println("became a task:", res.Task != nil)
	out, err := res.Task.Wait(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Content[0].(*mcp.TextContent).Text)
	// Output:
	// became a task: true
	// asked confirm: Delete report.csv?
	// report.csv deleted
}
