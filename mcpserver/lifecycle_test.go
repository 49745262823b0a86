package mcpserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// TestShutdown_InlineCalls: Shutdown waits for a tool call that runs
// inline as for a task handler, and at its deadline cancels it with cause
// ErrShutdown and waits for it to return, so that nothing it started
// (a command's process group) outlives the process. The HTTP server's
// own Shutdown cancels nothing.
func TestShutdown_InlineCalls(t *testing.T) {
	started, stopped, release := make(chan struct{}), make(chan error, 1), make(chan struct{})
	srv := mcpserver.New(&mcp.Implementation{Name: "t", Version: "0"}, &mcpserver.Options{Store: memory.New(), Engine: &engine.Options{Workers: 1}})
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "block"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			close(started)
			select {
			case <-ctx.Done():
			case <-release: // the test failed: let the server close
			}
			time.Sleep(20 * time.Millisecond) // a command's grace: Shutdown waits for it
			stopped <- context.Cause(ctx)
			return nil, nil, context.Cause(ctx)
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) }) // before hs.Close
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(expandMeta(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"block"}}`)))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"block"}}
	reply := make(chan string, 1)
	go func() {
		resp, err := hs.Client().Do(req)
		if err != nil {
			reply <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		reply <- string(b)
	}()
	select {
	case <-started:
	case <-time.After(waitTimeout):
		t.Fatal("the tool did not start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = srv.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the deadline's error: it cut a call short", err)
	}
	select {
	case cause := <-stopped:
		if !errors.Is(cause, mcpserver.ErrShutdown) {
			t.Errorf("the call's ctx ended with %v, want ErrShutdown", cause)
		}
	default:
		t.Fatalf("Shutdown returned (%v) before the inline call it cancelled", err)
	}
	// The call cut short gets -32603, which clients retry, not go-sdk's
	// code 0 for a plain error.
	select {
	case out := <-reply:
		if !strings.Contains(out, `"code":-32603`) {
			t.Errorf("the cut call's reply: %s, want -32603", out)
		}
	case <-time.After(waitTimeout):
		t.Error("no reply to the cut call")
	}
}

// TestMaxInlineCalls: past Options.MaxInlineCalls running at once, a
// tools/call gets -32603 (try again) without running its tool; once one
// ends, the next runs.
func TestMaxInlineCalls(t *testing.T) {
	started, release := make(chan struct{}, 2), make(chan struct{})
	var runs atomic.Int32
	srv := mcpserver.New(&mcp.Implementation{Name: "t", Version: "0"}, &mcpserver.Options{Store: memory.New(), Engine: &engine.Options{Workers: 1}, MaxInlineCalls: 1})
	err := mcpserver.AddTool(srv, &mcp.Tool{Name: "block"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			runs.Add(1)
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // before hs.Close: a failing test does not hang
	call := func() string {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(expandMeta(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"block"}}`)))
		req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
			"Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"block"}}
		// Bounded: a call let through past the bound would block.
		resp, err := (&http.Client{Timeout: waitTimeout}).Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	first := make(chan string, 1)
	go func() { first <- call() }()
	select {
	case <-started:
	case <-time.After(waitTimeout):
		t.Fatal("the first call did not start")
	}
	if out := call(); !strings.Contains(out, `"code":-32603`) || !strings.Contains(out, "too many tool calls") {
		t.Errorf("a call past MaxInlineCalls 1: %s, want -32603 saying too many", out)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once: the refused call must not run it", n)
	}
	unblock()
	if out := <-first; !strings.Contains(out, "done") {
		t.Errorf("the first call: %s, want its result", out)
	}
	go func() { <-started }() // the next call's start
	if out := call(); !strings.Contains(out, "done") {
		t.Errorf("a call once the first ended: %s, want its result", out)
	}
}

// TestInlineCallsLeaveRoom: a tools/call that runs its tool inline holds
// its body for as long as the tool runs, and such calls count among the
// requests that stay: together with open streams they hold at most half
// of MaxInflightBytes. Past it an inline call is refused with -32603
// before its tool runs, and other requests keep the other half (before,
// 1 MiB calls to a slow tool filled the budget and every request got
// HTTP 503).
func TestInlineCallsLeaveRoom(t *testing.T) {
	const budget = 2 << 20
	started, release := make(chan struct{}, 8), make(chan struct{})
	c := startServer(t, serverConfig{maxInflightBytes: budget, maxBodyBytes: 1 << 20, register: func(srv *mcpserver.Server) error {
		return mcpserver.AddTool(srv, &mcp.Tool{Name: "block"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct {
				Pad string `json:"pad"`
			}) (*mcp.CallToolResult, any, error) {
				started <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
			})
	}})
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // before the server's cleanup: a failing test does not hang
	body := expandMeta(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"block","arguments":{"pad":"` + strings.Repeat("x", 300<<10) + `"}}}`)
	call := func() *rawResponse {
		return c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", body: []byte(body),
			header: http.Header{"Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"block"}}})
	}
	fits := budget / 2 / len(body) // calls whose bodies fit in the half
	var wg sync.WaitGroup
	for range fits {
		wg.Go(func() { call() })
		<-started // running, holding its body
	}
	resp := call()
	if rep := resp.reply(t); rep.Error == nil || rep.Error.Code != -32603 || !strings.Contains(rep.Error.Message, "running tool calls") {
		t.Errorf("inline call %d beside %d running: HTTP %d %.300s; want -32603 busy", fits+1, fits, resp.status, resp.body)
	}
	select {
	case <-started:
		t.Error("the refused call's tool ran")
	default:
	}
	big := expandMeta(`{"jsonrpc":"2.0","id":2,` + strings.Repeat(" ", budget/2-(256<<10)) + `"method":"tools/list","params":{"_meta":$META}}`)
	if resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", body: []byte(big),
		header: http.Header{"Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"tools/list"}}}); resp.status != http.StatusOK {
		t.Errorf("tools/list of %d bytes beside %d running inline calls: HTTP %d %.200s", len(big), fits, resp.status, resp.body)
	}
	unblock()
	wg.Wait()
}
