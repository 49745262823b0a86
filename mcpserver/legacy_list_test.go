package mcpserver_test

//lint:file-ignore SA1019 sampling is deprecated, but still input a 2025-11-25 task may ask for

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
)

// legacySession is a 2025-11-25 session of one principal on c.
type legacySession struct {
	t     *testing.T
	c     *testClient
	token string
	id    string
}

// initialize opens a session as the principal of token.
func initialize(t *testing.T, c *testClient, token string) *legacySession {
	t.Helper()
	return initializeWith(t, c, token, `{}`)
}

// initializeWith opens a session as the principal of token, declaring
// the capabilities caps (a JSON object).
func initializeWith(t *testing.T, c *testClient, token, caps string) *legacySession {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + token}}
	resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h,
		body: []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`)})
	sid := resp.header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: HTTP %d, no session: %s", resp.status, resp.body)
	}
	return &legacySession{t: t, c: c, token: token, id: sid}
}

// callTask sends a task-augmented tools/call of params in the session and
// returns the id of the task it made.
func (s *legacySession) callTask(params string) string {
	s.t.Helper()
	rep := s.call("tools/call", params)
	var cr struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if rep.Error != nil || json.Unmarshal(rep.Result, &cr) != nil || cr.Task.TaskID == "" {
		s.t.Fatalf("tools/call: %s", rep.raw)
	}
	return cr.Task.TaskID
}

// post sends one message in the session and returns the HTTP response.
func (s *legacySession) post(msg string) *rawResponse {
	s.t.Helper()
	h := http.Header{"Authorization": {"Bearer " + s.token}, "Mcp-Session-Id": {s.id}, "Mcp-Protocol-Version": {"2025-11-25"}}
	return s.c.do(s.t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(msg)})
}

// open sends one message in the session and returns the HTTP response as
// it starts, to read as a stream, until ctx ends.
func (s *legacySession) open(ctx context.Context, msg string) *http.Response {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.c.base+"/mcp", strings.NewReader(msg))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header = http.Header{"Authorization": {"Bearer " + s.token}, "Mcp-Session-Id": {s.id}, "Mcp-Protocol-Version": {"2025-11-25"},
		"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	resp, err := s.c.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

// result opens a tasks/result of task id (request id 7) in the session,
// to read as a stream for at most 30 s.
func (s *legacySession) result(id string) *http.Response {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 30*time.Second)
	s.t.Cleanup(cancel)
	return s.open(ctx, `{"jsonrpc":"2.0","id":7,"method":"tasks/result","params":{"taskId":"`+id+`"}}`)
}

// call sends one request in the session and returns its reply.
func (s *legacySession) call(method, params string) *rpcReply {
	s.t.Helper()
	h := http.Header{"Authorization": {"Bearer " + s.token}, "Mcp-Session-Id": {s.id}, "Mcp-Protocol-Version": {"2025-11-25"}}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	return s.c.do(s.t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(body)}).reply(s.t)
}

// TestLegacyInitialize_Versions: an initialize that asks for a version
// newer than 2025-11-25 is settled on 2025-11-25 with a session and the
// tasks capability, so that the client's next requests are served (before,
// it got neither, and every later request HTTP 400); one that asks for an
// older version gets that version, without a session.
func TestLegacyInitialize_Versions(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{})
	for _, tc := range []struct {
		asked, want string
		session     bool
	}{
		{"2025-11-25", "2025-11-25", true},
		{"2099-01-01", "2025-11-25", true},
		{"2025-06-18", "2025-06-18", false},
	} {
		caps := `{}`
		if !tc.session { // go-sdk's to answer, whatever the size of what it declares
			caps = `{"experimental":{"x":"` + strings.Repeat("y", 4<<10) + `"}}`
		}
		resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp",
			body: []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + tc.asked + `","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`)})
		var res struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal(resp.reply(t).Result, &res)
		sid := resp.header.Get("Mcp-Session-Id")
		if res.ProtocolVersion != tc.want || (sid != "") != tc.session || (res.Capabilities["tasks"] != nil) != tc.session {
			t.Errorf("initialize asking %s: version %q, session %v, tasks capability %v; want %s, %v, %v",
				tc.asked, res.ProtocolVersion, sid != "", res.Capabilities["tasks"] != nil, tc.want, tc.session, tc.session)
			continue
		}
		if tc.session {
			s := &legacySession{t: t, c: c, id: sid}
			if rep := s.call("tools/list", `{}`); rep.Error != nil {
				t.Errorf("tools/list in the session of an initialize asking %s: %s", tc.asked, rep.raw)
			}
		}
	}
}

// TestLegacyAnswer_Refused: a response that the task cannot take does not
// leave it input_required for ever (a 2025-11-25 client answers once, then
// blocks in tasks/result): an elicitation answered with content that does
// not fit its form, or with an error, is taken as cancelled and the task
// goes on; a sampling request answered with an error (the user refused)
// or with what is not a sampling result cancels the task.
func TestLegacyAnswer_Refused(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{register: func(srv *mcpserver.Server) error {
		return mcpserver.AddTool(srv, &mcp.Tool{Name: "sample"}, mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				if _, err := mcpserver.CreateMessage(ctx, "s", &mcp.CreateMessageParams{MaxTokens: 10,
					Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}); err != nil {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil, nil
			})
	}})
	s := initializeWith(t, c, "", `{"sampling":{},"elicitation":{}}`)
	status := func(id string) string {
		var r struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(s.call("tasks/get", `{"taskId":"`+id+`"}`).Result, &r)
		return r.Status
	}
	waitFor := func(id string, done func(string) bool) string {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if st := status(id); done(st) || time.Now().After(deadline) {
				return st
			}
		}
	}
	for _, tc := range []struct {
		name, call, key, response, want string
	}{
		{"elicitation, content off the form", `{"name":"confirm_delete","arguments":{"filename":"a.txt"},"task":{}}`, "confirm-delete",
			`"result":{"action":"accept","content":{"confirm":"yes"}}`, "completed"},
		{"elicitation, error", `{"name":"confirm_delete","arguments":{"filename":"b.txt"},"task":{}}`, "confirm-delete",
			`"error":{"code":-1,"message":"dismissed"}`, "completed"},
		{"sampling, error", `{"name":"sample","arguments":{},"task":{}}`, "s",
			`"error":{"code":-1,"message":"User rejected sampling request"}`, "cancelled"},
		{"sampling, not a result", `{"name":"sample","arguments":{},"task":{}}`, "s",
			`"result":{"nonsense":true}`, "cancelled"},
	} {
		id := s.callTask(tc.call)
		if st := waitFor(id, func(st string) bool { return st == "input_required" }); st != "input_required" {
			t.Fatalf("%s: the task is %s, want input_required", tc.name, st)
		}
		if r := s.post(`{"jsonrpc":"2.0","id":"t/` + id + `/` + tc.key + `",` + tc.response + `}`); r.status != http.StatusAccepted {
			t.Errorf("%s: the response got HTTP %d, want 202", tc.name, r.status)
		}
		if st := waitFor(id, func(st string) bool { return st != "input_required" && st != "working" }); st != tc.want {
			t.Errorf("%s: the task is %s, want %s", tc.name, st, tc.want)
		}
	}
}

// TestLegacyCall_Requires: a 2025-11-25 task call of a tool that needs a
// client capability is refused, naming it, unless the session declared it
// in initialize (before, the task was made, and asked a question the
// client had not said it could answer).
func TestLegacyCall_Requires(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{})
	for _, tc := range []struct {
		name, caps string
		refused    bool
	}{
		{"no elicitation", `{}`, true},
		{"URL elicitation only", `{"elicitation":{"url":{}}}`, true},
		{"elicitation", `{"elicitation":{}}`, false},
	} {
		s := initializeWith(t, c, "", tc.caps)
		rep := s.call("tools/call", `{"name":"confirm_delete","arguments":{"filename":"a.txt"},"task":{}}`)
		if refused := rep.Error != nil && strings.Contains(rep.Error.Message, "elicitation.form") && strings.Contains(rep.Error.Message, "initialize"); refused != tc.refused {
			t.Errorf("%s: %s; want refused (naming elicitation.form and initialize): %v", tc.name, rep.raw, tc.refused)
		}
	}
}

// TestLegacyAskingTools: in 2025-11-25 a tool that asks the client for
// input runs only as a task, whose questions travel on its tasks/result
// stream: tools/list says taskSupport "required" for one that may run as a
// task, and a call without params.task is refused, saying why and what to
// do (before, an optional one was listed "optional", and a synchronous call
// of it got -32021 telling a client that had declared elicitation in
// initialize to declare it in _meta). A task call of it still runs.
func TestLegacyAskingTools(t *testing.T) {
	t.Parallel()
	asks := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	handler := func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		r, err := mcpserver.Elicit(ctx, "ok", &mcp.ElicitParams{Message: "Go on?", RequestedSchema: &jsonschema.Schema{Type: "object"}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Action}}}, nil, nil
	}
	c := startServer(t, serverConfig{register: func(s *mcpserver.Server) error {
		return errors.Join(
			mcpserver.AddTool(s, &mcp.Tool{Name: "ask_optional"}, mcpserver.ToolOptions{Task: mcpserver.TaskOptional, Requires: asks}, handler),
			mcpserver.AddTool(s, &mcp.Tool{Name: "ask_never"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever, Requires: asks}, handler))
	}})
	s := initializeWith(t, c, "", `{"elicitation":{}}`)

	rep := s.call("tools/list", `{}`)
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if rep.Error != nil || json.Unmarshal(rep.Result, &list) != nil {
		t.Fatalf("tools/list: %s", rep.raw)
	}
	support := map[string]string{}
	for _, tl := range list.Tools {
		if tl.Execution != nil {
			support[tl.Name] = tl.Execution.TaskSupport
		}
	}
	for tool, want := range map[string]string{"ask_optional": "required", "ask_never": "", "slow_compute": "optional", "confirm_delete": "required"} {
		if support[tool] != want {
			t.Errorf("tools/list: %s has taskSupport %q, want %q", tool, support[tool], want)
		}
	}

	for _, tc := range []struct {
		tool     string
		code     int64
		mentions string
	}{
		{"ask_optional", -32601, "params.task"},
		{"ask_never", -32600, "2026-07-28"},
	} {
		rep := s.call("tools/call", `{"name":"`+tc.tool+`","arguments":{}}`)
		if rep.Error == nil || rep.Error.Code != tc.code || !strings.Contains(rep.Error.Message, "elicitation.form") || !strings.Contains(rep.Error.Message, tc.mentions) {
			t.Errorf("plain call of %s: %s; want error %d naming elicitation.form and %s", tc.tool, rep.raw, tc.code, tc.mentions)
		}
	}
	if rep := s.call("tools/call", `{"name":"ask_never","arguments":{},"task":{}}`); rep.Error == nil || !strings.Contains(rep.Error.Message, "2026-07-28") {
		t.Errorf("task call of ask_never: %s; want an error saying to call it with a 2026-07-28 client", rep.raw)
	}
	if id := s.callTask(`{"name":"ask_optional","arguments":{},"task":{}}`); id == "" {
		t.Error("task call of ask_optional: no task")
	}
}

// TestLegacyListPages: tasks/list pages through all of a principal's
// 2025-11-25 tasks, newest first, each once; another principal lists none
// of them and cannot read them, and its session does not serve the first.
func TestLegacyListPages(t *testing.T) {
	c := startServer(t, serverConfig{tokens: mcpserver.Tokens{"a-token": "alice", "b-token": "bob"}})
	alice, bob := initialize(t, c, "a-token"), initialize(t, c, "b-token")
	const n = 55 // more than one page
	var created []string
	for range n {
		created = append(created, alice.callTask(`{"name":"slow_compute","arguments":{"seconds":60},"task":{}}`))
	}

	type page struct {
		Tasks []struct {
			TaskID    string `json:"taskId"`
			CreatedAt string `json:"createdAt"`
		} `json:"tasks"`
		NextCursor string `json:"nextCursor"`
	}
	var listed, times []string
	pages := 0
	for cursor := ""; pages == 0 || cursor != ""; pages++ {
		params := "{}"
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		rep := alice.call("tasks/list", params)
		var p page
		if rep.Error != nil || json.Unmarshal(rep.Result, &p) != nil {
			t.Fatalf("tasks/list: %s", rep.raw)
		}
		for _, tk := range p.Tasks {
			listed, times = append(listed, tk.TaskID), append(times, tk.CreatedAt)
		}
		cursor = p.NextCursor
	}
	if pages < 2 {
		t.Errorf("%d tasks in %d page(s), want more than one page", n, pages)
	}
	if !slices.IsSortedFunc(times, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("not newest first: %v", times)
	}
	got, want := slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(created))
	if !slices.Equal(got, want) {
		t.Errorf("listed %d tasks, want each of the %d created once", len(listed), n)
	}

	rep := bob.call("tasks/list", "{}")
	var p page
	if rep.Error != nil || json.Unmarshal(rep.Result, &p) != nil || len(p.Tasks) != 0 {
		t.Errorf("bob's tasks/list: %s", rep.raw)
	}
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if rep := bob.call(m, fmt.Sprintf(`{"taskId":%q}`, created[0])); rep.Error == nil || rep.Error.Code != -32602 || rep.Error.Message != "Failed to retrieve task: Task not found" {
			t.Errorf("bob's %s of alice's task: %s", m, rep.raw)
		}
	}
	// Alice's session id is of no use to bob.
	h := http.Header{"Authorization": {"Bearer b-token"}, "Mcp-Session-Id": {alice.id}, "Mcp-Protocol-Version": {"2025-11-25"}}
	if resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`)}); resp.status != http.StatusNotFound {
		t.Errorf("bob with alice's session id: HTTP %d, want 404", resp.status)
	}
}

// TestLegacyInlineCancel: a 2025-11-25 tools/call that runs inline stops
// when the session's notifications/cancelled names it, sent in another
// POST (that era's way to cancel over HTTP; go-sdk's stateless handler
// knows nothing of it, legacyCalls does), and only its own principal's.
func TestLegacyInlineCancel(t *testing.T) {
	started, stopped, release := make(chan struct{}, 1), make(chan error, 1), make(chan struct{})
	c := startServer(t, serverConfig{tokens: mcpserver.Tokens{"a-token": "alice", "b-token": "bob"}, register: func(srv *mcpserver.Server) error {
		return mcpserver.AddTool(srv, &mcp.Tool{Name: "block"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
				case <-release: // the test failed: let the server close
				}
				stopped <- ctx.Err()
				return nil, nil, ctx.Err()
			})
	}})
	t.Cleanup(func() { close(release) }) // before the server's cleanup
	s := initialize(t, c, "a-token")
	// Each initialize is a session of its own, even for one principal
	// with the same capabilities: its request ids name its calls.
	if other := initialize(t, c, "a-token"); other.id == s.id {
		t.Fatal("two initialize of one principal share a session id")
	}
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`))
	req.Header = http.Header{"Authorization": {"Bearer a-token"}, "Mcp-Session-Id": {s.id}, "Mcp-Protocol-Version": {"2025-11-25"},
		"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := c.http.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-started:
	case <-time.After(waitTimeout):
		t.Fatal("the tool did not start")
	}
	// Another principal's request with the same session and id, in a body
	// that reaches go-sdk without its session being checked, must not
	// take the call's place.
	bob := &legacySession{t: t, c: c, token: "b-token", id: s.id}
	bob.post(`{"jsonrpc":"2.0","id":2,"method":"ping","error":"x"}`)
	if rep := s.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"test"}}`); rep.status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: HTTP %d %s", rep.status, rep.body)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the tool's ctx ended with %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the tool ran on after notifications/cancelled")
	}
	cancel()
	<-done
}

// TestLegacyMemberNamesExact: a 2025-11-25 request's member names are read
// as they are spelled, as go-sdk reads them: "Task" is not "task", so the
// call is not made a task, and "METHOD" is no method.
func TestLegacyMemberNamesExact(t *testing.T) {
	c := startServer(t, serverConfig{tokens: mcpserver.Tokens{"a-token": "alice"}})
	s := initialize(t, c, "a-token")
	rep := s.call("tools/call", `{"name":"greet","arguments":{"name":"x"},"Task":{}}`)
	var res struct {
		Task    json.RawMessage `json:"task"`
		Content json.RawMessage `json:"content"`
	}
	if rep.Error != nil || json.Unmarshal(rep.Result, &res) != nil || res.Task != nil || res.Content == nil {
		t.Errorf(`tools/call with "Task": %s, want the tool's result at once, no task`, rep.raw)
	}
	resp := s.post(`{"jsonrpc":"2.0","id":2,"METHOD":"tasks/list","params":{}}`)
	if strings.Contains(string(resp.body), `"tasks"`) {
		t.Errorf(`a request with "METHOD" but no method: HTTP %d %s, want it refused, not served`, resp.status, resp.body)
	}
}

// TestLegacyResult_QuestionTakenBack: a question the handler takes back
// (it stops waiting, and goes on) is cancelled on the tasks/result stream
// that sent it, with notifications/cancelled naming its request, before
// the result; before, the client went on asking the person.
func TestLegacyResult_QuestionTakenBack(t *testing.T) {
	t.Parallel()
	withdraw := make(chan struct{})
	c := startServer(t, serverConfig{register: func(srv *mcpserver.Server) error {
		return mcpserver.AddTool(srv, &mcp.Tool{Name: "ask_then_go_on"}, mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				qctx, cancel := endedBy(ctx, withdraw)
				defer cancel()
				_, err := mcpserver.Elicit(qctx, "ok", &mcp.ElicitParams{Message: "Go on?", RequestedSchema: &jsonschema.Schema{Type: "object"}})
				if !errors.Is(err, context.Canceled) {
					return nil, nil, fmt.Errorf("Elicit: %v, want it cancelled", err)
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "went on"}}}, nil, nil
			})
	}})
	s := initializeWith(t, c, "", `{"elicitation":{}}`)
	id := s.callTask(`{"name":"ask_then_go_on","arguments":{},"task":{}}`)

	resp := s.result(id)
	defer resp.Body.Close()
	var seen []string // what the stream carried, in order
	eachEvent(resp.Body, func(data string) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID string `json:"requestId"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("not JSON on the stream: %s", data)
		}
		switch {
		case m.Method == "elicitation/create":
			seen = append(seen, "question "+string(m.ID))
			close(withdraw) // now the handler takes it back
		case m.Method == "notifications/cancelled":
			seen = append(seen, "cancelled "+m.Params.RequestID)
		case string(m.ID) == "7":
			seen = append(seen, "result")
		}
	})
	qid := "" // the question's id
	if len(seen) > 0 {
		qid, _ = strconv.Unquote(strings.TrimPrefix(seen[0], "question "))
	}
	if !regexp.MustCompile(`^t/` + id + `\.[0-9]+/ok$`).MatchString(qid) {
		t.Errorf("the question's id is %q, want t/%s.<asking>/ok", qid, id)
	}
	want := []string{"question " + strconv.Quote(qid), "cancelled " + qid, "result"}
	if !slices.Equal(seen, want) {
		t.Errorf("the tasks/result stream carried %q, want %q", seen, want)
	}
}

// TestLegacyResult_QuestionAskedAgain: a question taken back and then
// asked again under the same key is sent again under a new id, not the
// one its notifications/cancelled named (a requestor must not use an id
// twice in a session), and the answer to that new id reaches the handler.
// Before, both were "t/<taskId>/<key>".
func TestLegacyResult_QuestionAskedAgain(t *testing.T) {
	t.Parallel()
	withdraw := make(chan struct{})
	c := startServer(t, serverConfig{register: func(srv *mcpserver.Server) error {
		return mcpserver.AddTool(srv, &mcp.Tool{Name: "ask_twice"}, mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				q := &mcp.ElicitParams{Message: "Go on?", RequestedSchema: &jsonschema.Schema{Type: "object"}}
				qctx, cancel := endedBy(ctx, withdraw)
				defer cancel()
				if _, err := mcpserver.Elicit(qctx, "ok", q); !errors.Is(err, context.Canceled) {
					return nil, nil, fmt.Errorf("Elicit: %v, want it cancelled", err)
				}
				r, err := mcpserver.Elicit(ctx, "ok", q) // the same key, asked again
				if err != nil {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Action}}}, nil, nil
			})
	}})
	s := initializeWith(t, c, "", `{"elicitation":{}}`)
	id := s.callTask(`{"name":"ask_twice","arguments":{},"task":{}}`)

	resp := s.result(id)
	defer resp.Body.Close()
	var seen, questions []string // what the stream carried, in order; the ids of its questions
	eachEvent(resp.Body, func(data string) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID string `json:"requestId"`
			} `json:"params"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("not JSON on the stream: %s", data)
		}
		switch {
		case m.Method == "elicitation/create":
			var qid string
			_ = json.Unmarshal(m.ID, &qid)
			questions = append(questions, qid)
			seen = append(seen, "question "+qid)
			if len(questions) == 1 {
				close(withdraw) // the handler takes it back, and asks again
				break
			}
			// A late answer to the first asking does not answer the
			// second: the result is the answer to the second.
			old, _ := json.Marshal(questions[0])
			for _, answer := range []string{
				`{"jsonrpc":"2.0","id":` + string(old) + `,"result":{"action":"decline"}}`,
				`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"action":"accept","content":{}}}`,
			} {
				if r := s.post(answer); r.status != http.StatusAccepted {
					t.Errorf("%s got HTTP %d, want 202", answer, r.status)
				}
			}
		case m.Method == "notifications/cancelled":
			seen = append(seen, "cancelled "+m.Params.RequestID)
		case string(m.ID) == "7" && len(m.Result.Content) > 0:
			seen = append(seen, "result "+m.Result.Content[0].Text)
		case string(m.ID) == "7":
			seen = append(seen, "error "+data)
		}
	})
	if len(questions) != 2 || questions[0] == questions[1] {
		t.Fatalf("the stream carried %q; want two questions with ids of their own", seen)
	}
	want := []string{"question " + questions[0], "cancelled " + questions[0], "question " + questions[1], "result accept"}
	if !slices.Equal(seen, want) {
		t.Errorf("the tasks/result stream carried %q, want %q", seen, want)
	}
}

// endedBy returns a child of ctx that ends when ch is closed: the
// context of a question that the handler takes back then.
func endedBy(ctx context.Context, ch <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// eachEvent calls fn with the data of each event of the SSE stream r, until
// r ends.
func eachEvent(r io.Reader, fn func(data string)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			fn(data)
		}
	}
}

// TestLegacyResultEndsAtShutdown: a 2025-11-25 tasks/result that waits
// for its task ends, when the server shuts down (EndSubscriptions), with
// -32603 under its id, which the client retries, instead of holding the
// HTTP server's Shutdown and then being cut without a response.
func TestLegacyResultEndsAtShutdown(t *testing.T) {
	var srv *mcpserver.Server
	c := startServer(t, serverConfig{tokens: mcpserver.Tokens{"a-token": "alice"},
		register: func(s *mcpserver.Server) error { srv = s; return nil }})
	s := initialize(t, c, "a-token")
	id := s.callTask(`{"name":"slow_compute","arguments":{"seconds":60},"task":{}}`)
	srv.EndSubscriptions()
	resp := s.post(`{"jsonrpc":"2.0","id":5,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
	out := mcptest.LastMessage(resp.body) // JSON, or the last event of the stream it may have started
	var reply struct {
		ID    json.RawMessage       `json:"id"`
		Error *struct{ Code int64 } `json:"error"`
	}
	if json.Unmarshal(out, &reply) != nil || string(reply.ID) != "5" || reply.Error == nil || reply.Error.Code != -32603 {
		t.Errorf("tasks/result at shutdown: HTTP %d %s, want -32603 under id 5", resp.status, resp.body)
	}
}
