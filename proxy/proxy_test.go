package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/proxy"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// These tests run the proxy in process: an upstream go-sdk server reached
// through in-memory transports (one per session, as a stdio command would
// be), the proxy's tools on an mcpserver.Server with an engine on a memory
// store, and the client package as the task's client.

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// upstream is the upstream server of the tests, with hooks into its tools.
type upstream struct {
	srv       *mcp.Server
	started   chan string   // gate: receives the call's label when it starts
	release   chan struct{} // gate: closed to let calls finish
	cancelled chan string   // gate: receives the label of a cancelled call
}

func question(msg, field string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: msg, RequestedSchema: &jsonschema.Schema{
		Type: "object", Properties: map[string]*jsonschema.Schema{field: {Type: "string"}}, Required: []string{field},
	}}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func answerOf(r mcp.InputResponse, field string) string {
	if e, ok := r.(*mcp.ElicitResult); ok {
		if e.Action != "accept" {
			return "<" + e.Action + ">"
		}
		return fmt.Sprint(e.Content[field])
	}
	return "<none>"
}

func newUpstream() *upstream {
	u := &upstream{started: make(chan string, 10), release: make(chan struct{}), cancelled: make(chan string, 10)}
	// A page size of 2 makes the proxy read several tools/list pages.
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, &mcp.ServerOptions{PageSize: 2, Instructions: "Be nice."})
	type labelIn struct {
		Label string `json:"label"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes label."},
		func(_ context.Context, _ *mcp.CallToolRequest, in labelIn) (*mcp.CallToolResult, any, error) {
			return text("echo " + in.Label), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "gate", Description: "Waits for the test."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in labelIn) (*mcp.CallToolResult, any, error) {
			u.started <- in.Label
			select {
			case <-u.release:
				return text("released " + in.Label), nil, nil
			case <-ctx.Done():
				u.cancelled <- in.Label
				return nil, nil, ctx.Err()
			}
		})
	// ask asks one question, then two at once, in two input_required rounds.
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks three questions in two rounds."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			p := req.Params
			switch {
			case p.RequestState == "":
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": question("Who are you?", "name")}, RequestState: "r2"}, nil, nil
			case p.RequestState == "r2":
				name := answerOf(p.InputResponses["who"], "name")
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"y_second": question("Second?", "v"),
					"x_first":  question("First?", "v"),
				}, RequestState: "r3:" + name}, nil, nil
			default:
				name, _ := strings.CutPrefix(p.RequestState, "r3:")
				return text(fmt.Sprintf("%s: %s/%s", name, answerOf(p.InputResponses["x_first"], "v"), answerOf(p.InputResponses["y_second"], "v"))), nil, nil
			}
		})
	// ask1 asks one question (one round: go-sdk's server turns it into an
	// elicitation/create request for clients before 2026-07-28).
	mcp.AddTool(s, &mcp.Tool{Name: "ask1", Description: "Asks one question."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if r, ok := req.Params.InputResponses["who"]; ok {
				return text("hello " + answerOf(r, "name")), nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": question("Who are you?", "name")}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Asks for sampling."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 the proxy must refuse sampling, deprecated or not
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"s": &mcp.CreateMessageParams{MaxTokens: 10}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "Asks for roots the old way."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 the proxy must refuse roots, deprecated or not
			_, err := req.Session.ListRoots(ctx, nil)
			return text(fmt.Sprintf("roots: %v", err)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "toolerr", Description: "Fails as a tool."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("the disk is full")
		})
	s.AddTool(&mcp.Tool{Name: "rpcerr", Description: "Fails as a protocol.", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32000, Message: "the database is locked"}
		})
	u.srv = s
	return u
}

// env is a proxy in front of an upstream, served over HTTP.
type env struct {
	up       *upstream
	p        *proxy.Proxy
	c        *client.Client
	url      string
	sessions *countingTransports
}

// countingTransports counts the upstream sessions the proxy opens.
type countingTransports struct {
	mu sync.Mutex
	n  int
}

func startEnv(t *testing.T, up *upstream, u proxy.Upstream, opts *proxy.Options, answer client.InputHandler) *env {
	t.Helper()
	e := &env{up: up, sessions: &countingTransports{}}
	u.Name = "test-upstream"
	u.Transport = func() (mcp.Transport, error) {
		e.sessions.mu.Lock()
		e.sessions.n++
		e.sessions.mu.Unlock()
		ct, st := mcp.NewInMemoryTransports()
		if _, err := up.srv.Connect(context.Background(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	ctx := t.Context()
	p, err := proxy.New(ctx, &u, opts)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	e.p = p
	srv := mcpserver.New(&mcp.Implementation{Name: "proxy-test", Version: "0"}, &mcpserver.Options{
		ServerOptions: &mcp.ServerOptions{Instructions: p.Instructions()},
		Store:         memory.New(), Engine: &engine.Options{Workers: 4, DefaultPollInterval: 10 * time.Millisecond},
	})
	if err := p.Register(srv); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		sctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	e.url = hs.URL
	e.c = client.New(hs.URL, &client.Options{InputHandler: answer, MinPollInterval: 10 * time.Millisecond})
	return e
}

// call calls tool and waits for its result: the task's if it became one.
func (e *env) call(t *testing.T, tool string, args any) (res *mcp.CallToolResult, wasTask bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cr, err := e.c.CallTool(ctx, tool, args)
	if err != nil {
		return nil, false, err
	}
	if cr.Task == nil {
		return cr.Result, false, nil
	}
	res, err = cr.Task.Wait(ctx)
	return res, true, err
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// answers is an InputHandler that answers "<key>:<message>" and records
// the keys and messages it was asked, in order.
type answers struct {
	mu    sync.Mutex
	asked []string
}

func (a *answers) HandleInput(_ context.Context, key string, req *client.InputRequest) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, key+" "+req.Elicit.Message)
	field := "v"
	if strings.Contains(req.Elicit.Message, "Who") {
		field = "name"
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{field: "ans-" + key}}, nil
}

func (a *answers) got() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

func TestProxyListsAndRegistersAllTools(t *testing.T) {
	up := newUpstream()
	e := startEnv(t, up, proxy.Upstream{}, nil, nil)
	var want []string
	for _, tl := range e.p.Tools() {
		want = append(want, tl.Name)
	}
	if len(want) != 8 { // four pages of two
		t.Fatalf("listed %d tools %v, want all 8", len(want), want)
	}
	if e.p.Instructions() != "Be nice." {
		t.Errorf("instructions %q", e.p.Instructions())
	}
	// The proxy serves them with the upstream's descriptions and schemas.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	upTools := map[string]*mcp.Tool{}
	for _, tl := range e.p.Tools() {
		upTools[tl.Name] = tl
	}
	n := 0
	for tl, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		u := upTools[tl.Name]
		if u == nil {
			t.Errorf("proxy serves %q, which the upstream does not have", tl.Name)
			continue
		}
		a, _ := json.Marshal(tl.InputSchema)
		b, _ := json.Marshal(u.InputSchema)
		if tl.Description != u.Description || string(a) != string(b) {
			t.Errorf("tool %s: served %q %s, upstream has %q %s", tl.Name, tl.Description, a, u.Description, b)
		}
	}
	if n != len(want) {
		t.Errorf("proxy serves %d tools, want %d", n, len(want))
	}
}

func TestProxyTaskResult(t *testing.T) {
	up := newUpstream()
	e := startEnv(t, up, proxy.Upstream{}, nil, nil)
	res, wasTask, err := e.call(t, "echo", map[string]any{"label": "x"})
	if err != nil || !wasTask || resultText(res) != "echo x" || res.IsError {
		t.Fatalf("echo: %v task=%v err=%v", res, wasTask, err)
	}
	if _, ok := res.Meta[mcp.MetaKeyServerInfo]; ok {
		t.Errorf("the result keeps the upstream's serverInfo: %v", res.Meta)
	}
	res, wasTask, err = e.call(t, "toolerr", nil)
	if err != nil || !wasTask || !res.IsError || !strings.Contains(resultText(res), "the disk is full") {
		t.Errorf("toolerr: %v task=%v err=%v, want a completed task with isError", res, wasTask, err)
	}
	_, _, err = e.call(t, "rpcerr", nil)
	var te *client.TaskError
	if !errors.As(err, &te) || te.Status != task.Failed || te.Err == nil || te.Err.Code != jsonrpc.CodeInternalError ||
		!strings.Contains(te.Err.Message, "upstream test-upstream returned error -32000") || !strings.Contains(te.Err.Message, "the database is locked") {
		t.Errorf("rpcerr: %v, want a failed task naming the upstream and its error", err)
	}
}

// TestProxyQuestionRounds checks that the upstream's input_required rounds
// become the task's input requests, numbered in the order asked (request
// ids sorted within a round), the questions of a round asked together, and
// that the answers reach the upstream.
func TestProxyQuestionRounds(t *testing.T) {
	up := newUpstream()
	a := &answers{}
	e := startEnv(t, up, proxy.Upstream{}, nil, a)
	res, wasTask, err := e.call(t, "ask", nil)
	if err != nil || !wasTask {
		t.Fatalf("ask: task=%v err=%v", wasTask, err)
	}
	if got, want := resultText(res), "ans-upstream-1: ans-upstream-2/ans-upstream-3"; got != want {
		t.Errorf("result %q, want %q", got, want)
	}
	want := []string{"upstream-1 Who are you?", "upstream-2 First?", "upstream-3 Second?"}
	got := a.got()
	slices.Sort(got[1:]) // the client answers the keys of one round in any order
	if !slices.Equal(got, want) {
		t.Errorf("asked %q, want %q", got, want)
	}
}

// TestProxyQuestionRequest checks the elicitation/create request of an
// upstream on protocol 2025-11-25, and that a roots/list request fails.
func TestProxyQuestionRequest(t *testing.T) {
	up := newUpstream()
	a := &answers{}
	e := startEnv(t, up, proxy.Upstream{ProtocolVersion: "2025-11-25"}, nil, a)
	res, _, err := e.call(t, "ask1", nil)
	if err != nil || resultText(res) != "hello ans-upstream-1" {
		t.Fatalf("ask1: %v, %v", res, err)
	}
	if got := a.got(); !slices.Equal(got, []string{"upstream-1 Who are you?"}) {
		t.Errorf("asked %q", got)
	}
	res, _, err = e.call(t, "roots", nil)
	// go-sdk's server refuses to send it to a client that did not declare
	// roots; another upstream would get the proxy's -32601.
	if got := resultText(res); err != nil || !strings.Contains(got, "roots/list") || strings.Contains(got, "<nil>") {
		t.Errorf("roots: %q, %v; want the upstream to get an error", resultText(res), err)
	}
}

// TestProxyWithdrawnQuestion: an upstream (2025-11-25) that asks with
// elicitation/create and then takes its question back (it cancels its
// request) while its call goes on leaves the task working, without the
// question; before, clients were still asked it, and the task stayed
// input_required.
func TestProxyWithdrawnQuestion(t *testing.T) {
	up := newUpstream()
	withdraw := make(chan struct{})
	gaveUp := make(chan error, 1)
	mcp.AddTool(up.srv, &mcp.Tool{Name: "ask_then_work", Description: "Asks, takes the question back, works on."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			qctx, cancel := context.WithCancel(ctx)
			go func() { <-withdraw; cancel() }()
			_, err := req.Session.Elicit(qctx, question("Who are you?", "name"))
			gaveUp <- err
			<-up.release
			return text("worked on"), nil, nil
		})
	e := startEnv(t, up, proxy.Upstream{ProtocolVersion: "2025-11-25"}, nil, nil)
	release := sync.OnceFunc(func() { close(up.release) })
	t.Cleanup(release) // also when the test fails first: the proxy's shutdown waits for the call
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cr, err := e.c.CallTool(ctx, "ask_then_work", nil)
	if err != nil || cr.Task == nil {
		t.Fatalf("call: %v, %v; want a task", cr, err)
	}
	waitAsked(t, ctx, cr.Task)
	close(withdraw)
	if err := <-gaveUp; err == nil {
		t.Fatal("the upstream's Elicit returned no error")
	}
	for {
		st, err := cr.Task.Get(ctx)
		if err == nil && st.Status == task.Working && len(st.InputRequests) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after the upstream took its question back: %+v, %v; want working with no question", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	release()
	if res, err := cr.Task.Wait(ctx); err != nil || resultText(res) != "worked on" {
		t.Errorf("wait: %v, %v", res, err)
	}
}

func TestProxySamplingFailsTheCall(t *testing.T) {
	e := startEnv(t, newUpstream(), proxy.Upstream{}, nil, &answers{})
	_, _, err := e.call(t, "sample", nil)
	var te *client.TaskError
	if !errors.As(err, &te) || te.Err == nil || !strings.Contains(te.Err.Message, "asked for sampling/createMessage") {
		t.Errorf("sample: %v, want a failed task saying sampling is not forwarded", err)
	}
}

// TestProxyInline checks the tools that --task-tools leaves out: never a
// task, and the upstream's questions declined.
func TestProxyInline(t *testing.T) {
	mode, err := proxy.Select([]string{"gate", "ec?o"}, mcpserver.TaskOptional)
	if err != nil {
		t.Fatal(err)
	}
	a := &answers{}
	e := startEnv(t, newUpstream(), proxy.Upstream{}, &proxy.Options{Mode: mode}, a)
	res, wasTask, err := e.call(t, "echo", map[string]any{"label": "t"})
	if err != nil || !wasTask || resultText(res) != "echo t" {
		t.Errorf("echo: %v task=%v err=%v, want a task", res, wasTask, err)
	}
	res, wasTask, err = e.call(t, "ask1", nil)
	if err != nil || wasTask || resultText(res) != "hello <decline>" {
		t.Errorf("ask1: %v task=%v err=%v, want a declined question inline", res, wasTask, err)
	}
	if len(a.got()) != 0 {
		t.Errorf("the client was asked %q", a.got())
	}
}

// TestProxyRequiredMode checks that --task-mode required reaches the tools:
// a client without the Tasks extension (go-sdk's) gets -32021.
func TestProxyRequiredMode(t *testing.T) {
	mode, err := proxy.Select([]string{"echo"}, mcpserver.TaskRequired)
	if err != nil {
		t.Fatal(err)
	}
	e := startEnv(t, newUpstream(), proxy.Upstream{}, &proxy.Options{Mode: mode}, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"label": "x"}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Errorf("echo without the Tasks extension: %v, want -32021", err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "toolerr"})
	if err != nil || !res.IsError {
		t.Errorf("toolerr (not selected): %v %v, want the upstream's tool error inline", res, err)
	}
}

// TestProxyCancel checks that cancelling the task cancels the upstream call.
func TestProxyCancel(t *testing.T) {
	up := newUpstream()
	e := startEnv(t, up, proxy.Upstream{}, nil, nil)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cr, err := e.c.CallTool(ctx, "gate", map[string]any{"label": "c"})
	if err != nil || cr.Task == nil {
		t.Fatalf("gate: %v %v", cr, err)
	}
	select {
	case <-up.started:
	case <-ctx.Done():
		t.Fatal("the upstream call did not start")
	}
	if err := cr.Task.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-up.cancelled:
		if l != "c" {
			t.Errorf("cancelled %q", l)
		}
	case <-ctx.Done():
		t.Fatal("the upstream call was not cancelled")
	}
	if _, err := cr.Task.Wait(ctx); !errors.Is(err, client.ErrTaskCancelled) {
		t.Errorf("wait: %v, want cancelled", err)
	}
}

// TestProxySessionPerCall checks that each call opens its own session.
func TestProxySessionPerCall(t *testing.T) {
	e := startEnv(t, newUpstream(), proxy.Upstream{}, nil, nil)
	before := e.sessions.n // the listing's
	for i := range 3 {
		if _, _, err := e.call(t, "echo", map[string]any{"label": fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	e.sessions.mu.Lock()
	defer e.sessions.mu.Unlock()
	if e.sessions.n-before != 3 {
		t.Errorf("%d sessions for 3 calls", e.sessions.n-before)
	}
}

func TestProxyBadUpstream(t *testing.T) {
	for _, u := range []proxy.Upstream{
		{},
		{Command: []string{"x"}, URL: "http://x/mcp"},
		{URL: "ftp://x/mcp"},
	} {
		if _, err := proxy.New(t.Context(), &u, nil); err == nil {
			t.Errorf("New(%+v): no error", u)
		}
	}
	_, err := proxy.New(t.Context(), &proxy.Upstream{Command: []string{"/nonexistent/server"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "upstream server") {
		t.Errorf("missing command: %v", err)
	}
}

func TestMatches(t *testing.T) {
	for _, tt := range []struct {
		glob, name string
		want       bool
	}{
		{"*", "anything/at.all", true},
		{"*", "", true},
		{"slow_*", "slow_echo", true},
		{"slow_*", "echo_slow", false},
		{"*_echo", "slow_echo", true},
		{"s?ow", "slow", true},
		{"s?ow", "sow", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"**", "x", true},
	} {
		if got := proxy.Matches([]string{tt.glob}, tt.name); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
	if _, err := proxy.Select([]string{""}, mcpserver.TaskOptional); err == nil {
		t.Error("Select accepted an empty glob")
	}
	sel, _ := proxy.Select(nil, mcpserver.TaskRequired)
	if m := sel(&mcp.Tool{Name: "x"}); m != mcpserver.TaskNever {
		t.Errorf("no globs: mode %v, want never", m)
	}
}

// slowAnswers answers like answers, after a delay: a person taking time.
type slowAnswers struct {
	answers
	delay time.Duration
}

func (a *slowAnswers) HandleInput(ctx context.Context, key string, req *client.InputRequest) (any, error) {
	select {
	case <-time.After(a.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return a.answers.HandleInput(ctx, key, req)
}

// TestProxyUpstreamTimeout checks Options.UpstreamTimeout: a call whose
// upstream stops answering fails when it passes, naming the upstream and
// the timeout, and the upstream call is cancelled; the time a question
// waits for its answer (here three times the timeout) does not count.
func TestProxyUpstreamTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	up := newUpstream()
	e := startEnv(t, up, proxy.Upstream{ProtocolVersion: "2025-11-25"}, &proxy.Options{UpstreamTimeout: timeout}, &slowAnswers{delay: 3 * timeout})

	_, wasTask, err := e.call(t, "gate", map[string]any{"label": "stuck"})
	var te *client.TaskError
	want := `upstream test-upstream did not finish answering tools/call "gate" within 300ms (the upstream timeout)`
	if !wasTask || !errors.As(err, &te) || te.Status != task.Failed || te.Err == nil || !strings.Contains(te.Err.Message, want) {
		t.Fatalf("gate: task=%v err=%v; want a failed task saying %q", wasTask, err, want)
	}
	select {
	case l := <-up.cancelled:
		if l != "stuck" {
			t.Errorf("cancelled %q", l)
		}
	case <-time.After(waitTimeout):
		t.Error("the upstream call was not cancelled")
	}

	res, _, err := e.call(t, "ask1", nil)
	if err != nil || resultText(res) != "hello ans-upstream-1" {
		t.Errorf("ask1 with a slow answer: %v, %v; want the answer to reach the upstream", res, err)
	}
}
