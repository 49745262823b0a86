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

// This example makes one call twice with a key of its own, as a program
// that runs its work again after a restart would: the second call gets
// the task the first made, and the tool runs once.
func ExampleClient_CallToolWithKey() {
	srv := mcpserver.New(&mcp.Implementation{Name: "example", Version: "1.0"}, &mcpserver.Options{
		Store: memory.New(), Engine: &engine.Options{DefaultPollInterval: 100 * time.Millisecond},
	})
	runs := make(chan struct{}, 10)
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "nightly_report", Description: "Build the nightly report."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			runs <- struct{}{}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "built"}}}, nil, nil
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

	ctx := context.Background()
	key := "nightly-report/2026-12-04" // what identifies the work
	first, err := client.New(ts.URL, nil).CallToolWithKey(ctx, key, "nightly_report", nil)
	if err != nil {
		panic(err)
	}
	// ... the program restarts, and makes the call again ...
	again, err := client.New(ts.URL, nil).CallToolWithKey(ctx, key, "nightly_report", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("the same task:", again.Task.ID == first.Task.ID)
	if _, err := again.Task.Wait(ctx); err != nil {
		panic(err)
	}
	fmt.Println("runs:", len(runs))
	// Output:
	// the same task: true
	// runs: 1
}
