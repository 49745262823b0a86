package cmdtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// This file drives command tools through a real mcpserver and engine on a
// memory store, over HTTP.

// waitTimeout bounds every wait for a task status.
const waitTimeout = 10 * time.Second

// startServer serves the tools file src, written into a fresh directory
// with the given scripts, and returns a client and the directory.
func startServer(t *testing.T, src string, scripts map[string]string) (*client, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		writeScript(t, dir, name, body)
	}
	path := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(&mcp.Implementation{Name: "cmdtool-test", Version: "0"}, &mcpserver.Options{
		Store: memory.New(), Engine: &engine.Options{Workers: 4, ClaimInterval: 20 * time.Millisecond},
	})
	if err := Register(srv, cfg); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // stop running commands now
		_ = srv.Shutdown(ctx)
	})
	return &client{url: hs.URL + "/mcp", tasks: true, elicitation: true}, dir
}

// client is a minimal stateless 2026-07-28 requester.
type client struct {
	url         string
	tasks       bool // declare the Tasks extension
	elicitation bool // declare the elicitation capability (form mode)
	// caps, if set, are the capabilities declared instead of those of
	// tasks and elicitation.
	caps map[string]any
}

type rpcError = mcptest.Error

// call sends one request and returns its result, or fails the test on a
// JSON-RPC error.
func (c *client) call(t *testing.T, method string, params map[string]any) map[string]any {
	t.Helper()
	res, rerr := c.do(t, method, params)
	if rerr != nil {
		t.Fatalf("%s: error %d %s", method, rerr.Code, rerr.Message)
	}
	return res
}

// do sends one request and returns its result or its JSON-RPC error.
func (c *client) do(t *testing.T, method string, params map[string]any) (map[string]any, *rpcError) {
	t.Helper()
	caps := c.caps
	if caps == nil {
		caps = mcptest.Caps(c.tasks, c.elicitation)
	}
	r, err := (&mcptest.Client{URL: c.url, Capabilities: caps}).Post(t.Context(), method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var res map[string]any
	if r.Result != nil {
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatalf("%s: HTTP %d, bad result %s: %v", method, r.Status, r.Result, err)
		}
	}
	return res, r.Error
}

func (c *client) callTool(t *testing.T, name string, args map[string]any, responses map[string]any) map[string]any {
	t.Helper()
	return c.retryTool(t, name, args, responses, "")
}

// retryTool is callTool with the requestState of an earlier round, if not "".
func (c *client) retryTool(t *testing.T, name string, args map[string]any, responses map[string]any, state string) map[string]any {
	t.Helper()
	p := map[string]any{"name": name, "arguments": args}
	if responses != nil {
		p["inputResponses"] = responses
	}
	if state != "" {
		p["requestState"] = state
	}
	return c.call(t, "tools/call", p)
}

// waitTask polls tasks/get until done(task) holds, for at most waitTimeout.
func (c *client) waitTask(t *testing.T, id string, what string, done func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		got := c.call(t, "tasks/get", map[string]any{"taskId": id})
		if done(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: no %s within %s; last: %v", id, what, waitTimeout, got)
		}
		time.Sleep(20 * time.Millisecond) // this client's poll interval
	}
}

func status(s string) func(map[string]any) bool {
	return func(task map[string]any) bool { return task["status"] == s }
}

// resultText returns the text of the first content item of a tool result.
func resultText(res any) string {
	m, _ := res.(map[string]any)
	content, _ := m["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

// TestServer_ProgressStatus checks that the lines a running command prints
// become the task's status message, filtered by the progress pattern.
func TestServer_ProgressStatus(t *testing.T) {
	t.Parallel()
	c, dir := startServer(t, `tools:
  - name: render
    input_schema: {type: object, properties: {gate: {type: string}}, required: [gate]}
    argv: [sh, render.sh, "{gate}"]
    progress: '^progress: (.*)$'
`, map[string]string{"render.sh": `echo "progress: 10%"
echo "not a progress line"
echo "progress: 50%"
while [ ! -e "$1" ]; do sleep 0.02; done
echo "progress: 100%"
echo "rendered"
`})
	gate := filepath.Join(dir, "gate")
	created := c.callTool(t, "render", map[string]any{"gate": gate}, nil)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %v", created)
	}
	seen := map[any]bool{}
	c.waitTask(t, id, "status message 50%", func(task map[string]any) bool {
		seen[task["statusMessage"]] = true
		return task["statusMessage"] == "50%"
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := c.waitTask(t, id, "completion", func(task map[string]any) bool {
		seen[task["statusMessage"]] = true
		return task["status"] == "completed"
	})
	if got := resultText(done["result"]); got != "progress: 10%\nnot a progress line\nprogress: 50%\nprogress: 100%\nrendered\n" {
		t.Errorf("result text %q", got)
	}
	for s := range seen {
		switch s {
		case nil, "Running sh", "10%", "50%", "100%":
		default:
			t.Errorf("status message %q: not a progress line", s)
		}
	}
}

const confirmTools = `tools:
  - name: export
    input_schema:
      type: object
      properties: {table: {type: string}, out: {type: string}}
      required: [table, out]
    argv: [sh, export.sh, "{table}", "{out}"]
    confirm: Export {table} to {out}?
  - name: export_inline
    input_schema:
      type: object
      properties: {table: {type: string}, out: {type: string}}
      required: [table, out]
    argv: [sh, export.sh, "{table}", "{out}"]
    confirm: Export {table} to {out}?
    task: optional
`

var confirmScripts = map[string]string{"export.sh": `echo "rows of $1" > "$2"; echo "exported $1"`}

func accept(yes bool) map[string]any {
	return map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": yes}}}
}

// TestServer_Confirm checks the confirmation round of a task tool: an
// input_required result first, no task on a refusal, a task on a yes.
func TestServer_Confirm(t *testing.T) {
	t.Parallel()
	c, dir := startServer(t, confirmTools, confirmScripts)
	out := filepath.Join(dir, "orders.csv")
	args := map[string]any{"table": "orders", "out": out}

	round := c.callTool(t, "export", args, nil)
	if round["resultType"] != "input_required" || round["taskId"] != nil {
		t.Fatalf("first call: %v, want input_required", round)
	}
	req, _ := round["inputRequests"].(map[string]any)["confirm"].(map[string]any)
	params, _ := req["params"].(map[string]any)
	schema, _ := params["requestedSchema"].(map[string]any)
	prop, _ := schema["properties"].(map[string]any)["confirm"].(map[string]any)
	if req["method"] != "elicitation/create" || params["message"] != "Export orders to "+out+"?" ||
		fmt.Sprint(schema["required"]) != "[confirm]" || prop["type"] != "boolean" {
		t.Errorf("input request %v", req)
	}

	for name, responses := range map[string]map[string]any{
		"decline":        {"confirm": map[string]any{"action": "decline"}},
		"cancel":         {"confirm": map[string]any{"action": "cancel"}},
		"accept but no":  accept(false),
		"accept nothing": {"confirm": map[string]any{"action": "accept", "content": map[string]any{}}},
	} {
		res := c.callTool(t, "export", args, responses)
		if res["resultType"] != "complete" || res["isError"] != true || res["taskId"] != nil ||
			!strings.Contains(resultText(res), "Not confirmed: export did not run") {
			t.Errorf("%s: %v, want an isError result and no task", name, res)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists before any confirmation", out)
	}

	state, _ := round["requestState"].(string)
	created := c.retryTool(t, "export", args, accept(true), state)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("confirmed call: %v, want a task", created)
	}
	done := c.waitTask(t, id, "completion", status("completed"))
	if got := resultText(done["result"]); got != "exported orders\n" {
		t.Errorf("result %q", got)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "rows of orders\n" {
		t.Errorf("%s: %q, %v", out, b, err)
	}
}

// TestServer_ConfirmInline checks the confirmation of a call that runs
// inline: a task: optional tool called by a client without the Tasks
// extension.
func TestServer_ConfirmInline(t *testing.T) {
	t.Parallel()
	c, dir := startServer(t, confirmTools, confirmScripts)
	c.tasks = false
	out := filepath.Join(dir, "inline.csv")
	args := map[string]any{"table": "users", "out": out}
	round := c.callTool(t, "export_inline", args, nil)
	if round["resultType"] != "input_required" {
		t.Fatalf("first call: %v, want input_required", round)
	}
	if res := c.callTool(t, "export_inline", args, map[string]any{"confirm": map[string]any{"action": "decline"}}); res["isError"] != true {
		t.Errorf("declined: %v, want isError", res)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists after a refusal", out)
	}
	state, _ := round["requestState"].(string)
	res := c.retryTool(t, "export_inline", args, accept(true), state)
	if res["resultType"] != "complete" || res["isError"] == true || resultText(res) != "exported users\n" {
		t.Errorf("confirmed inline call: %v", res)
	}
	// The task: required tool refuses a client without the extension
	// before it asks anything.
	_, rerr := c.do(t, "tools/call", map[string]any{"name": "export", "arguments": args})
	if rerr == nil || rerr.Code != -32021 {
		t.Errorf("task tool without the extension: error %+v, want -32021", rerr)
	}
}

// TestServer_ConfirmBindsArguments checks that a yes counts only for the
// arguments it was asked about: sent with the requestState of a round
// about other arguments, or with none, it gets the question again, about
// the arguments sent, and nothing runs. A client once had a.csv confirmed
// and then sent b.csv with the same answer, and b.csv was written.
func TestServer_ConfirmBindsArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool  string
		tasks bool
	}{
		{"export", true},         // Prepare, before the task is created
		{"export_inline", false}, // the middleware, before an inline run
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			c, dir := startServer(t, confirmTools, confirmScripts)
			c.tasks = tc.tasks
			a := map[string]any{"table": "orders", "out": filepath.Join(dir, "a.csv")}
			b := map[string]any{"table": "orders", "out": filepath.Join(dir, "b.csv")}
			roundA := c.callTool(t, tc.tool, a, nil)
			stateA, _ := roundA["requestState"].(string)
			if roundA["resultType"] != "input_required" {
				t.Fatalf("first call: %v, want input_required", roundA)
			}
			if stateA == "" {
				t.Errorf("first call: %v, want a requestState", roundA)
			}

			var stateB string
			for _, retry := range []struct {
				name  string
				state string
			}{
				{"the state of a round about a.csv", stateA},
				{"no state", ""},
				{"a made-up state", "mcptasks.confirm.x"},
			} {
				res := c.retryTool(t, tc.tool, b, accept(true), retry.state)
				reqs, _ := res["inputRequests"].(map[string]any)
				req, _ := reqs["confirm"].(map[string]any)
				params, _ := req["params"].(map[string]any)
				stateB, _ = res["requestState"].(string)
				if res["resultType"] != "input_required" || res["taskId"] != nil ||
					params["message"] != "Export orders to "+b["out"].(string)+"?" || stateB == "" || stateB == stateA {
					t.Errorf("b.csv accepted with %s: %v, want the question about b.csv again", retry.name, res)
				}
			}
			if _, err := os.Stat(b["out"].(string)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("b.csv was written on a yes to a.csv")
			}

			res := c.retryTool(t, tc.tool, b, accept(true), stateB)
			if tc.tasks {
				id, _ := res["taskId"].(string)
				if id == "" {
					t.Fatalf("b.csv accepted with its own state: %v, want a task", res)
				}
				res, _ = c.waitTask(t, id, "completion", status("completed"))["result"].(map[string]any)
			}
			if resultText(res) != "exported orders\n" {
				t.Errorf("b.csv accepted with its own state: %v", res)
			}
			if _, err := os.Stat(b["out"].(string)); err != nil {
				t.Errorf("b.csv: %v", err)
			}
		})
	}
}

// TestServer_ConfirmNeedsElicitation checks that a client that cannot
// answer a question gets a tool error, not a question: one without the
// elicitation capability, and one that declared its URL mode alone, which
// an inline call once asked a form question all the same.
func TestServer_ConfirmNeedsElicitation(t *testing.T) {
	t.Parallel()
	c, dir := startServer(t, confirmTools, confirmScripts)
	for _, tc := range []struct {
		name, tool string
		caps       map[string]any
	}{
		{"no elicitation, task", "export", mcptest.Caps(true, false)},
		{"no elicitation, inline", "export_inline", mcptest.Caps(false, false)},
		{"URL mode only, inline", "export_inline", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}},
	} {
		c.caps = tc.caps
		res := c.callTool(t, tc.tool, map[string]any{"table": "t", "out": filepath.Join(dir, "x")}, nil)
		if res["isError"] != true || !strings.Contains(resultText(res), "elicitation") {
			t.Errorf("%s: result %v, want an isError result naming elicitation", tc.name, res)
		}
	}
}

// TestServer_InlineOptional checks that a task: optional tool runs inline
// for a client without the Tasks extension, and as a task for one with it.
func TestServer_InlineOptional(t *testing.T) {
	t.Parallel()
	c, _ := startServer(t, "tools:\n  - name: hello\n    argv: [printf, 'hello %s', '{who}']\n    input_schema: {type: object, properties: {who: {type: string}}}\n    task: optional\n", nil)
	c.tasks = false
	if res := c.callTool(t, "hello", map[string]any{"who": "inline"}, nil); resultText(res) != "hello inline" {
		t.Errorf("inline call: %v", res)
	}
	c.tasks = true
	created := c.callTool(t, "hello", map[string]any{"who": "task"}, nil)
	id, _ := created["taskId"].(string)
	if id == "" {
		t.Fatalf("call with tasks: %v", created)
	}
	if got := resultText(c.waitTask(t, id, "completion", status("completed"))["result"]); got != "hello task" {
		t.Errorf("task result %q", got)
	}
}

// TestServer_CancelKillsGroup cancels a task whose command ignores SIGTERM:
// the task ends cancelled, and no process of the command's group is left.
func TestServer_CancelKillsGroup(t *testing.T) {
	t.Parallel()
	c, _ := startServer(t, `tools:
  - name: stubborn
    argv: [sh, stubborn.sh]
    grace: 200ms
`, map[string]string{"stubborn.sh": `trap '' TERM
sleep 60 &
echo "pgid $$"
sleep 60
`})
	created := c.callTool(t, "stubborn", map[string]any{}, nil)
	id, _ := created["taskId"].(string)
	running := c.waitTask(t, id, "pgid status", func(task map[string]any) bool {
		s, _ := task["statusMessage"].(string)
		return strings.HasPrefix(s, "pgid ")
	})
	pgid, err := strconv.Atoi(strings.TrimPrefix(running["statusMessage"].(string), "pgid "))
	if err != nil {
		t.Fatal(err)
	}
	c.call(t, "tasks/cancel", map[string]any{"taskId": id})
	c.waitTask(t, id, "cancelled", status("cancelled"))
	waitGroupGone(t, pgid, 5*time.Second)
}

func TestRegister_NameClash(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(filepath.Join(t.TempDir(), "tools.yaml"), []byte("tools:\n  - name: a\n    argv: [printf, a]\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(&mcp.Implementation{Name: "x", Version: "0"}, nil)
	if err := Register(srv, cfg); err != nil {
		t.Fatal(err)
	}
	err = Register(srv, cfg)
	if err == nil || !strings.Contains(err.Error(), `tools.yaml:2: name: the server already has a tool named "a"`) {
		t.Errorf("second Register: %v", err)
	}
	if err := Register(srv, &Config{Tools: []*Tool{{Name: "b", Argv: []string{"true"}}}}); err == nil {
		t.Error("Register of a Tool not from Load: no error")
	}
}
