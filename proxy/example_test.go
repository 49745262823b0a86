package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/proxy"
	"github.com/mcptasks/mcptasks/store/memory"
)

// A proxy serves the tools of an upstream MCP server, which knows nothing
// of tasks, as task-backed tools: a client that declares the Tasks
// extension gets a task, whose worker calls the upstream.
func Example() {
	ctx := context.Background()
	// The upstream: a plain go-sdk server over Streamable HTTP.
	up := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1.0"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	ups := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	defer ups.Close()

	// The proxy: lists the upstream's tools and adds them to a server.
	p, err := proxy.New(ctx, &proxy.Upstream{URL: ups.URL}, nil)
	if err != nil {
		panic(err)
	}
	srv := mcpserver.New(&mcp.Implementation{Name: "proxy", Version: "1.0"}, &mcpserver.Options{Store: memory.New()})
	if err := p.Register(srv); err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Shutdown(ctx)
	front := httptest.NewServer(srv.Handler())
	defer front.Close()

	c := &mcptest.Client{URL: front.URL, Capabilities: mcptest.Caps(true, false)}
	created, err := c.Call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
	if err != nil {
		panic(err)
	}
	id := created["taskId"].(string)
	for {
		got, err := c.Task(ctx, id)
		if err != nil {
			panic(err)
		}
		if got["status"] == "completed" {
			fmt.Println(created["resultType"], got["result"].(map[string]any)["content"])
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// task [map[text:echo: hi type:text]]
}
