package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

// legacyOptions are the options of a client that speaks 2025-11-25.
func legacyOptions(o client.Options) *client.Options {
	o.ProtocolVersion = client.LegacyProtocolVersion
	return &o
}

// TestLegacyLifecycle: against a server's 2025-11-25 side, the client
// creates the task with params.task, polls tasks/get, reads the result with
// tasks/result, and answers questions asked on the tasks/result stream;
// the API and the outcomes are those of 2026-07-28.
func TestLegacyLifecycle(t *testing.T) {
	rec := newRecorder()
	s := startServer(t, serverConfig{wrap: rec.wrap})
	h := newAccept(func(key string) map[string]any {
		if strings.HasSuffix(key, "/confirm-delete") {
			return map[string]any{"confirm": true}
		}
		return map[string]any{"name": "x"}
	})
	c := newClient(s, legacyOptions(client.Options{InputHandler: h}))
	ctx := testContext(t)

	tk := callTask(t, c, "slow_compute", map[string]any{"seconds": 0.05, "label": "x"})
	if last := tk.Last(); last.Status != task.Working || last.TTLMs == nil || last.PollIntervalMs == nil {
		t.Errorf("status from the CreateTaskResult: %+v", last)
	}
	res, err := tk.Wait(ctx)
	if err != nil || !strings.Contains(text(res), `Computed "x"`) {
		t.Fatalf("slow_compute: %v, %v", text(res), err)
	}
	if got, _ := c.Protocol(ctx); got != client.LegacyProtocolVersion {
		t.Errorf("Protocol = %q", got)
	}

	tk = callTask(t, c, "confirm_delete", map[string]any{"filename": "a.txt"})
	if res, err = tk.Wait(ctx); err != nil || text(res) != "Deleted a.txt" {
		t.Fatalf("confirm_delete: %q, %v", text(res), err)
	}
	key := "" // the id of the server's request: t/<taskId>.<asking>/confirm-delete
	h.mu.Lock()
	for k := range h.calls {
		if strings.HasPrefix(k, "t/"+tk.ID+".") && strings.HasSuffix(k, "/confirm-delete") {
			key = k
		}
	}
	h.mu.Unlock()
	if n := h.count(key); n != 1 {
		t.Errorf("handler asked %d times for %s, want 1 (calls %v)", n, key, h.calls)
	}
	if r := h.reqs[key]; r == nil || r.TaskID != tk.ID || r.Elicit == nil || r.Elicit.Message != "Delete a.txt?" {
		t.Errorf("input request: %+v", r)
	}

	// The wire: a session, no _meta, params.task on the call.
	for _, g := range rec.requests("tools/call") {
		if g.header.Get("Mcp-Session-Id") == "" || g.header.Get("MCP-Protocol-Version") != client.LegacyProtocolVersion {
			t.Errorf("tools/call headers: %v", g.header)
		}
		if !strings.Contains(string(g.req.Params), `"task":{}`) || strings.Contains(string(g.req.Params), "_meta") {
			t.Errorf("tools/call params: %s", g.req.Params)
		}
	}
	if len(rec.requests("tasks/result")) == 0 {
		t.Error("no tasks/result seen")
	}

	// A plain tool stays synchronous.
	r, err := c.CallTool(ctx, "greet", map[string]any{"name": "Ann"})
	if err != nil || r.Task != nil || text(r.Result) != "Hello, Ann!" {
		t.Errorf("greet: %+v, %v", r, err)
	}
}

// TestLegacyOutcomes: a tool error completes with isError (2025-11-25 says
// failed, the client says what the extension says), a JSON-RPC error
// fails, and a cancelled task ends cancelled; cancelling it again is not
// an error.
func TestLegacyOutcomes(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, legacyOptions(client.Options{}))
	ctx := testContext(t)

	res, err := callTask(t, c, "failing_job", nil).Wait(ctx)
	if err != nil || !res.IsError {
		t.Errorf("failing_job: %+v, %v", res, err)
	}
	_, err = callTask(t, c, "protocol_error_job", nil).Wait(ctx)
	var te *client.TaskError
	if !errors.As(err, &te) || te.Status != task.Failed || te.Err == nil || te.Err.Code != -32603 {
		t.Errorf("protocol_error_job: %v", err)
	}

	tk := callTask(t, c, "slow_compute", map[string]any{"seconds": 60})
	if err := tk.Cancel(ctx); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	st, err := tk.Get(ctx)
	if err != nil || st.Status != task.Cancelled {
		t.Fatalf("after Cancel: %+v, %v (2025-11-25 cancels before the reply)", st, err)
	}
	if err := tk.Cancel(ctx); err != nil {
		t.Errorf("second Cancel: %v", err)
	}
	if _, err := c.Task("AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA").Get(ctx); !errors.Is(err, client.ErrInvalidParams) {
		t.Errorf("unknown task: %v", err)
	}
}

// TestLegacyAnswerElsewhere: without an InputHandler, Get shows the
// question under its key; another client (another process, with a session
// of its own) answers it with Update, as "mcptasks answer" does.
func TestLegacyAnswerElsewhere(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := testContext(t)
	elicit := client.Options{Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}}
	tk := callTask(t, newClient(s, legacyOptions(elicit)), "multi_input", nil)
	st := waitQuestions(t, tk, 2)
	other := newClient(s, legacyOptions(client.Options{})).Task(tk.ID)
	answers := map[string]any{}
	for key, r := range st.InputRequests {
		if r.Method != client.MethodElicit {
			t.Errorf("%s: method %s", key, r.Method)
		}
		answers[key] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": key[len(key)-5:]}}
	}
	if err := other.Update(ctx, answers); err != nil {
		t.Fatal(err)
	}
	res, err := tk.Wait(ctx)
	if err != nil || text(res) != "first=first second=econd" {
		t.Errorf("result: %q, %v", text(res), err)
	}
}

// waitQuestions polls the 2025-11-25 task tk until it needs input and its
// status carries n questions. A 2025-11-25 server sends them over
// tasks/result, and one read may end before they came (see
// TaskStatus.InputRequests).
func waitQuestions(t *testing.T, tk *client.Task, n int) *client.TaskStatus {
	t.Helper()
	return waitUntil(t, tk, task.InputRequired, func(st *client.TaskStatus) bool {
		if len(st.InputRequests) > n {
			t.Fatalf("input requests: %v, want %d", st.InputRequests, n)
		}
		return len(st.InputRequests) == n
	})
}

// TestLegacyFindsOut: with no ProtocolVersion, a client of a server that
// does not answer server/discover (as a 2025-11-25 server does not) opens
// a 2025-11-25 session and calls in it.
func TestLegacyFindsOut(t *testing.T) {
	rec := newRecorder()
	s := startServer(t, serverConfig{wrap: func(next http.Handler) http.Handler {
		return rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("MCP-Protocol-Version") == client.ProtocolVersion {
				http.Error(w, "Bad Request: No valid session ID provided", http.StatusBadRequest)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}})
	c := newClient(s, nil)
	ctx := testContext(t)
	res, err := callTask(t, c, "slow_compute", map[string]any{"seconds": 0.05}).Wait(ctx)
	if err != nil || !strings.Contains(text(res), "Computed") {
		t.Fatalf("slow_compute: %q, %v", text(res), err)
	}
	if got, _ := c.Protocol(ctx); got != client.LegacyProtocolVersion {
		t.Errorf("Protocol = %q", got)
	}
	if n := len(rec.requests("initialize")); n != 1 {
		t.Errorf("%d initialize requests, want 1", n)
	}
}

// TestLegacyFlakyServer: against a 2025-11-25 server that stops answering,
// RequestTimeout bounds a tasks/get as it does in 2026-07-28; an error of
// tasks/result for a task that tasks/get says completed is a failed poll,
// not the task's failure; and one for a task that was waiting for input is
// the task's failure.
func TestLegacyFlakyServer(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		reply := func(member string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,` + member + `}`))
		}
		switch {
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			reply(`"result":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"x","version":"0"}}`)
		case m.Method == "tasks/get" && m.Params.TaskID == "silent":
			<-r.Context().Done() // the server stops answering
		case m.Method == "tasks/get" && m.Params.TaskID == "asks":
			reply(`"result":{"taskId":"asks","status":"input_required","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:00:01Z","ttl":60000}`)
		case m.Method == "tasks/result" && m.Params.TaskID == "asks": // it failed while it waited
			reply(`"error":{"code":-32001,"message":"the tool gave up"}`)
		case m.Method == "tasks/get":
			reply(`"result":{"taskId":"done","status":"completed","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:00:01Z","ttl":60000}`)
		case m.Method == "tasks/result":
			reply(`"error":{"code":-32603,"message":"try again"}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(hs.Close)
	c := client.New(hs.URL, legacyOptions(client.Options{RequestTimeout: 50 * time.Millisecond}))
	ctx := testContext(t)
	if _, err := c.Task("silent").Get(ctx); !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Errorf("tasks/get of a server that stops answering: %v (test ctx: %v); want RequestTimeout's deadline", err, ctx.Err())
	}
	if st, err := c.Task("done").Get(testContext(t)); !errors.Is(err, client.ErrInternal) {
		t.Errorf("a completed task whose tasks/result fails: %+v, %v; want the poll's error", st, err)
	}
	if st, err := c.Task("asks").Get(testContext(t)); err != nil || st.Status != task.Failed || st.Error == nil || st.Error.Code != -32001 {
		t.Errorf("a task that fails while its question waits: %+v, %v; want it failed with -32001", st, err)
	}
}

// TestLegacySyncQuestion: a 2025-11-25 server (go-sdk's own, stateful)
// whose plain tool pings, then asks, while it serves tools/call, on the
// call's own SSE reply: the client answers the ping itself and the
// question through its InputHandler, and without one refuses the question
// at once. Before, it ignored the question, and the
// call waited until its context ended.
func TestLegacySyncQuestion(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Ping(ctx, nil); err != nil { // answered by the client itself, not its handler
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "ping: " + err.Error()}}}, nil, nil
		}
		r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}}})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "not answered: " + err.Error()}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %v", r.Action, r.Content["n"])}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	answering := client.InputHandlerFunc(func(_ context.Context, _ string, req *client.InputRequest) (any, error) {
		if req.Elicit == nil || req.Elicit.Message != "Name?" || req.Tool != "ask" {
			return nil, fmt.Errorf("unexpected question %+v", req)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": "Ada"}}, nil
	})
	for _, tc := range []struct {
		name    string
		handler client.InputHandler
		want    string
		isError bool
	}{
		{"with a handler", answering, "accept Ada", false},
		{"without one", nil, "not answered", true},
	} {
		c := client.New(hs.URL, legacyOptions(client.Options{InputHandler: tc.handler}))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		res, err := c.CallTool(ctx, "ask", map[string]any{})
		cancel()
		if err != nil {
			t.Errorf("%s: CallTool: %v", tc.name, err)
			continue
		}
		text := ""
		if r := res.Result; r != nil && len(r.Content) > 0 {
			if tc, ok := r.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if !strings.HasPrefix(text, tc.want) || res.Result.IsError != tc.isError {
			t.Errorf("%s: result %q (isError %v), want %q (isError %v)", tc.name, text, res.Result.IsError, tc.want, tc.isError)
		}
	}
}

// TestLegacyQuestionSentOnce: a 2025-11-25 server may send a question on
// one tasks/result stream only (a queue it takes the question off). An
// InputHandler that takes its time (a person) is not cancelled by the
// client's watch of the question, which reads the status alone: the task
// still asks while it is input_required. The answer goes through.
func TestLegacyQuestionSentOnce(t *testing.T) {
	var results atomic.Int32
	var answered atomic.Bool
	once := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				b, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(b))
				var m struct {
					Method string          `json:"method"`
					Result json.RawMessage `json:"result"`
				}
				_ = json.Unmarshal(b, &m)
				if m.Method == "" && m.Result != nil {
					answered.Store(true)
				}
				if m.Method == "tasks/result" && results.Add(1) > 1 && !answered.Load() {
					// Later streams carry nothing until the answer.
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush()
					<-r.Context().Done()
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	s := startServer(t, serverConfig{wrap: once})
	cancelled := make(chan error, 1)
	h := client.InputHandlerFunc(func(ctx context.Context, _ string, _ *client.InputRequest) (any, error) {
		select {
		case <-ctx.Done():
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		case <-time.After(10 * testPoll): // a person takes a while
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	})
	c := newClient(s, legacyOptions(client.Options{InputHandler: h}))
	ctx := testContext(t)
	res, err := callTask(t, c, "confirm_delete", map[string]any{"filename": "a.txt"}).Wait(ctx)
	select {
	case err := <-cancelled:
		t.Fatalf("the handler was cancelled (%v) though the task still asked", err)
	default:
	}
	if err != nil || !strings.Contains(text(res), "a.txt") {
		t.Errorf("Wait: %q, %v; want the deletion confirmed", text(res), err)
	}
}
