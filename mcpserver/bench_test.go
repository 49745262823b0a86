package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// BenchmarkTasksGet measures the server-side cost of one tasks/get, handler
// only (no network), through the fast path and through go-sdk.
func BenchmarkTasksGet(b *testing.B) {
	for _, bc := range []struct {
		name string
		off  bool
	}{{"fast", false}, {"sdk", true}} {
		b.Run(bc.name, func(b *testing.B) {
			h := benchHandler(b, &mcpserver.Options{DisableFastPath: bc.off})
			created := benchPost(b, h, "tools/call", "wait", `"name":"wait","arguments":{}`)
			var res struct {
				Result struct {
					TaskID string `json:"taskId"`
				} `json:"result"`
			}
			if err := json.Unmarshal(created, &res); err != nil || res.Result.TaskID == "" {
				b.Fatalf("create: %s", created)
			}
			id := res.Result.TaskID
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				benchPost(b, h, "tasks/get", id, `"taskId":"`+id+`"`)
			}
		})
	}
}

// benchHandler returns the handler of a server with one tool, "wait",
// which runs as a task until it is cancelled; no worker runs it.
func benchHandler(b *testing.B, opts *mcpserver.Options) http.Handler {
	o := mcpserver.Options{}
	if opts != nil {
		o = *opts
	}
	o.Store, o.Engine = memory.New(), &engine.Options{Workers: -1}
	srv := mcpserver.New(&mcp.Implementation{Name: "bench", Version: "1"}, &o)
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "wait"}, mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv.Handler()
}

func benchPost(b *testing.B, h http.Handler, method, name, params string) []byte {
	rec := postRequest(h, method, name, tasksBody(method, params))
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: HTTP %d: %s", method, rec.Code, rec.Body)
	}
	return mcptest.LastMessage(rec.Body.Bytes())
}
