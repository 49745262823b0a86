package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// TestMaxInflightBytes checks the budget of bytes in flight, through the
// fast path and through go-sdk: while one request holds most of it (a
// body that is still arriving), a request whose body does not fit is
// refused with HTTP 503, Retry-After and -32603, and a
// tasks/get whose task does not fit gets -32603; once the first request is
// done, both go through.
func TestMaxInflightBytes(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast", false: "sdk"}[fast], func(t *testing.T) {
			const maxBody, budget = 64 << 10, 100 << 10
			srv := mcpserver.New(&mcp.Implementation{Name: "inflight", Version: "1"}, &mcpserver.Options{
				MaxBodyBytes: maxBody, MaxInflightBytes: budget, DisableFastPath: !fast,
				Store: memory.New(), Engine: &engine.Options{Workers: -1},
			})
			err := mcpserver.AddTool(srv, &mcp.Tool{Name: "keep"}, mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
				func(context.Context, *mcp.CallToolRequest, struct {
					Data string `json:"data"`
				}) (*mcp.CallToolResult, any, error) {
					return nil, nil, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer srv.Shutdown(context.Background())
			hs := httptest.NewServer(srv.Handler())
			defer hs.Close()
			post := func(method, name string, body io.Reader, length int64) (int, string, map[string]json.RawMessage) {
				req, _ := http.NewRequest("POST", hs.URL, body)
				req.ContentLength = length
				mcptest.SetHeaders(req.Header, method, name)
				resp, err := hs.Client().Do(req)
				if err != nil {
					t.Error(err)
					return 0, "", nil
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if i := strings.LastIndex(string(b), "data: "); i >= 0 { // an SSE reply
					b = b[i+len("data: "):]
				}
				var m map[string]json.RawMessage
				_ = json.Unmarshal(b, &m)
				return resp.StatusCode, resp.Header.Get("Retry-After"), m
			}
			const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
			call := func(method, name, params string) (int, string, map[string]json.RawMessage) {
				body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + meta + `,` + params + `}}`
				return post(method, name, strings.NewReader(body), int64(len(body)))
			}
			// A task of 60 KiB.
			status, _, m := call("tools/call", "keep", `"name":"keep","arguments":{"data":"`+strings.Repeat("x", 60<<10)+`"}`)
			var created struct {
				TaskID string `json:"taskId"`
			}
			if json.Unmarshal(m["result"], &created); status != 200 || created.TaskID == "" {
				t.Fatalf("create: HTTP %d %s", status, m["error"])
			}
			get := func() (int, string, map[string]json.RawMessage) {
				return call("tasks/get", created.TaskID, `"taskId":"`+created.TaskID+`"`)
			}

			// A request that holds 64 KiB while the last byte of its body
			// has yet to arrive.
			slow := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{` + meta + `,"name":"keep","arguments":{"data":"z"}}}`
			slow += strings.Repeat(" ", maxBody-len(slow))
			// Written on a connection of its own, so that the server has its
			// headers and body at once (an HTTP client may buffer them),
			// once the create above has given its share back (it does so a
			// moment after its reply).
			waitInflight := func(want int64) {
				t.Helper()
				for deadline := time.Now().Add(5 * time.Second); mcpserver.InflightBytes(srv) != want; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("in-flight bytes: %d, want %d", mcpserver.InflightBytes(srv), want)
					}
				}
			}
			waitInflight(0)
			addr := hs.Listener.Addr().String()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
				"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: keep\r\nContent-Length: %d\r\n\r\n%s", addr, maxBody, slow[:maxBody-1]); err != nil {
				t.Fatal(err)
			}
			// Once the server has read what was sent, it holds the buffer
			// of the declared length until the rest of the body arrives.
			waitInflight(maxBody)
			status, retry, m := call("tools/call", "keep", `"name":"keep","arguments":{"data":"`+strings.Repeat("y", 40<<10)+`"}`)
			if status != http.StatusServiceUnavailable || retry == "" || !strings.Contains(string(m["error"]), `"code":-32603`) {
				t.Errorf("a 40 KiB create beside 64 KiB in flight: HTTP %d, Retry-After %q, %s; want 503, Retry-After and -32603", status, retry, m["error"])
			}
			if status, _, m := get(); !strings.Contains(string(m["error"]), "Server busy") {
				t.Errorf("tasks/get of a 60 KiB task beside 64 KiB in flight: HTTP %d, %s %s; want -32603 busy", status, m["error"], m["result"])
			}

			if _, err := conn.Write([]byte(slow[maxBody-1:])); err != nil { // the first request ends
				t.Fatal(err)
			}
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("the slow request: %v %v", resp, err)
			}
			// Its reply may arrive a moment before the server gives its
			// share back.
			for deadline := time.Now().Add(5 * time.Second); ; {
				status, _, m := get()
				if status == 200 && m["result"] != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("tasks/get once the budget is free: HTTP %d %s", status, m["error"])
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// holdInflight makes a request that holds n bytes of c's in-flight budget:
// it sends all but the last byte of a body of n bytes, which never comes,
// and returns once the server holds them; the bytes are given back when
// the test ends or release is called.
func holdInflight(t *testing.T, c *testClient, n int64) (release func()) {
	t.Helper()
	before := mcpserver.InflightBytes(c.srv)
	addr := strings.TrimPrefix(c.base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: %d\r\n\r\n{%s", addr, n, strings.Repeat(" ", int(n-2))); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); mcpserver.InflightBytes(c.srv) < before+n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("in-flight bytes: %d, want %d more than %d", mcpserver.InflightBytes(c.srv), n, before)
		}
	}
	return func() { conn.Close() }
}

// registerBlob adds the tool "blob", whose task waits until release is
// closed (if not nil) and ends with a text result of size bytes.
func registerBlob(size int, release <-chan struct{}) func(*mcpserver.Server) error {
	return func(srv *mcpserver.Server) error {
		return mcpserver.AddTool(srv, &mcp.Tool{Name: "blob"}, mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				if release != nil {
					select {
					case <-release:
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", size)}}}, nil, nil
			})
	}
}

// TestLegacyResult_HeldInBudget: the result that a 2025-11-25
// tasks/result reply carries comes out of the in-flight budget as that of
// tasks/get does: while other requests hold what it needs, tasks/result
// waits, and answers with the result once they are done (before, any
// number of such replies held their results beyond the budget, each one
// written to a client that need not read it). It waits rather than answer
// "busy": tasks/result answers what the call would have, and a client
// takes an error there for the tool's.
func TestLegacyResult_HeldInBudget(t *testing.T) {
	t.Parallel()
	const budget, size = 1 << 20, 600 << 10
	c := startServer(t, serverConfig{maxInflightBytes: budget, maxBodyBytes: 512 << 10, register: registerBlob(size, nil)})
	s := initialize(t, c, "")
	id := s.callTask(`{"name":"blob","arguments":{},"task":{}}`)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(string(s.call("tasks/get", `{"taskId":"`+id+`"}`).raw), `"completed"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task did not complete within 10 s")
		}
	}
	release := holdInflight(t, c, 500<<10)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, c.base+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tasks/result","params":{"taskId":"`+id+`"}}`))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Session-Id": {s.id}, "Mcp-Protocol-Version": {"2025-11-25"}}
	answered := make(chan string, 1)
	go func() {
		resp, err := c.http.Do(req)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- string(b)
	}()
	select {
	case body := <-answered:
		t.Fatalf("tasks/result of a %d-byte result beside 500 KiB in flight (budget 1 MiB) answered: %.200s; want it to wait", size, body)
	case <-time.After(600 * time.Millisecond):
	}
	release()
	select {
	case body := <-answered:
		if strings.Contains(body, `"error"`) || len(body) < size {
			t.Errorf("tasks/result once the budget is free: %.200s; want the result", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tasks/result did not answer within 10 s of the budget's room")
	}
}

// TestListen_NoticeHeldInBudget: a task subscription's notice carries the
// task's result and comes out of the in-flight budget while it is
// written: one that does not fit waits, and is sent once the budget has
// room (before, notices were written whatever the budget).
func TestListen_NoticeHeldInBudget(t *testing.T) {
	t.Parallel()
	const budget, size = 1 << 20, 600 << 10
	st := memory.New()
	release := make(chan struct{})
	c := startServer(t, serverConfig{store: st, maxInflightBytes: budget, maxBodyBytes: 512 << 10, register: registerBlob(size, release)})
	id := c.createTask(t, "", "blob", `{}`)
	s := c.listen(t, "", 1, id)
	if ack := decodeListen(t, s.next(t)); ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("want the acknowledgement first, got %+v", ack)
	}
	free := holdInflight(t, c, 500<<10)
	close(release)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if r, err := st.Get(t.Context(), id); err == nil && r.Status == task.Completed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task did not complete within 10 s")
		}
	}
	// Past a retry or two, nothing has come: the notice does not fit.
	for quiet := time.After(600 * time.Millisecond); ; {
		select {
		case line := <-s.lines:
			if strings.HasPrefix(line, "data: ") {
				t.Fatalf("a notice of a %d-byte result beside 500 KiB in flight (budget 1 MiB) was sent: %.200s", size, line)
			}
			continue
		case <-quiet:
		}
		break
	}
	free()
	m := decodeListen(t, s.next(t))
	if m.Params.Status != "completed" || len(m.Params.Result) < size {
		t.Fatalf("want the completed notice with its result once the budget is free, got status %q and %d bytes of result", m.Params.Status, len(m.Params.Result))
	}
}

// TestInflight_BodyTakenAsItArrives: a request holds the in-flight bytes
// of its body as they arrive, not those its Content-Length declares.
// Before, a few connections that declared the largest body and sent one
// byte held the whole budget, and every other request got HTTP 503 for as
// long as the read timeout let them wait. A body whose bytes arrive past
// the budget is still refused with 503 and Retry-After.
func TestInflight_BodyTakenAsItArrives(t *testing.T) {
	const maxBody = 1 << 20
	srv := mcpserver.New(&mcp.Implementation{Name: "inflight", Version: "1"}, &mcpserver.Options{
		MaxBodyBytes: maxBody, MaxInflightBytes: maxBody,
		Store: memory.New(), Engine: &engine.Options{Workers: -1},
	})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	t.Cleanup(hs.Close) // after the connections below are closed
	addr := hs.Listener.Addr().String()
	// send writes a tools/list request declaring a body of length bytes on
	// a connection of its own and sends the first sent bytes of it.
	send := func(length, sent int) net.Conn {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		body += strings.Repeat(" ", length-len(body))
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		// Written on the side: a server that refuses the body stops
		// reading it, and its reply is what the test checks.
		go fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nContent-Length: %d\r\n\r\n%s", addr, length, body[:sent])
		return conn
	}
	status := func(conn net.Conn) (int, string) {
		t.Helper()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	waitInflight := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); mcpserver.InflightBytes(srv) != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("in-flight bytes: %d, want %d", mcpserver.InflightBytes(srv), want)
			}
		}
	}

	// Four connections declare the largest body and send one byte of it:
	// each holds the first 16 KiB.
	var idle []net.Conn
	for range 4 {
		idle = append(idle, send(maxBody, 1))
	}
	waitInflight(4 * 16 << 10)
	if code, _ := status(send(maxBody/2, maxBody/2)); code != http.StatusOK {
		t.Errorf("a request of half the budget beside four declared and unsent bodies: HTTP %d, want 200", code)
	}
	// A body whose bytes arrive past the budget is refused as they do.
	if code, retry := status(send(maxBody, maxBody)); code != http.StatusServiceUnavailable || retry == "" {
		t.Errorf("a body of the whole budget beside 64 KiB held: HTTP %d, Retry-After %q; want 503 and Retry-After", code, retry)
	}
	for _, c := range idle {
		c.Close()
	}
	waitInflight(0)
	if code, _ := status(send(maxBody, maxBody)); code != http.StatusOK {
		t.Errorf("a body of the whole budget alone: HTTP %d, want 200", code)
	}
}

// TestBodyBound: a body of Options.MaxBodyBytes is read whole, declared
// or chunked; one byte more gets HTTP 413 and -32600, at once when its
// Content-Length says so.
func TestBodyBound(t *testing.T) {
	const maxBody = 100 << 10
	srv := mcpserver.New(&mcp.Implementation{Name: "bound", Version: "1"}, &mcpserver.Options{
		MaxBodyBytes: maxBody, Store: memory.New(), Engine: &engine.Options{Workers: -1},
	})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	body := func(n int) string {
		b := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		return b + strings.Repeat(" ", n-len(b))
	}
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"declared at the bound", maxBody, false, http.StatusOK},
		{"declared past the bound", maxBody + 1, false, http.StatusRequestEntityTooLarge},
		{"chunked at the bound", maxBody, true, http.StatusOK},
		{"chunked past the bound", maxBody + 1, true, http.StatusRequestEntityTooLarge},
		{"small", 200, false, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(body(tc.size))
			if tc.chunked {
				r = io.MultiReader(r) // a length net/http cannot see: sent chunked
			}
			req, _ := http.NewRequest("POST", hs.URL, r)
			mcptest.SetHeaders(req.Header, "tools/list", "")
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want || (tc.want == http.StatusRequestEntityTooLarge && !strings.Contains(string(b), `"code":-32600`)) {
				t.Errorf("HTTP %d %.200s, want %d", resp.StatusCode, b, tc.want)
			}
		})
	}
}
