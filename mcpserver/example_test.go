package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

	created := post(ts.URL, "tools/call", "export", `"name":"export","arguments":{"rows":3}`)
	fmt.Println(created["resultType"], created["status"])
	id := created["taskId"].(string)
	for {
		got := post(ts.URL, "tasks/get", id, `"taskId":"`+id+`"`)
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
func post(url, method, name, params string) map[string]any {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + meta + `,` + params + `}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if i := bytes.LastIndex(b, []byte("data: ")); i >= 0 { // an SSE reply
		b = b[i+len("data: "):]
	}
	var msg struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		panic(err)
	}
	return msg.Result
}
