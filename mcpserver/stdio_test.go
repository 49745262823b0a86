package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/fixtures"
	"github.com/mcptasks/mcptasks/internal/tasktools"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/changefeed"
	"github.com/mcptasks/mcptasks/store/memory"
)

// stdioPeer is the client end of a ServeStdio connection.
type stdioPeer struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *io.PipeReader // what the server writes, read into lines
	lines chan json.RawMessage
	done  chan error
}

// startStdio serves the tasktools fixtures over a pipe until the test ends
// or the peer closes its end.
func startStdio(t *testing.T) *stdioPeer {
	t.Helper()
	return startStdioWith(t, func(srv *mcpserver.Server) error {
		return tasktools.Register(srv, &tasktools.Options{Step: testStep})
	})
}

// startStdioWith is startStdio with the tools that register adds.
func startStdioWith(t *testing.T, register func(*mcpserver.Server) error) *stdioPeer {
	t.Helper()
	return startStdioCtx(t, context.Background(), register)
}

// startStdioCtx is startStdioWith serving until ctx is done.
func startStdioCtx(t *testing.T, ctx context.Context, register func(*mcpserver.Server) error) *stdioPeer {
	t.Helper()
	srv := newStdioServer(t, register)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, out: outR, lines: make(chan json.RawMessage, 16), done: make(chan error, 1)}
	go func() {
		p.done <- srv.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			p.lines <- json.RawMessage(append([]byte(nil), sc.Bytes()...))
		}
		close(p.lines)
	}()
	t.Cleanup(func() { inW.Close() })
	return p
}

// newStdioServer starts a server on a memory store with the tools that
// register adds, and shuts it down when t ends.
func newStdioServer(t *testing.T, register func(*mcpserver.Server) error) *mcpserver.Server {
	t.Helper()
	st := memory.New()
	srv := mcpserver.New(&mcp.Implementation{Name: "stdio-test", Version: "0"}, &mcpserver.Options{ServerOptions: fixtures.ServerOptions(),
		Store: st, Engine: &engine.Options{Workers: 4},
		ChangeFeed: changefeed.New(st, nil), MaxSubscriptions: 1})
	if err := register(srv); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv
}

// send writes one message, its _meta macros expanded.
func (p *stdioPeer) send(msg string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, expandMeta(msg)+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next message of the server, as a map.
func (p *stdioPeer) next() map[string]json.RawMessage {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("the server closed its output")
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			p.t.Fatalf("not JSON: %s", line)
		}
		return m
	case <-time.After(waitTimeout):
		p.t.Fatal("no message from the server")
	}
	return nil
}

// legacyConfirmDelete starts a 2025-11-25 session that declares
// elicitation (initialize, id 1) and makes a task of confirm_delete (id 2);
// it returns the task's id.
func (p *stdioPeer) legacyConfirmDelete() string {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := p.next(); !strings.Contains(string(m["result"]), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		p.t.Fatalf("initialize: %s", m["result"])
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"confirm_delete","arguments":{"filename":"a.txt"},"task":{}}}`)
	var cr struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if m := p.next(); json.Unmarshal(m["result"], &cr) != nil || cr.Task.TaskID == "" {
		p.t.Fatalf("tools/call: %s", m["result"])
	}
	return cr.Task.TaskID
}

// wantEnded fails the test unless ServeStdio returns, without error,
// within waitTimeout; after says after what.
func (p *stdioPeer) wantEnded(after string) {
	p.t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(waitTimeout):
		p.t.Fatalf("ServeStdio did not return %s", after)
	}
}

// TestStdio: one stdio connection speaks either era, as HTTP does: a
// 2026-07-28 request carries its version in _meta; a 2025-11-25 session
// starts with initialize, and a task's question reaches the client as a
// request on the connection, whose answer is a line the client writes.
// EOF on stdin ends ServeStdio.
func TestStdio(t *testing.T) {
	t.Run("2026-07-28", func(t *testing.T) {
		p := startStdio(t)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META,"name":"slow_compute","arguments":{"seconds":0.05}}}`)
		m := p.next()
		var cr struct {
			ResultType string `json:"resultType"`
			TaskID     string `json:"taskId"`
		}
		if err := json.Unmarshal(m["result"], &cr); err != nil || cr.ResultType != "task" || string(m["id"]) != "1" {
			t.Fatalf("tools/call: %s", m["result"])
		}
		p.send(`{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"_meta":$META,"taskId":"` + cr.TaskID + `"}}`)
		if m := p.next(); string(m["id"]) != `"g"` || !strings.Contains(string(m["result"]), cr.TaskID) {
			t.Fatalf("tasks/get: %s", m["result"])
		}
		p.in.Close()
		p.wantEnded("at EOF")
	})
	t.Run("2025-11-25", func(t *testing.T) {
		p := startStdio(t)
		id := p.legacyConfirmDelete()
		p.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
		var question map[string]json.RawMessage
		for question == nil {
			switch m := p.next(); {
			case string(m["method"]) == `"elicitation/create"`:
				question = m
			case string(m["method"]) == `"notifications/tasks/status"`:
			default:
				t.Fatalf("before the question: %v", m)
			}
		}
		if qid := string(question["id"]); !strings.HasPrefix(qid, `"t/`+id+`.`) || !strings.HasSuffix(qid, `/confirm-delete"`) {
			t.Fatalf("question id %s", question["id"])
		}
		p.send(`{"jsonrpc":"2.0","id":` + string(question["id"]) + `,"result":{"action":"accept","content":{"confirm":true}}}`)
		for {
			m := p.next()
			if string(m["id"]) == "3" {
				if !strings.Contains(string(m["result"]), "Deleted a.txt") || !strings.Contains(string(m["result"]), "related-task") {
					t.Errorf("tasks/result: %s", m["result"])
				}
				break
			}
		}
	})
}

// TestStdioListen: a task subscription works over stdio as over HTTP: the
// acknowledgement, a notification for every change, and the listen's
// response once its task is terminal. notifications/cancelled naming the
// listen ends it early, as closing the stream does over HTTP: its
// subscription is released and it is answered no more.
func TestStdioListen(t *testing.T) {
	for _, cancel := range []bool{false, true} {
		t.Run(map[bool]string{false: "to the end", true: "cancelled"}[cancel], func(t *testing.T) {
			p := startStdio(t) // one subscription per principal
			p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META,"name":"confirm_delete","arguments":{"filename":"a.txt"}}}`)
			var cr struct {
				TaskID string `json:"taskId"`
			}
			if m := p.next(); json.Unmarshal(m["result"], &cr) != nil || cr.TaskID == "" {
				t.Fatalf("tools/call: %v", m)
			}
			// The question is asked: an answer before it would be one to
			// no question (the create is stored without the question when
			// the handler is slower than the fold window, on a loaded
			// machine), and the task would wait on.
			waitStatus(t, p, cr.TaskID, "input_required")
			p.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"taskIds":["` + cr.TaskID + `","unknown"]}}}`)
			ack := p.next()
			if string(ack["method"]) != `"notifications/subscriptions/acknowledged"` ||
				string(ack["params"]) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":{"taskIds":["`+cr.TaskID+`"]}}` {
				t.Fatalf("acknowledgement of %s: %s", cr.TaskID, ack["params"])
			}
			if cancel {
				p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":$META,"requestId":"L"}}`)
				waitReleased(t, p)
			}
			p.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/update","params":{"_meta":$META,"taskId":"` + cr.TaskID + `","inputResponses":{"confirm-delete":{"action":"accept","content":{"confirm":true}}}}}`)
			if cancel {
				if m := p.next(); string(m["id"]) != "2" {
					t.Fatalf("tasks/update: %v", m)
				}
				// Only the answers to tasks/get come now: the listen
				// notifies and answers no more.
				waitStatus(t, p, cr.TaskID, "completed")
				return
			}
			var statuses []string
			for updated, ended := false, false; !updated || !ended; {
				m := p.next()
				var n struct {
					Status string `json:"status"`
				}
				switch {
				case string(m["id"]) == "2":
					updated = true
				case string(m["id"]) == `"L"`:
					if string(m["result"]) != `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"stdio-test","version":"0"},"io.modelcontextprotocol/subscriptionId":"L"},"resultType":"complete"}` {
						t.Errorf("the listen's response: %s", m["result"])
					}
					ended = true
				case string(m["method"]) == `"notifications/tasks"` && json.Unmarshal(m["params"], &n) == nil:
					statuses = append(statuses, n.Status)
				default:
					t.Fatalf("unexpected message %v", m)
				}
			}
			if len(statuses) == 0 || statuses[len(statuses)-1] != "completed" {
				t.Errorf("notifications: %v, want the last one completed", statuses)
			}
		})
	}
}

// waitReleased waits until the principal of p holds no task subscription:
// a probe listen (of an unknown id, which ends at once) is refused with
// CodeTooManySubscriptions while the one it may hold is open.
func waitReleased(t *testing.T, p *stdioPeer) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for i := 0; ; i++ {
		id := fmt.Sprintf(`"probe%d"`, i)
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"taskIds":["unknown"]}}}`)
		m := p.next()
		if string(m["id"]) == id && strings.Contains(string(m["error"]), fmt.Sprint(mcpserver.CodeTooManySubscriptions)) {
			if time.Now().After(deadline) {
				t.Fatal("the cancelled listen still holds its subscription")
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if string(m["method"]) != `"notifications/subscriptions/acknowledged"` {
			t.Fatalf("probe listen: %v", m)
		}
		if m := p.next(); string(m["id"]) != id {
			t.Fatalf("probe listen: %v", m)
		}
		return
	}
}

// waitStatus polls tasks/get over p until the task has status; any other
// message fails the test.
func waitStatus(t *testing.T, p *stdioPeer, id, status string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for i := 0; ; i++ {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"get%d","method":"tasks/get","params":{"_meta":$META,"taskId":%q}}`, i, id))
		m := p.next()
		if string(m["id"]) != fmt.Sprintf(`"get%d"`, i) {
			t.Fatalf("waiting for %s, got %v", status, m)
		}
		if strings.Contains(string(m["result"]), `"status":"`+status+`"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: not %s: %s", id, status, m["result"])
		}
		time.Sleep(time.Millisecond)
	}
}

// TestStdioCancel: notifications/cancelled stops the inline call it names,
// whatever form of the id it uses (escaped, -0), in either era, and the
// server answers the call no more.
func TestStdioCancel(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, c := range []struct {
		name, setup, call, cancel, next, nextID string
	}{
		{name: `"cA"`,
			call:   `{"jsonrpc":"2.0","id":"cA","method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"wait"}}`,
			cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":$META_NOTASKS,"requestId":"cA"}}`,
			next:   `{"jsonrpc":"2.0","id":"after","method":"tools/list","params":{"_meta":$META_NOTASKS}}`, nextID: `"after"`},
		{name: `"c\u0041"`,
			call:   `{"jsonrpc":"2.0","id":"c\u0041","method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"wait"}}`,
			cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":$META_NOTASKS,"requestId":"cA"}}`,
			next:   `{"jsonrpc":"2.0","id":"after","method":"tools/list","params":{"_meta":$META_NOTASKS}}`, nextID: `"after"`},
		{name: `-0`,
			call:   `{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"wait"}}`,
			cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":$META_NOTASKS,"requestId":0}}`,
			next:   `{"jsonrpc":"2.0","id":"after","method":"tools/list","params":{"_meta":$META_NOTASKS}}`, nextID: `"after"`},
		{name: "2025-11-25", setup: initialize,
			call:   `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait"}}`,
			cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
			next:   `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nextID: `3`},
	} {
		t.Run(c.name, func(t *testing.T) {
			started, stopped := make(chan struct{}), make(chan error, 1)
			p := startStdioWith(t, func(srv *mcpserver.Server) error {
				return mcpserver.AddTool(srv, &mcp.Tool{Name: "wait"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever},
					func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
						close(started)
						<-ctx.Done()
						stopped <- ctx.Err()
						return nil, nil, ctx.Err()
					})
			})
			if c.setup != "" {
				p.send(c.setup)
				p.next()
				p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			p.send(c.call)
			select {
			case <-started:
			case <-time.After(waitTimeout):
				t.Fatal("the tool did not start")
			}
			p.send(c.cancel)
			select {
			case err := <-stopped:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("the tool's ctx ended with %v, want context.Canceled", err)
				}
			case <-time.After(waitTimeout):
				t.Fatal("the cancelled call went on")
			}
			p.send(c.next)
			if m := p.next(); string(m["id"]) != c.nextID {
				t.Errorf("the next message is %v, want the answer to tools/list: the cancelled call was answered", m)
			}
		})
	}
}

// TestStdio_ContextEnds: ServeStdio returns once its context is done,
// though the client keeps stdin open (before, it went on reading, and
// answered nothing: SIGTERM did not end "serve --stdio").
func TestStdio_ContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := startStdioCtx(t, ctx, func(*mcpserver.Server) error { return nil })
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":$META_NOTASKS}}`)
	p.next()
	cancel()
	p.wantEnded("with its context done and stdin open")
}

// addPause adds the synchronous tool "pause", which answers after d unless
// its call is stopped first.
func addPause(srv *mcpserver.Server, d time.Duration) error {
	return mcpserver.AddTool(srv, &mcp.Tool{Name: "pause"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(d):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "paused"}}}, nil, nil
			}
		})
}

// TestStdio_EOFAnswersInFlight: EOF on stdin (the client's way to shut
// the server down) lets the requests in flight be answered, and ends the
// streams that follow a task (a subscription to a task that runs for a
// minute; a 2025-11-25 tasks/result of a task whose question nobody can
// answer now); then ServeStdio returns. Before, EOF stopped every request
// in flight: a host that wrote its requests and closed the pipe got no
// answer, though the task it created ran.
func TestStdio_EOFAnswersInFlight(t *testing.T) {
	p := startStdioWith(t, func(srv *mcpserver.Server) error {
		return errors.Join(tasktools.Register(srv, &tasktools.Options{Step: testStep}), addPause(srv, 100*time.Millisecond))
	})
	p.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"_meta":$META,"name":"slow_compute","arguments":{"seconds":60}}}`)
	var long struct {
		TaskID string `json:"taskId"`
	}
	if m := p.next(); json.Unmarshal(m["result"], &long) != nil || long.TaskID == "" {
		t.Fatalf("tools/call: %v", m)
	}
	batch := expandMeta(`{"jsonrpc":"2.0","id":"listen","method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"taskIds":["`+long.TaskID+`"]}}}`) + "\n" +
		expandMeta(`{"jsonrpc":"2.0","id":"sync","method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"pause"}}`) + "\n" +
		expandMeta(`{"jsonrpc":"2.0","id":"task","method":"tools/call","params":{"_meta":$META,"name":"slow_compute","arguments":{"seconds":60}}}`) + "\n"
	if _, err := io.WriteString(p.in, batch); err != nil {
		t.Fatal(err)
	}
	p.in.Close()
	answered := map[string]bool{}
	for len(answered) < 2 {
		m := p.next()
		if m["method"] != nil {
			continue // the subscription's acknowledgement, if it came before EOF
		}
		var id string
		if json.Unmarshal(m["id"], &id) != nil || m["result"] == nil || id == "listen" {
			t.Fatalf("want the answers to the two calls, got %v", m)
		}
		answered[id] = true
	}
	if !answered["sync"] || !answered["task"] {
		t.Errorf("answered %v, want sync and task", answered)
	}
	p.wantEnded("after EOF, with a subscription open")
}

// TestStdio_EOFEndsLegacyResult: EOF ends a 2025-11-25 tasks/result whose
// task asks a question, which nobody can answer now: ServeStdio returns
// (before the change above, at once; with it but without this, never).
func TestStdio_EOFEndsLegacyResult(t *testing.T) {
	p := startStdio(t)
	id := p.legacyConfirmDelete()
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
	for {
		if m := p.next(); string(m["method"]) == `"elicitation/create"` {
			break // the question, on the tasks/result stream
		}
	}
	p.in.Close()
	p.wantEnded("after EOF, with a tasks/result open")
}

// TestStdioCancel_RightBehind: a notifications/cancelled written right
// behind its request, in the same write, stops it: cancels and requests
// are matched in the order they are read (before, each line was handled
// on a goroutine of its own, and a cancel could come first, find nothing,
// and let the call run to its answer).
func TestStdioCancel_RightBehind(t *testing.T) {
	p := startStdioWith(t, func(srv *mcpserver.Server) error {
		return addPause(srv, 50*time.Millisecond)
	})
	const calls = 50
	var batch strings.Builder
	for i := range calls {
		fmt.Fprintf(&batch, "%s\n%s\n",
			expandMeta(fmt.Sprintf(`{"jsonrpc":"2.0","id":"c%d","method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"pause"}}`, i)),
			expandMeta(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":$META_NOTASKS,"requestId":"c%d"}}`, i)))
	}
	if _, err := io.WriteString(p.in, batch.String()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // past the tool's 50 ms: a call not stopped has answered by now
	p.send(`{"jsonrpc":"2.0","id":"after","method":"tools/list","params":{"_meta":$META_NOTASKS}}`)
	if m := p.next(); string(m["id"]) != `"after"` {
		t.Errorf("the first message is %s, want the answer to tools/list: a call cancelled right behind its request was answered", m["id"])
	}
}

// TestStdio_LineTooLong: a line longer than MaxBodyBytes gets a JSON-RPC
// error, and the connection serves on (before, ServeStdio ended with
// "token too long", and the process with it).
func TestStdio_LineTooLong(t *testing.T) {
	p := startStdioWith(t, func(*mcpserver.Server) error { return nil })
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":$META_NOTASKS,"pad":"` + strings.Repeat("x", int(mcpserver.DefaultMaxBodyBytes)) + `"}}`)
	if m := p.next(); string(m["id"]) != "null" || !strings.Contains(string(m["error"]), "-32600") || !strings.Contains(string(m["error"]), "too large") {
		t.Errorf("a line over MaxBodyBytes: %v, want a -32600 error saying it is too large", m)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":$META_NOTASKS}}`)
	if m := p.next(); string(m["id"]) != "2" || m["result"] == nil {
		t.Errorf("the request after it: %v, want its answer", m)
	}
}

// TestStdio_OutputStuck: a host that stops reading stdout without closing
// it does not hold ServeStdio once its context ends (SIGTERM): before, the
// write of a reply blocked it for ever, and only SIGKILL ended the process.
func TestStdio_OutputStuck(t *testing.T) {
	srv := newStdioServer(t, func(*mcpserver.Server) error { return nil })
	out := &stuckWriter{entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(out.release) })
	inR, inW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, inR, out) }()
	if _, err := io.WriteString(inW, expandMeta(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":$META_NOTASKS}}`)+"\n"); err != nil {
		t.Fatal(err)
	}
	<-out.entered // the reply's write blocks
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("ServeStdio did not return with its context done and a write to its output blocked")
	}
}

// stuckWriter is an output nobody reads: a write blocks until release is
// closed; entered is closed when the first one starts.
type stuckWriter struct {
	entered, release chan struct{}
	once             sync.Once
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	return len(p), nil
}

// TestStdio_OutputGone: once the client stops reading (its end of stdout
// closed), ServeStdio returns, so that the process drains, though stdin
// stays open (before, it served on, writing to nobody; "serve --stdio"
// died of SIGPIPE instead of draining).
func TestStdio_OutputGone(t *testing.T) {
	p := startStdioWith(t, func(*mcpserver.Server) error { return nil })
	p.out.Close()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":$META_NOTASKS}}`)
	p.wantEnded("once its output failed")
}
