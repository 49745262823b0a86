package client_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/task"
)

// callTask calls a tool that must become a task.
func callTask(t *testing.T, c *client.Client, name string, args any) *client.Task {
	t.Helper()
	res, err := c.CallTool(testContext(t), name, args)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	if res.Task == nil || res.Result != nil {
		t.Fatalf("CallTool(%s): want a task only, got %+v", name, res)
	}
	return res.Task
}

// waitStatus polls tk until it has status want, within testTimeout.
func waitStatus(t *testing.T, tk *client.Task, want task.Status) *client.TaskStatus {
	t.Helper()
	return waitUntil(t, tk, want, nil)
}

// waitUntil polls tk until it has status want and, if ok is not nil, ok
// holds for its status, within testTimeout.
func waitUntil(t *testing.T, tk *client.Task, want task.Status, ok func(*client.TaskStatus) bool) *client.TaskStatus {
	t.Helper()
	ctx := testContext(t)
	for {
		st, err := tk.Get(ctx)
		if err != nil {
			t.Fatalf("tasks/get %s: %v", tk.ID, err)
		}
		if st.Status == want && (ok == nil || ok(st)) {
			return st
		}
		if st.Terminal() {
			t.Fatalf("task %s ended %s, want %s", tk.ID, st.Status, want)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s still %s, want %s", tk.ID, st.Status, want)
		case <-time.After(5 * time.Millisecond): // the test's own poll interval
		}
	}
}

func TestImmediateResult(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, nil)
	res, err := c.CallTool(testContext(t), "greet", map[string]any{"name": "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task != nil || res.Result == nil {
		t.Fatalf("greet: want an immediate result only, got %+v", res)
	}
	if got := text(res.Result); got != "Hello, Ann!" {
		t.Errorf("greet: %q", got)
	}
	// slow_compute with seconds 0 takes the synchronous shortcut.
	res, err = c.CallTool(testContext(t), "slow_compute", map[string]any{"seconds": 0, "label": "now"})
	if err != nil || res.Result == nil {
		t.Fatalf("slow_compute 0: %+v, %v", res, err)
	}
}

func TestTaskLifecycle(t *testing.T) {
	rec := newRecorder()
	s := startServer(t, serverConfig{wrap: rec.wrap})
	c := newClient(s, nil)
	tk := callTask(t, c, "slow_compute", map[string]any{"seconds": 0.1, "label": "x"})
	if tk.Tool != "slow_compute" || tk.ServerURL != s.url || tk.ID == "" {
		t.Errorf("handle: %+v", tk)
	}
	last := tk.Last()
	if last == nil || last.Status != task.Working || last.CreatedAt.IsZero() || last.PollIntervalMs == nil {
		t.Fatalf("status from CreateTaskResult: %+v", last)
	}
	res, err := tk.Wait(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); !strings.Contains(got, `Computed "x"`) {
		t.Errorf("result: %q", got)
	}
	st := tk.Last()
	if st.Status != task.Completed || st.RawResult == nil || st.TTLMs == nil {
		t.Errorf("last status: %+v", st)
	}
	// Every tasks/get named the task in Mcp-Name and declared the
	// extension in _meta.
	gets := rec.requests("tasks/get")
	if len(gets) == 0 {
		t.Fatal("no tasks/get seen")
	}
	for _, g := range gets {
		if g.header.Get("Mcp-Name") != tk.ID || g.header.Get("Mcp-Method") != "tasks/get" ||
			g.header.Get("MCP-Protocol-Version") != client.ProtocolVersion {
			t.Errorf("tasks/get headers: %v", g.header)
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(g.req.Params, &p)
		if !strings.Contains(string(p.Meta[client.MetaClientCapabilities]), task.ExtensionID) {
			t.Errorf("tasks/get _meta: %s", g.req.Params)
		}
	}
}

func TestMRTRThenTask(t *testing.T) {
	s := startServer(t, serverConfig{})
	h := newAccept(func(string) map[string]any { return map[string]any{"name": "Ada"} })
	c := newClient(s, &client.Options{InputHandler: h})
	tk := callTask(t, c, "test_tool_with_task", nil)
	if h.count("user_name") != 1 {
		t.Fatalf("MRTR round: handler calls %v", h.calls)
	}
	if r := h.reqs["user_name"]; r.Method != client.MethodElicit || r.Elicit == nil ||
		r.Elicit.Message != "What is your name?" || r.TaskID != "" || r.Tool != "test_tool_with_task" {
		t.Errorf("MRTR input request: %+v", r)
	}
	res, err := tk.Wait(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); !strings.Contains(got, "Hello, Ada!") {
		t.Errorf("result: %q", got)
	}
}

func TestMRTRRounds(t *testing.T) {
	rec := newRecorder()
	s := startServer(t, serverConfig{wrap: rec.wrap})
	h := newAccept(func(key string) map[string]any {
		if key == "step1" {
			return map[string]any{"name": "Bo"}
		}
		return map[string]any{"color": "blue", "context": "ctx"}
	})
	c := newClient(s, &client.Options{InputHandler: h})
	ctx := testContext(t)
	res, err := c.CallTool(ctx, "test_input_required_result_multi_round", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res.Result); got != "Multi-round complete: Bo likes blue" {
		t.Errorf("result: %q", got)
	}
	calls := rec.requests("tools/call")
	if len(calls) != 3 {
		t.Fatalf("%d tools/call requests, want 3", len(calls))
	}
	ids := map[string]bool{}
	for i, call := range calls {
		ids[string(call.req.ID)] = true
		var p struct {
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
			RequestState   *string                    `json:"requestState"`
		}
		_ = json.Unmarshal(call.req.Params, &p)
		switch i {
		case 0:
			if p.InputResponses != nil || p.RequestState != nil {
				t.Errorf("first call carries MRTR fields: %s", call.req.Params)
			}
		case 1:
			if p.RequestState == nil || *p.RequestState == "" || len(p.InputResponses) != 1 || p.InputResponses["step1"] == nil {
				t.Errorf("round 2: %s", call.req.Params)
			}
		case 2:
			if p.RequestState == nil || len(p.InputResponses) != 1 || p.InputResponses["step2"] == nil {
				t.Errorf("round 3 must carry only this round's answer: %s", call.req.Params)
			}
		}
	}
	if len(ids) != 3 {
		t.Errorf("JSON-RPC ids reused across rounds: %v", ids)
	}

	// prompts/get runs MRTR the same way.
	p, err := c.GetPrompt(ctx, "test_input_required_result_prompt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 1 || !strings.Contains(fmt.Sprint(p.Messages[0].Content), "Context: ctx") {
		t.Errorf("prompt: %+v", p.Messages)
	}

	// Without an InputHandler the round is reported, typed.
	_, err = newClient(s, &client.Options{Capabilities: &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{}}}).CallTool(ctx, "test_input_required_result_elicitation", nil)
	var ire *client.InputRequiredError
	if !errors.As(err, &ire) || !errors.Is(err, client.ErrInputRequired) || ire.Requests["user_name"] == nil {
		t.Errorf("no handler: %v", err)
	}
}

func TestInputConfirmDelete(t *testing.T) {
	// The replica repeats the answered request on the next polls; the
	// handler must still be asked once.
	stale := newStaleReplica(3)
	s := startServer(t, serverConfig{wrap: stale.wrap})
	h := newAccept(func(string) map[string]any { return map[string]any{"confirm": true} })
	c := newClient(s, &client.Options{InputHandler: h})
	tk := callTask(t, c, "confirm_delete", map[string]any{"filename": "a.txt"})
	res, err := tk.Wait(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "Deleted a.txt" {
		t.Errorf("result: %q", got)
	}
	if n := h.count("confirm-delete"); n != 1 {
		t.Errorf("handler called %d times for confirm-delete, want 1", n)
	}
	if stale.given.Load() == 0 {
		t.Error("the stale replica never repeated the request; the test proves nothing")
	}
	if r := h.reqs["confirm-delete"]; r.TaskID != tk.ID || r.Elicit == nil || r.Elicit.Message != "Delete a.txt?" {
		t.Errorf("input request: %+v", r)
	}
}

func TestPartialAnswers(t *testing.T) {
	stale := newStaleReplica(2)
	s := startServer(t, serverConfig{wrap: stale.wrap})
	h := newAccept(func(key string) map[string]any { return map[string]any{"name": key + "-by-handler"} })
	c := newClient(s, &client.Options{InputHandler: h})
	ctx := testContext(t)
	tk := callTask(t, c, "multi_input", nil)
	st := waitStatus(t, tk, task.InputRequired)
	if len(st.InputRequests) != 2 || st.InputRequests["first"] == nil || st.InputRequests["second"] == nil {
		t.Fatalf("input requests: %v", st.InputRequests)
	}
	// Answer one key by hand: the task stays input_required with the
	// other (after the stale replies).
	if err := tk.Update(ctx, map[string]any{"first": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "manual"}}}); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := tk.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.InputRequests) == 1 {
			if st.Status != task.InputRequired || st.InputRequests["second"] == nil {
				t.Fatalf("after a partial update: %+v", st)
			}
			break
		}
	}
	res, err := tk.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "first=manual second=second-by-handler" {
		t.Errorf("result: %q", got)
	}
	if h.count("first") != 0 || h.count("second") != 1 {
		t.Errorf("handler calls: %v, want second once only", h.calls)
	}
}

func TestCancel(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, nil)
	tk := callTask(t, c, "slow_compute", map[string]any{"seconds": 60, "label": "long"})
	waitStatus(t, tk, task.Working)
	if err := tk.Cancel(testContext(t)); err != nil {
		t.Fatal(err)
	}
	_, err := tk.Wait(testContext(t))
	var te *client.TaskError
	if !errors.Is(err, client.ErrTaskCancelled) || !errors.As(err, &te) || te.Status != task.Cancelled || te.TaskID != tk.ID {
		t.Fatalf("Wait after cancel: %v", err)
	}
	if errors.Is(err, client.ErrTaskFailed) {
		t.Error("a cancelled task matches ErrTaskFailed")
	}
	// Cancelling again, now terminal, is acknowledged.
	if err := tk.Cancel(testContext(t)); err != nil {
		t.Errorf("second cancel: %v", err)
	}
}

func TestUnknownAndExpiredTasks(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, nil)
	ctx := testContext(t)
	unknown := c.Task("0123456789abcdef0123456789abcdef")
	_, err := unknown.Get(ctx)
	var re *client.Error
	if !errors.Is(err, client.ErrInvalidParams) || !errors.As(err, &re) || re.Code != -32602 || re.Method != "tasks/get" {
		t.Fatalf("tasks/get unknown: %v", err)
	}
	if err := unknown.Cancel(ctx); !errors.Is(err, client.ErrInvalidParams) {
		t.Errorf("tasks/cancel unknown: %v", err)
	}
	if err := unknown.Update(ctx, map[string]any{"k": map[string]any{"action": "cancel"}}); !errors.Is(err, client.ErrInvalidParams) {
		t.Errorf("tasks/update unknown: %v", err)
	}
	if _, err := unknown.Wait(ctx); !errors.Is(err, client.ErrInvalidParams) {
		t.Errorf("Wait unknown: %v", err)
	}

	// A task past its TTL is gone the same way.
	tk := callTask(t, c, "slow_compute", map[string]any{"seconds": 0.01, "label": "ttl"})
	if _, err := tk.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	ttl := *tk.Last().TTLMs
	s.clock.Advance(time.Duration(ttl)*time.Millisecond + time.Second)
	if _, err := tk.Get(ctx); !errors.Is(err, client.ErrInvalidParams) {
		t.Errorf("tasks/get after the TTL: %v", err)
	}
}

func TestMissingCapability(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := client.WithoutTasksExtension(newClient(s, nil))
	ctx := testContext(t)
	_, err := c.CallTool(ctx, "failing_job", nil)
	var re *client.Error
	if !errors.Is(err, client.ErrMissingCapability) || !errors.As(err, &re) {
		t.Fatalf("failing_job without the extension: %v", err)
	}
	if re.HTTPStatus != http.StatusBadRequest {
		t.Errorf("HTTP status %d, want 400", re.HTTPStatus)
	}
	caps := re.RequiredCapabilities()
	if caps == nil || caps.Extensions[task.ExtensionID] == nil {
		t.Errorf("required capabilities: %+v (data %s)", caps, re.Data)
	}
	// tasks/* are refused the same way.
	if _, err := c.Task("whatever").Get(ctx); !errors.Is(err, client.ErrMissingCapability) {
		t.Errorf("tasks/get without the extension: %v", err)
	}
	// A task-capable tool falls back to a synchronous result.
	res, err := c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 0.01})
	if err != nil || res.Result == nil {
		t.Errorf("slow_compute without the extension: %+v, %v", res, err)
	}
}

func TestFailedAndToolErrorTasks(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, nil)
	ctx := testContext(t)

	_, err := callTask(t, c, "protocol_error_job", nil).Wait(ctx)
	var te *client.TaskError
	if !errors.Is(err, client.ErrTaskFailed) || !errors.As(err, &te) || te.Err == nil {
		t.Fatalf("protocol_error_job: %v", err)
	}
	if te.Err.Code != -32603 || te.Err.Message == "" || !errors.Is(err, client.ErrInternal) {
		t.Errorf("failed task error: %+v", te.Err)
	}

	// A tool error is a completed task with isError set, not a failure.
	res, err := callTask(t, c, "failing_job", nil).Wait(ctx)
	if err != nil {
		t.Fatalf("failing_job: %v", err)
	}
	if !res.IsError || !strings.Contains(text(res), "failed") {
		t.Errorf("failing_job result: %+v", res)
	}
}

// orderedJournal wraps a Journal and records whether each Save happened
// before CallTool returned.
type orderedJournal struct {
	client.Journal
	returned atomic.Bool
	early    atomic.Int64
}

func (j *orderedJournal) Save(ctx context.Context, e client.Entry) error {
	if !j.returned.Load() {
		j.early.Add(1)
	}
	return j.Journal.Save(ctx, e)
}

func TestJournalAndResume(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "sub", "journal.json")
	j := &orderedJournal{Journal: client.FileJournal(path)}
	c1 := newClient(s, &client.Options{Journal: j})
	args := map[string]any{"seconds": 0.2, "label": "resumed"}
	res, err := c1.CallTool(ctx, "slow_compute", args)
	j.returned.Store(true)
	if err != nil || res.Task == nil {
		t.Fatalf("CallTool: %+v, %v", res, err)
	}
	if j.early.Load() != 2 { // the pending create, then the task
		t.Fatalf("the task was not journaled before CallTool returned (%d early saves, want 2)", j.early.Load())
	}
	e, ok, err := client.FileJournal(path).Load(ctx, s.url, res.Task.ID)
	if err != nil || !ok {
		t.Fatalf("journal entry: %v, %v", ok, err)
	}
	wantArgs, _ := json.Marshal(args)
	if e.Tool != "slow_compute" || string(e.Args) != string(wantArgs) || !strings.HasPrefix(e.ArgsDigest, "sha256:") ||
		e.Status != task.Working || e.SeenAt.IsZero() || e.CreatedAt.IsZero() {
		t.Errorf("journal entry: %+v", e)
	}
	// A synchronous result is not journaled.
	if _, err := c1.CallTool(ctx, "greet", map[string]any{"name": "x"}); err != nil {
		t.Fatal(err)
	}
	if all, _ := client.FileJournal(path).List(ctx); len(all) != 1 {
		t.Errorf("journal has %d entries, want 1", len(all))
	}

	// "The program restarts": a new Client finds the task and waits.
	c2 := newClient(s, &client.Options{Journal: client.FileJournal(path)})
	tasks, err := c2.Resume(ctx)
	if err != nil || len(tasks) != 1 || tasks[0].ID != res.Task.ID || tasks[0].Tool != "slow_compute" {
		t.Fatalf("Resume: %v, %v", tasks, err)
	}
	out, err := tasks[0].Wait(ctx)
	if err != nil || !strings.Contains(text(out), "resumed") {
		t.Fatalf("resumed Wait: %v, %v", out, err)
	}
	e, _, _ = client.FileJournal(path).Load(ctx, s.url, res.Task.ID)
	if e.Status != task.Completed {
		t.Errorf("journal status after completion: %s", e.Status)
	}
	if tasks, _ := c2.Resume(ctx); len(tasks) != 0 {
		t.Errorf("Resume after completion: %d tasks", len(tasks))
	}
	// Another server's tasks are not resumed.
	if tasks, _ := client.New("http://127.0.0.1:1/mcp", &client.Options{Journal: client.FileJournal(path)}).Resume(ctx); len(tasks) != 0 {
		t.Errorf("Resume on another server: %d tasks", len(tasks))
	}
}

func TestJournalAnsweredKeysSurviveResume(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := testContext(t)
	j := client.MemoryJournal()
	c1 := newClient(s, &client.Options{Journal: j, Capabilities: &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
	}})
	tk := callTask(t, c1, "multi_input", nil)
	waitStatus(t, tk, task.InputRequired)
	if err := tk.Update(ctx, map[string]any{"first": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "one"}}}); err != nil {
		t.Fatal(err)
	}
	e, _, _ := j.Load(ctx, s.url, tk.ID)
	if !slices.Equal(e.AnsweredKeys, []string{"first"}) {
		t.Errorf("answered keys in the journal: %v", e.AnsweredKeys)
	}
	h := newAccept(func(key string) map[string]any { return map[string]any{"name": "two"} })
	c2 := newClient(s, &client.Options{Journal: j, InputHandler: h})
	tasks, err := c2.Resume(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("Resume: %v %v", tasks, err)
	}
	res, err := tasks[0].Wait(ctx)
	if err != nil || text(res) != "first=one second=two" {
		t.Fatalf("Wait: %q %v", text(res), err)
	}
	if h.count("first") != 0 || h.count("second") != 1 {
		t.Errorf("handler calls after resume: %v", h.calls)
	}
}

func TestWaitAll(t *testing.T) {
	rec := newRecorder()
	s := startServer(t, serverConfig{wrap: rec.wrap})
	const n, inFlight = 50, 3
	ct := newCountingTransport()
	c := newClient(s, &client.Options{MaxInFlight: inFlight, HTTPClient: &http.Client{Transport: ct}})
	ctx := testContext(t)
	tasks := make([]*client.Task, n)
	for i := range tasks {
		tasks[i] = callTask(t, c, "slow_compute", map[string]any{"seconds": 0.05 + 0.005*float64(i%10), "label": fmt.Sprint(i)})
	}
	outs := c.WaitAll(ctx, tasks)
	if len(outs) != n {
		t.Fatalf("%d outcomes, want %d", len(outs), n)
	}
	for i, o := range outs {
		if o.Err != nil || o.Index != i || o.Task != tasks[i] || !strings.Contains(text(o.Result), fmt.Sprintf("%q", fmt.Sprint(i))) {
			t.Errorf("outcome %d: %+v %q", i, o, text(o.Result))
		}
	}
	if m := ct.maxInFlight("tasks/get"); m > inFlight || m < 2 {
		t.Errorf("%d tasks/get in flight at once, want 2 to %d", m, inFlight)
	}
	if got := len(rec.requests("tasks/get")); got < n {
		t.Errorf("%d polls for %d tasks", got, n)
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, nil)
	var tasks []*client.Task
	for range 3 {
		tasks = append(tasks, callTask(t, c, "slow_compute", map[string]any{"seconds": 60}))
	}
	done := callTask(t, c, "slow_compute", map[string]any{"seconds": 0.01, "label": "quick"})
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	var got []client.Outcome
	for o := range c.Watch(ctx, append(tasks, done)) {
		got = append(got, o)
		if o.Task == done {
			if o.Err != nil || o.Index != 3 {
				t.Errorf("quick task: %+v", o)
			}
			cancel() // the rest can only end with the context
		}
	}
	if len(got) != 4 {
		t.Fatalf("%d outcomes, want 4", len(got))
	}
	for _, o := range got[1:] {
		if !errors.Is(o.Err, context.Canceled) {
			t.Errorf("task %d: %v, want context.Canceled", o.Index, o.Err)
		}
	}
	for _, tk := range tasks {
		_ = tk.Cancel(testContext(t))
	}
}

func TestBearerToken(t *testing.T) {
	s := startServer(t, serverConfig{tokens: mcpserver.Tokens{"good": "alice", "other": "bob"}})
	ctx := testContext(t)
	_, err := newClient(s, &client.Options{Token: "bad"}).CallTool(ctx, "greet", map[string]any{"name": "x"})
	if !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("bad token: %v", err)
	}
	alice := newClient(s, &client.Options{Token: "good"})
	tk := callTask(t, alice, "slow_compute", map[string]any{"seconds": 0.01})
	if _, err := tk.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Bob cannot see Alice's task: the same error as an unknown one.
	if _, err := newClient(s, &client.Options{Token: "other"}).Task(tk.ID).Get(ctx); !errors.Is(err, client.ErrInvalidParams) {
		t.Errorf("foreign task: %v", err)
	}
}

func TestDiscoverAndLists(t *testing.T) {
	rec := newRecorder()
	s := startServer(t, serverConfig{wrap: rec.wrap})
	c := newClient(s, &client.Options{ClientInfo: &mcp.Implementation{Name: "lists", Version: "9"}})
	ctx := testContext(t)
	d, err := c.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(d.SupportedVersions, client.ProtocolVersion) || d.Capabilities == nil || d.Capabilities.Extensions[task.ExtensionID] == nil {
		t.Errorf("discover: %+v", d)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"greet", "slow_compute", "confirm_delete", "test_simple_text"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s", want)
		}
	}
	if rs, err := c.ListResources(ctx); err != nil || len(rs) == 0 {
		t.Errorf("resources/list: %d, %v", len(rs), err)
	}
	if ps, err := c.ListPrompts(ctx); err != nil || len(ps) == 0 {
		t.Errorf("prompts/list: %d, %v", len(ps), err)
	}
	r, err := c.ReadResource(ctx, "test://template/42/data")
	if err != nil || len(r.Contents) != 1 || !strings.Contains(r.Contents[0].Text, "42") {
		t.Errorf("resources/read: %+v, %v", r, err)
	}
	if h := rec.requests("resources/read")[0].header; h.Get("Mcp-Name") != "test://template/42/data" {
		t.Errorf("resources/read Mcp-Name: %q", h.Get("Mcp-Name"))
	}
	// The generic Request reaches methods without a helper.
	var out struct {
		ResultType string `json:"resultType"`
	}
	if err := c.Request(ctx, "prompts/get", map[string]any{"name": "test_simple_prompt"}, &out); err != nil || out.ResultType != "complete" {
		t.Errorf("Request(prompts/get): %+v, %v", out, err)
	}
	// A removed method is typed.
	if err := c.Request(ctx, "tasks/list", nil, nil); !errors.Is(err, client.ErrMethodNotFound) {
		t.Errorf("tasks/list: %v", err)
	}
	// clientInfo went out as configured.
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(rec.requests("server/discover")[0].req.Params, &p)
	if string(p.Meta[client.MetaClientInfo]) != `{"name":"lists","version":"9"}` ||
		string(p.Meta[client.MetaProtocolVersion]) != `"2026-07-28"` {
		t.Errorf("_meta: %v", p.Meta)
	}
}

// TestNonASCIIName sends an Mcp-Name that needs the =?base64?…?= form to
// the real server, which must decode it before comparing it with the body:
// the request reaches the resource lookup (not found) instead of failing
// the header check.
func TestNonASCIIName(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, nil)
	_, err := c.ReadResource(testContext(t), "test://nowhere/é")
	if errors.Is(err, client.ErrHeaderMismatch) || !errors.Is(err, client.ErrInvalidParams) {
		t.Fatalf("resources/read of a non-ASCII URI: got %v, want -32602 resource not found", err)
	}
}

// madeTasks wraps a server's handler: it serves each tools/call to a
// recorder, notes the task id of the reply, and lets deliver, given the
// call's number (from 1), drop the reply (false) or have it sent (true).
type madeTasks struct {
	calls atomic.Int32
	mu    sync.Mutex
	ids   map[string]bool // the task ids in the server's replies
}

func (m *madeTasks) wrap(deliver func(n int32, w http.ResponseWriter, r *http.Request) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Method") != "tools/call" {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			var created struct {
				TaskID string `json:"taskId"`
			}
			if json.Unmarshal(resultOf(rec), &created) == nil && created.TaskID != "" {
				m.mu.Lock()
				if m.ids == nil {
					m.ids = map[string]bool{}
				}
				m.ids[created.TaskID] = true
				m.mu.Unlock()
			}
			if deliver(m.calls.Add(1), w, r) {
				copyResponse(w, rec)
			}
		})
	}
}

// made returns the task ids in the server's replies so far.
func (m *madeTasks) made() map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.ids)
}

// TestCallTool_LostReply drops the reply of a tools/call after the server
// created the task (as a connection reset after the commit does): the
// client sends the call again with the same idempotency key and gets the
// task the first request made; the server made one task, not two.
func TestCallTool_LostReply(t *testing.T) {
	var m madeTasks
	s := startServer(t, serverConfig{wrap: m.wrap(func(n int32, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 { // the first reply is lost
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return false
		}
		return true
	})})
	res, err := newClient(s, nil).CallTool(testContext(t), "slow_compute", map[string]any{"seconds": 60, "label": "once"})
	if err != nil || res.Task == nil {
		t.Fatalf("CallTool: %v, %v; want the task of the first request", res, err)
	}
	if n := m.calls.Load(); n != 2 {
		t.Errorf("%d tools/call requests, want 2 (the call and one retry)", n)
	}
	if made := m.made(); len(made) != 1 || !made[res.Task.ID] {
		t.Errorf("the server answered with tasks %v; want one, %s", made, res.Task.ID)
	}
}

// cutFirstTask starts a server whose reply to the first tools/call that
// makes a task never comes: a call made with the context it returns is
// cut off (the program ended while its call was on the wire) once the
// server has made the task. m sees the tasks made.
func cutFirstTask(t *testing.T, m *madeTasks) (*testServer, context.Context) {
	t.Helper()
	var cut atomic.Bool
	callCtx, cancel := context.WithCancel(testContext(t))
	s := startServer(t, serverConfig{wrap: m.wrap(func(_ int32, w http.ResponseWriter, r *http.Request) bool {
		if len(m.made()) == 1 && cut.CompareAndSwap(false, true) {
			cancel()
			<-r.Context().Done()
			return false
		}
		return true
	})})
	return s, callCtx
}

// TestResend_PendingCreate: the program ends while its tools/call is on
// the wire (here: it stops waiting once the server has made the task, and
// the reply never comes). The journal holds the call as a pending create,
// which Resume leaves alone; the next run's Pending lists it and Resend
// sends it again with its key and gets the task the first request made:
// the server made one task, not two. A pending create the server never
// received is made by Resend; one it refuses is removed.
func TestResend_PendingCreate(t *testing.T) {
	var m madeTasks
	s, callCtx := cutFirstTask(t, &m)
	path := filepath.Join(t.TempDir(), "journal.json")
	ctx := testContext(t)
	args := map[string]any{"seconds": 0.05, "label": "pending"}
	if res, err := newClient(s, &client.Options{Journal: client.FileJournal(path)}).CallTool(callCtx, "slow_compute", args); !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool cut off: %+v, %v; want context.Canceled", res, err)
	}

	// The next run.
	c := newClient(s, &client.Options{Journal: client.FileJournal(path)})
	if tasks, err := c.Resume(ctx); err != nil || len(tasks) != 0 {
		t.Errorf("Resume: %v, %v; want no task (the call's is not known yet)", tasks, err)
	}
	pending, err := c.Pending(ctx)
	if err != nil || len(pending) != 1 || pending[0].Tool != "slow_compute" || pending[0].IdempotencyKey == "" {
		t.Fatalf("Pending after the cut: %+v, %v; want the call", pending, err)
	}
	// A create the server never received, and one it refuses.
	never := pending[0]
	never.IdempotencyKey, never.Args, never.ArgsDigest = "never-sent", json.RawMessage(`{"seconds":0.05,"label":"late"}`), ""
	never.CreatedAt = never.CreatedAt.Add(time.Second) // Pending goes in the order of sending
	refused := never
	refused.IdempotencyKey, refused.Tool = "refused", "no_such_tool"
	refused.CreatedAt = refused.CreatedAt.Add(time.Second)
	for _, e := range []client.Entry{never, refused} {
		if err := client.FileJournal(path).Save(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if pending, err = c.Pending(ctx); err != nil || len(pending) != 3 {
		t.Fatalf("Pending: %d, %v; want 3", len(pending), err)
	}
	var tasks []*client.Task
	for i, e := range pending {
		res, err := c.Resend(ctx, e)
		if e.Tool == "no_such_tool" {
			var rpcErr *client.Error
			if !errors.As(err, &rpcErr) {
				t.Errorf("Resend of a call the server refuses: %+v, %v; want its JSON-RPC error", res, err)
			}
			continue
		}
		if err != nil || res.Task == nil {
			t.Fatalf("Resend %d: %+v, %v", i, res, err)
		}
		tasks = append(tasks, res.Task)
	}
	if made := m.made(); len(made) != 2 || !made[tasks[0].ID] || !made[tasks[1].ID] {
		t.Errorf("the server made tasks %v; Resend returned %s and %s", made, tasks[0].ID, tasks[1].ID)
	}
	for i, label := range []string{"pending", "late"} {
		out, err := tasks[i].Wait(ctx)
		if err != nil || !strings.Contains(text(out), label) {
			t.Errorf("task %d: %v, %v; want its result (%s)", i, text(out), err, label)
		}
	}
	if pending, _ := c.Pending(ctx); len(pending) != 0 {
		t.Errorf("pending creates left after Resend: %+v", pending)
	}
	if all, _ := client.FileJournal(path).List(ctx); len(all) != 2 {
		t.Errorf("journal after Resend: %d entries, want the 2 tasks", len(all))
	}
}

// TestCallTool_ParamHeadersLearned: a call of a tool that mirrors
// arguments into Mcp-Param-* headers (x-mcp-header) works without a
// tools/list first: refused for the missing header, the client lists the
// tools and sends the call again with its key. So a resent pending create
// of such a tool, by a program that starts again and lists nothing, finds
// the task its first request made. Before, the call failed (-32020: the
// CLI could not call archive_logs at all), and Resend took the refusal for
// "nothing made" and dropped the journal's entry, losing the task.
func TestCallTool_ParamHeadersLearned(t *testing.T) {
	var m madeTasks
	s, callCtx := cutFirstTask(t, &m)
	path := filepath.Join(t.TempDir(), "journal.json")
	ctx := testContext(t)
	args := map[string]any{"region": "us", "days": 1}

	first := newClient(s, &client.Options{Journal: client.FileJournal(path)})
	if res, err := first.CallTool(callCtx, "archive_logs", args); !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool cut off: %+v, %v; want context.Canceled", res, err)
	}
	made := m.made()
	if len(made) != 1 {
		t.Fatalf("the first call made tasks %v, want one (it learned the headers itself)", made)
	}

	// The next run lists no tools before it resends.
	c := newClient(s, &client.Options{Journal: client.FileJournal(path)})
	pending, err := c.Pending(ctx)
	if err != nil || len(pending) != 1 {
		t.Fatalf("Pending: %+v, %v; want the call", pending, err)
	}
	res, err := c.Resend(ctx, pending[0])
	if err != nil || res.Task == nil || !made[res.Task.ID] {
		t.Fatalf("Resend: %+v, %v; want the task of the first request (%v)", res, err, made)
	}
	if all := m.made(); len(all) != 1 {
		t.Errorf("the server made tasks %v, want one", all)
	}
	if out, err := res.Task.Wait(ctx); err != nil || text(out) != "Archived 1 days of logs in us" {
		t.Errorf("Wait: %q, %v", text(out), err)
	}
}

// TestPendingCreate_Outcomes: what a call leaves in the journal, by how its
// requests were answered. Unknown outcomes keep the pending create (a
// reply lost, then a server that cannot even be reached; a server/discover
// refused for want of a token), and definite answers without a task remove
// it (a question without an InputHandler, asked before any task exists).
func TestPendingCreate_Outcomes(t *testing.T) {
	s := startServer(t, serverConfig{tokens: mcpserver.Tokens{"good": "alice"}})
	ctx := testContext(t)
	pendingOf := func(t *testing.T, j client.Journal) []client.Entry {
		t.Helper()
		var out []client.Entry
		all, err := j.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range all {
			if e.Pending() {
				out = append(out, e)
			}
		}
		return out
	}

	t.Run("LostReplyThenUnreachable", func(t *testing.T) {
		j := client.MemoryJournal()
		var sent atomic.Int32
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Header.Get("Mcp-Method") != "tools/call" {
				return http.DefaultTransport.RoundTrip(r)
			}
			if sent.Add(1) == 1 { // made, and its reply lost
				resp, err := http.DefaultTransport.RoundTrip(r)
				if err == nil {
					resp.Body.Close()
				}
				return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
			}
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
		})}
		c := newClient(s, &client.Options{Token: "good", Journal: j, HTTPClient: hc, CreateRetries: 2})
		if _, err := c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 0.01}); err == nil {
			t.Fatal("CallTool succeeded through a transport that fails")
		}
		if sent.Load() < 2 {
			t.Fatalf("%d tools/call sent; want the call and a retry", sent.Load())
		}
		p := pendingOf(t, j)
		if len(p) != 1 {
			t.Fatalf("pending creates: %+v; want the call (its first request made a task)", p)
		}
		res, err := newClient(s, &client.Options{Token: "good", Journal: j}).Resend(ctx, p[0])
		if err != nil || res.Task == nil {
			t.Fatalf("Resend: %+v, %v; want the task the first request made", res, err)
		}
	})

	t.Run("DiscoverRefused", func(t *testing.T) {
		j := client.MemoryJournal()
		e := client.Entry{ServerURL: s.url, Tool: "slow_compute", IdempotencyKey: "k", CreatedAt: time.Now()}
		if err := j.Save(ctx, e); err != nil {
			t.Fatal(err)
		}
		_, err := newClient(s, &client.Options{Journal: j}).Resend(ctx, e) // no token
		if !errors.Is(err, client.ErrUnauthorized) || errors.Is(err, client.ErrOutcomeUnknown) {
			t.Errorf("Resend without a token: %v; want ErrUnauthorized", err)
		}
		if p := pendingOf(t, j); len(p) != 1 {
			t.Errorf("pending creates after a refused server/discover: %+v; want it kept", p)
		}
	})

	t.Run("Legacy", func(t *testing.T) {
		j := client.MemoryJournal()
		e := client.Entry{ServerURL: s.url, Tool: "slow_compute", IdempotencyKey: "k", CreatedAt: time.Now()}
		if err := j.Save(ctx, e); err != nil {
			t.Fatal(err)
		}
		c := newClient(s, &client.Options{Token: "good", Journal: j, ProtocolVersion: client.LegacyProtocolVersion})
		if _, err := c.Resend(ctx, e); !errors.Is(err, client.ErrOutcomeUnknown) {
			t.Errorf("Resend by a 2025-11-25 client: %v; want ErrOutcomeUnknown, nothing sent", err)
		}
		if p := pendingOf(t, j); len(p) != 1 {
			t.Errorf("pending creates after a refused resend: %+v; want it kept", p)
		}
	})

	t.Run("JournalRefusesSave", func(t *testing.T) {
		var sent atomic.Int32
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Header.Get("Mcp-Method") == "tools/call" {
				sent.Add(1)
			}
			return http.DefaultTransport.RoundTrip(r)
		})}
		j := failingSaves{client.MemoryJournal()}
		_, err := newClient(s, &client.Options{Token: "good", Journal: j, HTTPClient: hc}).CallTool(ctx, "slow_compute", map[string]any{"seconds": 0.01})
		if !errors.Is(err, client.ErrJournal) || !errors.Is(err, errDiskFull) {
			t.Errorf("CallTool with a journal that cannot save: %v; want ErrJournal wrapping the journal's error", err)
		}
		if n := sent.Load(); n != 0 {
			t.Errorf("%d tools/call sent; want none: a call the journal could not record is not sent", n)
		}
	})

	t.Run("QuestionWithoutHandler", func(t *testing.T) {
		j := client.MemoryJournal()
		_, err := newClient(s, &client.Options{Token: "good", Journal: j}).CallTool(ctx, "test_tool_with_task", nil)
		if !errors.Is(err, client.ErrInputRequired) {
			t.Fatalf("CallTool of a tool that asks first, without an InputHandler: %v", err)
		}
		if p := pendingOf(t, j); len(p) != 0 {
			t.Errorf("pending creates after a question: %+v; want none (no task exists)", p)
		}
	})
}

// errDiskFull is the error of failingSaves.
var errDiskFull = errors.New("no space left on device")

// failingSaves is a journal whose every Save fails.
type failingSaves struct{ client.Journal }

func (failingSaves) Save(context.Context, client.Entry) error { return errDiskFull }

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestResend_ServerWithoutDiscover: a server that answers server/discover
// with HTTP 404 honours no keys: a pending create cannot be resolved, and
// is removed with ErrOutcomeUnknown rather than kept for ever. Any other
// refusal (HTTP 400 or 502 from a proxy in the way, say) says nothing: the
// pending create stays.
func TestResend_ServerWithoutDiscover(t *testing.T) {
	for _, tt := range []struct {
		status int
		kept   bool
	}{{http.StatusNotFound, false}, {http.StatusBadRequest, true}, {http.StatusBadGateway, true}} {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			s := startServer(t, serverConfig{wrap: func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("Mcp-Method") == "server/discover" {
						http.Error(w, "no", tt.status)
						return
					}
					next.ServeHTTP(w, r)
				})
			}})
			ctx := testContext(t)
			j := client.MemoryJournal()
			e := client.Entry{ServerURL: s.url, Tool: "slow_compute", IdempotencyKey: "k", CreatedAt: time.Now()}
			if err := j.Save(ctx, e); err != nil {
				t.Fatal(err)
			}
			// The protocol given: a client that finds it out takes a server
			// that refuses server/discover for one of 2025-11-25.
			_, err := newClient(s, &client.Options{Journal: j, ProtocolVersion: client.ProtocolVersion}).Resend(ctx, e)
			if err == nil || errors.Is(err, client.ErrOutcomeUnknown) == tt.kept {
				t.Errorf("Resend: %v; want an error, ErrOutcomeUnknown: %v", err, !tt.kept)
			}
			if all, _ := j.List(ctx); (len(all) == 1) != tt.kept {
				t.Errorf("journal: %+v; want the pending create kept: %v", all, tt.kept)
			}
		})
	}
}

// TestTransportError_Redacted: the text of a TransportError, which the
// client logs and the CLI prints, leaves out the server URL's user
// information and query, wherever the cause quotes them (before, a proxy's
// log showed an upstream's password and API key).
func TestTransportError_Redacted(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: the request fails to connect
	c := client.New("http://alice:s3cretpw@"+addr+"/mcp?api_key=TOPSECRETKEY", &client.Options{ProtocolVersion: "2026-07-28"})
	_, err = c.ListTools(t.Context())
	var te *client.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("ListTools with nothing listening: %v, want a TransportError", err)
	}
	for _, secret := range []string{"alice", "s3cretpw", "TOPSECRETKEY"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error's text shows %q: %s", secret, err)
		}
	}
	if !strings.Contains(err.Error(), "http://"+addr+"/mcp") {
		t.Errorf("the error's text does not name the server: %s", err)
	}
}

// TestCallToolWithKey: a call made again with the idempotency key of the
// first gets the task the first made, as a program that re-runs its work
// after a restart needs; another key makes another task.
func TestCallToolWithKey(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := testContext(t)
	c := newClient(s, nil)
	args := map[string]any{"seconds": 60}
	first, err := c.CallToolWithKey(ctx, "job-1", "slow_compute", args)
	if err != nil || first.Task == nil {
		t.Fatalf("CallToolWithKey: %+v, %v; want a task", first, err)
	}
	again, err := newClient(s, nil).CallToolWithKey(ctx, "job-1", "slow_compute", args)
	if err != nil || again.Task == nil || again.Task.ID != first.Task.ID {
		t.Fatalf("the same call with the same key: %+v, %v; want task %s", again, err, first.Task.ID)
	}
	other, err := c.CallToolWithKey(ctx, "job-2", "slow_compute", args)
	if err != nil || other.Task == nil || other.Task.ID == first.Task.ID {
		t.Fatalf("another key: %+v, %v; want another task", other, err)
	}
	if _, err := c.CallToolWithKey(ctx, "", "slow_compute", args); err == nil {
		t.Error("CallToolWithKey with an empty key succeeded")
	}
}

// TestPendingCreate_NotSent: a tools/call that fails in a way that proves
// it never reached the server (nothing to dial, a TLS handshake that
// fails, a plain-HTTP server at an https:// URL, a proxy that refuses the
// tunnel) leaves no pending create, and its error is no "outcome
// unknown": nothing can have made a task. A call that failed after it was
// written (the connection reset, no reply in time), or whose transport got
// a connection before the dial error it returns, stays pending. Each
// against a real listener. Before, every failure but a failed dial left a
// pending create that "mcptasks tasks --resume" could never settle.
func TestPendingCreate_NotSent(t *testing.T) {
	t.Parallel()
	quiet := log.New(io.Discard, "", 0) // the servers' TLS handshake errors
	plain := func(t *testing.T, h http.HandlerFunc) *httptest.Server {
		s := httptest.NewUnstartedServer(h)
		s.Config.ErrorLog = quiet
		s.Start()
		t.Cleanup(s.Close)
		return s
	}
	answer := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}
	for _, tc := range []struct {
		name string
		// setup returns the endpoint and the HTTP client to call it with.
		setup func(t *testing.T) (string, *http.Client)
		kept  bool  // the pending create stays: the outcome is unknown
		is    error // if set, the error matches it
	}{
		{name: "ConnectionRefused", setup: func(t *testing.T) (string, *http.Client) {
			return "http://" + closedPort(t) + "/mcp", &http.Client{Transport: &http.Transport{}}
		}, is: syscall.ECONNREFUSED},
		{name: "DNSFailure", setup: func(t *testing.T) (string, *http.Client) {
			noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
				return nil, errors.New("no DNS server here")
			}}
			return "http://mcp.invalid/mcp", &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Resolver: noDNS}).DialContext}}
		}},
		{name: "HTTPSToPlainHTTP", setup: func(t *testing.T) (string, *http.Client) {
			s := plain(t, answer)
			return strings.Replace(s.URL, "http://", "https://", 1) + "/mcp", &http.Client{Transport: &http.Transport{}}
		}, is: http.ErrSchemeMismatch},
		{name: "UntrustedCertificate", setup: func(t *testing.T) (string, *http.Client) {
			s := httptest.NewUnstartedServer(http.HandlerFunc(answer))
			s.Config.ErrorLog = quiet
			s.StartTLS()
			t.Cleanup(s.Close)
			return s.URL + "/mcp", &http.Client{Transport: &http.Transport{}} // not s.Client(): its certificate is unknown
		}},
		{name: "TLSAlert", setup: func(t *testing.T) (string, *http.Client) {
			s := httptest.NewUnstartedServer(http.HandlerFunc(answer))
			s.Config.ErrorLog = quiet
			s.TLS = &tls.Config{MinVersion: tls.VersionTLS13}
			s.StartTLS()
			t.Cleanup(s.Close)
			tr := s.Client().Transport.(*http.Transport).Clone()
			tr.TLSClientConfig.MaxVersion = tls.VersionTLS12 // the server answers with an alert
			return s.URL + "/mcp", &http.Client{Transport: tr}
		}},
		{name: "HandshakeCut", setup: func(t *testing.T) (string, *http.Client) {
			l := closingListener(t) // accepts, then closes before any reply
			return "https://" + l + "/mcp", &http.Client{Transport: &http.Transport{}}
		}},
		{name: "ProxyUnreachable", setup: func(t *testing.T) (string, *http.Client) {
			proxy := &url.URL{Scheme: "http", Host: closedPort(t)}
			return "http://mcp.test/mcp", &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
		}, is: syscall.ECONNREFUSED},
		{name: "ResetAfterRequest", kept: true, setup: func(t *testing.T) (string, *http.Client) {
			s := plain(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // the whole request arrived
				conn, _, _ := http.NewResponseController(w).Hijack()
				conn.Close()
			})
			return s.URL + "/mcp", &http.Client{Transport: &http.Transport{}}
		}},
		{name: "NoReplyInTime", kept: true, setup: func(t *testing.T) (string, *http.Client) {
			stop := make(chan struct{})
			s := plain(t, func(_ http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // the whole request arrived
				select {
				case <-r.Context().Done():
				case <-stop:
				}
			})
			t.Cleanup(func() { close(stop) }) // before s.Close

			return s.URL + "/mcp", &http.Client{Transport: &http.Transport{}, Timeout: 200 * time.Millisecond}
		}, is: context.DeadlineExceeded},
		// A transport that sent the request, then tried again and could
		// not dial: its error says nothing of the first try.
		{name: "ConnectionThenDialError", kept: true, setup: func(t *testing.T) (string, *http.Client) {
			s := plain(t, answer)
			base := &http.Transport{}
			return s.URL + "/mcp", &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if resp, err := base.RoundTrip(r); err == nil {
					resp.Body.Close()
				}
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			endpoint, hc := tc.setup(t)
			ctx := testContext(t)
			j := client.MemoryJournal()
			c := client.New(endpoint, &client.Options{HTTPClient: hc, Journal: j, ProtocolVersion: client.ProtocolVersion, CreateRetries: -1})
			_, err := c.CallTool(ctx, "greet", map[string]any{"name": "Ada"})
			var te *client.TransportError
			if !errors.As(err, &te) {
				t.Fatalf("CallTool: %v; want a *TransportError", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("CallTool: %v; want an error matching %v", err, tc.is)
			}
			entries, lerr := j.List(ctx)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if kept := len(entries) == 1 && entries[0].Pending(); kept != tc.kept || len(entries) > 1 {
				t.Errorf("after %v:\njournal %+v; want the pending create kept: %v", err, entries, tc.kept)
			}
		})
	}
}

// closedPort returns the address of a port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// closingListener returns the address of a listener that closes every
// connection it accepts at once, until the test ends.
func closingListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	})
	return l.Addr().String()
}
