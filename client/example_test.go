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
	srv := mcpserver.New(&mcp.Implementation{Name: "example", Version: "1.0"}, &mcpserver.Options{
		Store: memory.New(), Engine: &engine.Options{DefaultPollInterval: 100 * time.Millisecond},
	})
	type in struct {
		File string `json:"file"`
	}
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "delete", Description: "Delete a file after confirmation."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(ctx context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			ans, err := mcpserver.Elicit(ctx, "confirm", &mcp.ElicitParams{
				Message: "Delete " + in.File + "?",
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
				},
			})
			if err != nil {
				return nil, nil, err
			}
			verdict := "kept"
			if ans.Action == "accept" && ans.Content["ok"] == true {
				verdict = "deleted"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.File + " " + verdict}}}, nil, nil
		})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())
	ts := httptest.NewServer(srv.Handler())
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
