// Command render_video is a complete MCP server with one slow, durable
// tool: render_video reports its progress, asks a yes/no question, stops
// on tasks/cancel, keeps its tasks in SQLite across restarts, and drains
// on SIGTERM. ping is an ordinary go-sdk tool beside it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/sqlite"
)

type video struct {
	Scene  string `json:"scene" jsonschema:"the scene to render"`
	Frames int    `json:"frames" jsonschema:"how many frames to render"`
}

type rendered struct {
	File string `json:"file"`
}

var frameTime = flag.Duration("frame-time", time.Second, "time to render one frame")

func render(ctx context.Context, _ *mcp.CallToolRequest, in video) (*mcp.CallToolResult, *rendered, error) {
	ans, err := mcpserver.Elicit(ctx, "overwrite", &mcp.ElicitParams{
		Message: in.Scene + ".mp4 exists. Overwrite it?",
		RequestedSchema: map[string]any{"type": "object", "required": []string{"yes"},
			"properties": map[string]any{"yes": map[string]any{"type": "boolean"}}},
	})
	if err != nil {
		return nil, nil, err
	}
	if ans.Action != "accept" || ans.Content["yes"] != true {
		return nil, nil, fmt.Errorf("%s.mp4 was kept", in.Scene)
	}
	for f := 1; f <= in.Frames; f++ {
		_ = mcpserver.SetStatus(ctx, fmt.Sprintf("Rendering %d/%d", f, in.Frames))
		select {
		case <-ctx.Done(): // tasks/cancel, or a drain that ran out of time
			return nil, nil, context.Cause(ctx)
		case <-time.After(*frameTime):
		}
	}
	return nil, &rendered{File: in.Scene + ".mp4"}, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve /mcp on")
	db := flag.String("db", "render.db", "SQLite file that keeps the tasks")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	st, err := sqlite.Open(ctx, *db, nil)
	if err != nil {
		log.Fatal(err)
	}
	srv := mcpserver.New(&mcp.Implementation{Name: "render_video", Version: "1.0"}, &mcpserver.Options{Store: st})
	mcp.AddTool(srv.MCPServer(), &mcp.Tool{Name: "ping", Description: "Answer pong."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	err = mcpserver.AddTool(srv, &mcp.Tool{Name: "render_video", Description: "Render a scene to SCENE.mp4."},
		mcpserver.ToolOptions{Retry: mcpserver.RetryPolicy{Rerun: true}}, render)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Addr: *listen, Handler: srv.Mux()}
	go func() {
		<-ctx.Done() // SIGTERM: stop taking requests, then drain the tasks
		_ = hs.Shutdown(context.Background())
	}()
	log.Printf("serving http://%s/mcp", *listen)
	if err := hs.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
	drain, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(drain); err != nil {
		log.Print(err)
	}
}
