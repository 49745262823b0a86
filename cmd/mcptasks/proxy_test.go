package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"github.com/mcptasks/mcptasks/store/sqlite"
	"github.com/mcptasks/mcptasks/task"
)

// These tests put "mcptasks proxy" in front of a real upstream MCP server
// (internal/testupstream, built here) over stdio and over Streamable HTTP,
// and call it with a client that declares the Tasks extension and with one
// that does not.

// proxyTaskTools is the --task-tools of the shared checks: every tool of the
// upstream but quick_echo.
const proxyTaskTools = "slow_echo,ask_*,die,fail,rpc_error,measure"

// proxyTarget is a proxy in front of one upstream.
type proxyTarget struct {
	p        *proxyProc
	c        *rpc                 // declares the Tasks extension
	plain    *rpc                 // does not
	upLogs   *syncBuffer          // where the upstream's stderr goes
	name     string               // how the proxy's messages name the upstream
	mrtr     bool                 // questions come as input_required rounds (2026-07-28)
	upstream map[string]*mcp.Tool // the upstream's tools, listed directly
}

func TestProxy_Stdio(t *testing.T) {
	bin := buildUpstream(t)
	// "-page-size 1" is the upstream's own flag: it passes through, and
	// makes the proxy read one page per tool.
	p := startProxy(t, freeAddr(t), "--store", "memory:", "--task-tools", proxyTaskTools, "--upstream", bin, "-page-size", "1")
	tg := &proxyTarget{
		p: p, c: &rpc{url: p.url, tasks: true}, plain: &rpc{url: p.url},
		upLogs: p.logs, name: "testupstream", mrtr: true,
		upstream: upstreamTools(t, &mcp.CommandTransport{Command: exec.Command(bin)}),
	}
	checkProxy(t, tg)
	t.Run("die", func(t *testing.T) {
		checkDie(t, tg, `upstream testupstream exited with status 3 during tools/call "die"`)
	})
}

// TestProxy_StdioWrapperGroup: a stdio upstream behind a wrapper (as
// "npx -y …" or "sh -c" run one) leaves what it starts in its process
// group; once a call's session ends, nothing of that group outlives it,
// not even a child that ignores the end of its input (here a sleep that
// each session starts in the background).
func TestProxy_StdioWrapperGroup(t *testing.T) {
	bin := buildUpstream(t)
	pids := filepath.Join(t.TempDir(), "pids")
	wrapper := fmt.Sprintf(`sleep 300 & echo $! >> %s; exec %s`, shellQuote(pids), shellQuote(bin))
	p := startProxy(t, freeAddr(t), "--store", "memory:", "--task-tools", "slow_echo", "--upstream", "--", "sh", "-c", wrapper)
	c := &rpc{url: p.url, tasks: true}
	id := taskID(t, c.callTool(t, "slow_echo", map[string]any{"text": "wrapped", "seconds": 0.01}))
	c.waitStatus(t, id, "completed", proxyWait)
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Fields(string(b))
	if len(started) < 2 { // the session that listed the tools, and the call's
		t.Fatalf("sessions started %d sleeps: %v", len(started), started)
	}
	for _, s := range started {
		pid, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		// The call's session has ended once its result is stored; its
		// sleep was killed then, but is reaped by init a moment later.
		deadline := time.Now().Add(proxyWait)
		for syscall.Kill(pid, 0) == nil && !zombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d, started in an upstream session's group, outlived the session", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestProxy_StdioConnectFails: a call whose stdio upstream does not
// finish connecting within --upstream-timeout fails, and nothing of the
// upstream's process group outlives it (go-sdk ends the process it
// started, not what that started: here a wrapper's background sleep).
func TestProxy_StdioConnectFails(t *testing.T) {
	bin := buildUpstream(t)
	dir := t.TempDir()
	pids, count := filepath.Join(dir, "pids"), filepath.Join(dir, "count")
	// The first session (the proxy's listing) connects; later ones hang
	// before the upstream starts.
	wrapper := fmt.Sprintf(`sleep 300 & echo $! >> %[1]s; echo x >> %[2]s; [ "$(wc -l < %[2]s)" -gt 1 ] && sleep 300; exec %[3]s`,
		shellQuote(pids), shellQuote(count), shellQuote(bin))
	p := startProxy(t, freeAddr(t), "--store", "memory:", "--task-tools", "slow_echo", "--upstream-timeout", "1s", "--upstream", "--", "sh", "-c", wrapper)
	c := &rpc{url: p.url, tasks: true}
	id := taskID(t, c.callTool(t, "slow_echo", map[string]any{"text": "x", "seconds": 0.01}))
	c.waitStatus(t, id, "failed", proxyWait)
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Fields(string(b))
	if len(started) != 2 {
		t.Fatalf("sessions started %d sleeps: %v; want the listing's and the call's", len(started), started)
	}
	pid, err := strconv.Atoi(started[1])
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(proxyWait); syscall.Kill(pid, 0) == nil && !zombie(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d, started in the group of an upstream that failed to connect, outlived the call", pid)
		}
	}
}

// TestProxy_StdioCancelReachesUpstream: a cancelled call's stdio upstream
// is told (notifications/cancelled) before its input is closed, so that
// an upstream that finishes its requests when its input ends (mcptasks
// serve --stdio does) stops at once rather than when it is killed after
// --upstream-terminate-timeout.
func TestProxy_StdioCancelReachesUpstream(t *testing.T) {
	dir := t.TempDir()
	pids, started, tools := filepath.Join(dir, "pids"), filepath.Join(dir, "started"), filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(tools, []byte(fmt.Sprintf(`tools:
  - name: wait_long
    task: never
    argv: [sh, -c, 'echo x > %s; exec sleep 60']
    grace: 0s
`, started)), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf(`echo $$ >> %s; exec %s serve --stdio --store memory: --tools %s`, shellQuote(pids), shellQuote(binary), shellQuote(tools))
	p := startProxy(t, freeAddr(t), "--store", "memory:", "--task-tools", "wait_long", "--upstream-terminate-timeout", "30s",
		"--upstream", "--", "sh", "-c", wrapper)
	c := &rpc{url: p.url, tasks: true}
	id := taskID(t, c.callTool(t, "wait_long", map[string]any{}))
	for deadline := time.Now().Add(proxyWait); ; time.Sleep(10 * time.Millisecond) { // the call runs upstream
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call did not reach the upstream")
		}
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 { // the listing's session, and the call's
		t.Fatalf("upstream sessions %v; want two", f)
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	cancelled := time.Now()
	c.mustCall(t, "tasks/cancel", map[string]any{"taskId": id})
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Since(cancelled) > 10*time.Second {
			t.Fatalf("the cancelled call's upstream still runs after %v; want it told, not killed after the 30s terminate timeout", time.Since(cancelled))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// zombie reports whether pid is a process that has exited and waits to
// be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

// TestProxy_UpstreamTimeout checks --upstream-timeout with an upstream
// that does not answer within it: the task fails, naming the upstream and
// the timeout.
func TestProxy_UpstreamTimeout(t *testing.T) {
	bin := buildUpstream(t)
	p := startProxy(t, freeAddr(t), "--store", "memory:", "--upstream-timeout", "1s", "--upstream", bin)
	c := &rpc{url: p.url, tasks: true}
	id := taskID(t, c.callTool(t, "slow_echo", map[string]any{"text": "late", "seconds": 600}))
	got := c.waitStatus(t, id, "failed", proxyWait)
	checkError(t, got, `upstream testupstream did not finish answering tools/call "slow_echo" within 1s (the upstream timeout)`)
}

// TestProxy_StdioProtocol20251125 talks 2025-11-25 to the upstream: its
// questions come as elicitation/create requests, one at a time.
func TestProxy_StdioProtocol20251125(t *testing.T) {
	bin := buildUpstream(t)
	p := startProxy(t, freeAddr(t), "--store", "memory:", "--task-tools", proxyTaskTools,
		"--upstream-protocol-version", "2025-11-25", "--upstream", "--", bin)
	p.logs.waitFor(t, "proxy", "protocolVersion=2025-11-25")
	tg := &proxyTarget{
		p: p, c: &rpc{url: p.url, tasks: true}, plain: &rpc{url: p.url},
		upLogs: p.logs, name: "testupstream", mrtr: false,
		upstream: upstreamTools(t, &mcp.CommandTransport{Command: exec.Command(bin)}),
	}
	checkProxy(t, tg)
}

// TestProxy_HTTP runs the checks on a stateless upstream (2026-07-28,
// questions as input_required rounds) and a stateful one (2025-11-25,
// elicitation/create requests on the session's SSE stream).
func TestProxy_HTTP(t *testing.T) {
	bin := buildUpstream(t)
	for _, stateless := range []bool{true, false} {
		t.Run(map[bool]string{true: "stateless", false: "stateful"}[stateless], func(t *testing.T) {
			up, url := startUpstreamHTTP(t, bin, stateless)
			p := startProxy(t, freeAddr(t), "--store", "memory:", "--task-tools", proxyTaskTools, "--upstream-url", url)
			tg := &proxyTarget{
				p: p, c: &rpc{url: p.url, tasks: true}, plain: &rpc{url: p.url},
				upLogs: up.logs, name: url, mrtr: stateless,
				upstream: upstreamTools(t, &mcp.StreamableClientTransport{Endpoint: url}),
			}
			checkProxy(t, tg)
			t.Run("die", func(t *testing.T) {
				checkDie(t, tg, "upstream "+url+` closed the connection during tools/call "die"`)
				<-up.done
			})
			t.Run("gone", func(t *testing.T) {
				id := taskID(t, tg.c.callTool(t, "slow_echo", map[string]any{"text": "gone"}))
				got := tg.c.waitStatus(t, id, "failed", proxyWait)
				checkError(t, got, "upstream "+url+": cannot connect:", "connection refused")
			})
		})
	}
}

// checkProxy runs the checks every upstream passes.
func checkProxy(t *testing.T, tg *proxyTarget) {
	t.Run("tools", func(t *testing.T) {
		res := tg.c.mustCall(t, "tools/list", nil)
		items, _ := res["tools"].([]any)
		var names []string
		for _, it := range items {
			tl, _ := it.(map[string]any)
			name, _ := tl["name"].(string)
			names = append(names, name)
			u := tg.upstream[name]
			if u == nil {
				t.Errorf("the proxy serves %q, which the upstream does not have", name)
				continue
			}
			if tl["description"] != u.Description || !jsonEqual(tl["inputSchema"], u.InputSchema) {
				t.Errorf("tool %s: served %v %v, the upstream has %q %v", name, tl["description"], tl["inputSchema"], u.Description, u.InputSchema)
			}
		}
		if len(names) != len(tg.upstream) || len(names) != 9 {
			t.Errorf("the proxy serves %v; the upstream has %d tools", names, len(tg.upstream))
		}
		if slices.Contains(names, "serverinfo_echo") || slices.Contains(names, "export_report") {
			t.Errorf("the proxy serves built-in tools: %v", names)
		}
	})

	t.Run("task", func(t *testing.T) {
		id := taskID(t, tg.c.callTool(t, "slow_echo", map[string]any{"text": "slow", "seconds": 0.2}))
		got := tg.c.waitStatus(t, id, "completed", proxyWait)
		res, _ := got["result"].(map[string]any)
		if texts := contentTexts(res); !slices.Equal(texts, []string{"slow"}) || res["isError"] != nil {
			t.Errorf("result %v, want the upstream's text", got["result"])
		}
	})

	t.Run("question", func(t *testing.T) {
		id := taskID(t, tg.c.callTool(t, "ask_name", map[string]any{}))
		got := tg.c.waitStatus(t, id, "input_required", proxyWait)
		reqs, _ := got["inputRequests"].(map[string]any)
		q, _ := reqs["upstream-1"].(map[string]any)
		params, _ := q["params"].(map[string]any)
		if len(reqs) != 1 || q["method"] != "elicitation/create" || params["message"] != "What is your name?" {
			t.Fatalf("inputRequests %v, want the upstream's question under upstream-1", got["inputRequests"])
		}
		tg.c.mustCall(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
			"upstream-1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		}})
		got = tg.c.waitStatus(t, id, "completed", proxyWait)
		if texts := contentTexts(got["result"]); !slices.Equal(texts, []string{"Hello, Ada!"}) {
			t.Errorf("result %v, want the answer in it", got["result"])
		}
	})

	t.Run("two questions", func(t *testing.T) {
		id := taskID(t, tg.c.callTool(t, "ask_two", map[string]any{}))
		answer := map[string]any{
			"What is your name?":             map[string]any{"name": "Ada"},
			"What is your favourite colour?": map[string]any{"colour": "green"},
		}
		asked := map[string]string{}
		got := tg.c.waitFor(t, id, "completion", proxyWait, func(got map[string]any) bool {
			if got["status"] != "input_required" {
				return got["status"] != "working"
			}
			reqs, _ := got["inputRequests"].(map[string]any)
			if tg.mrtr && len(reqs) != 2 {
				t.Fatalf("inputRequests %v: want both questions of the round at once", reqs)
			}
			resp := map[string]any{}
			for k, v := range reqs {
				msg := fmt.Sprint(v.(map[string]any)["params"].(map[string]any)["message"])
				asked[k] = msg
				resp[k] = map[string]any{"action": "accept", "content": answer[msg]}
			}
			tg.c.mustCall(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": resp})
			return false
		})
		if got["status"] != "completed" || !slices.Equal(contentTexts(got["result"]), []string{"Ada likes green"}) {
			t.Errorf("task %v, want completed with both answers", got)
		}
		if len(asked) != 2 || asked["upstream-1"] == "" || asked["upstream-2"] == "" {
			t.Errorf("asked %v, want keys upstream-1 and upstream-2", asked)
		}
		if tg.mrtr && asked["upstream-1"] != "What is your name?" {
			t.Errorf("asked %v: the questions of a round are numbered in the order of the upstream's ids", asked)
		}
	})

	t.Run("tool error", func(t *testing.T) {
		id := taskID(t, tg.c.callTool(t, "fail", map[string]any{}))
		got := tg.c.waitStatus(t, id, "completed", proxyWait)
		res, _ := got["result"].(map[string]any)
		if res["isError"] != true || !slices.Equal(contentTexts(res), []string{"fail: something broke"}) {
			t.Errorf("result %v, want the upstream's tool error", got["result"])
		}
	})

	if !tg.mrtr { // input_required rounds are never withdrawn: only elicitation/create, before 2026-07-28
		t.Run("question withdrawn", func(t *testing.T) {
			// The upstream asks, gives up waiting and returns: the task ends
			// with its result, though its question was never answered (the
			// upstream says so only once its question has failed).
			id := taskID(t, tg.c.callTool(t, "ask_briefly", map[string]any{"seconds": 1}))
			got := tg.c.waitStatus(t, id, "completed", proxyWait)
			res, _ := got["result"].(map[string]any)
			if !slices.Equal(contentTexts(res), []string{"No answer in time"}) {
				t.Errorf("result %v, want the upstream's", got["result"])
			}
		})
	}

	t.Run("structured output", func(t *testing.T) {
		// The upstream tool declares an output schema: its structuredContent
		// comes through, as a task's result and at once.
		id := taskID(t, tg.c.callTool(t, "measure", map[string]any{"text": "four"}))
		got := tg.c.waitStatus(t, id, "completed", proxyWait)
		res, _ := got["result"].(map[string]any)
		if sc, _ := res["structuredContent"].(map[string]any); sc["length"] != 4.0 || res["isError"] == true {
			t.Errorf("result %v, want the upstream's structuredContent {length: 4}", got["result"])
		}
		res = tg.plain.callTool(t, "measure", map[string]any{"text": "three"})
		if sc, _ := res["structuredContent"].(map[string]any); sc["length"] != 5.0 {
			t.Errorf("synchronous result %v, want the upstream's structuredContent {length: 5}", res)
		}
	})

	t.Run("protocol error", func(t *testing.T) {
		id := taskID(t, tg.c.callTool(t, "rpc_error", map[string]any{}))
		got := tg.c.waitStatus(t, id, "failed", proxyWait)
		checkError(t, got, "upstream "+tg.name+` returned error -32000 for tools/call "rpc_error": the database is locked`)
	})

	t.Run("synchronous", func(t *testing.T) {
		res := tg.plain.callTool(t, "slow_echo", map[string]any{"text": "sync", "seconds": 0.1})
		if res["resultType"] == "task" || !slices.Equal(contentTexts(res), []string{"sync"}) {
			t.Errorf("result %v, want the upstream's result at once", res)
		}
		res = tg.plain.callTool(t, "ask_name", map[string]any{})
		if !slices.Equal(contentTexts(res), []string{"No name given (decline)"}) {
			t.Errorf("result %v, want the upstream's question declined", res)
		}
	})

	t.Run("not selected", func(t *testing.T) {
		res := tg.c.callTool(t, "quick_echo", map[string]any{"text": "quick"})
		if res["resultType"] == "task" || !slices.Equal(contentTexts(res), []string{"quick"}) {
			t.Errorf("result %v, want a synchronous result for a tool --task-tools leaves out", res)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		label := "cancel-" + strings.ReplaceAll(t.Name(), "/", "-")
		id := taskID(t, tg.c.callTool(t, "slow_echo", map[string]any{"text": label, "seconds": 60}))
		tg.upLogs.waitFor(t, "the upstream", "slow_echo: start "+label)
		tg.c.mustCall(t, "tasks/cancel", map[string]any{"taskId": id})
		tg.c.waitStatus(t, id, "cancelled", proxyWait)
		tg.upLogs.waitFor(t, "the upstream", "slow_echo: cancelled "+label)
	})
}

// checkDie calls the tool that makes the upstream exit mid-call.
func checkDie(t *testing.T, tg *proxyTarget, want string) {
	t.Helper()
	id := taskID(t, tg.c.callTool(t, "die", map[string]any{}))
	got := tg.c.waitStatus(t, id, "failed", proxyWait)
	checkError(t, got, want)
}

// checkError checks that a failed task carries a -32603 error whose
// message holds every one of wants.
func checkError(t *testing.T, got map[string]any, wants ...string) {
	t.Helper()
	e, _ := got["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if code, _ := e["code"].(float64); code != -32603 {
		t.Errorf("error %v, want code -32603", got["error"])
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("error message %q, want it to say %q", msg, w)
		}
	}
	if got["statusMessage"] != msg {
		t.Errorf("statusMessage %q, want the error's message", got["statusMessage"])
	}
}

// TestProxy_LostWorker kills the proxy with SIGKILL while a task's
// upstream call runs: by default the task fails when the next process
// finds it; with --rerun the next process calls the upstream again.
func TestProxy_LostWorker(t *testing.T) {
	bin := buildUpstream(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
	addr := freeAddr(t)
	for _, rerun := range []bool{false, true} {
		args := []string{"--store", db, "--lease", "1s"}
		if rerun {
			args = append(args, "--rerun")
		}
		args = append(args, "--upstream", bin)
		p := startProxy(t, addr, args...)
		c := &rpc{url: p.url, tasks: true}
		label := fmt.Sprintf("rerun=%v", rerun)
		id := taskID(t, c.callTool(t, "slow_echo", map[string]any{"text": label, "seconds": 1}))
		p.logs.waitFor(t, "the upstream", "slow_echo: start "+label)
		p.kill()

		p2 := startProxy(t, addr, args...)
		if !rerun {
			got := c.waitStatus(t, id, "failed", proxyWait)
			if msg := fmt.Sprint(got["error"]); !strings.Contains(msg, "worker") || !strings.Contains(msg, "lost") {
				t.Errorf("error %v, want the lost worker named", got["error"])
			}
			if strings.Contains(p2.logs.String(), "slow_echo: start "+label) {
				t.Error("the upstream was called again without --rerun")
			}
		} else {
			got := c.waitStatus(t, id, "completed", proxyWait)
			if !slices.Equal(contentTexts(got["result"]), []string{label}) {
				t.Errorf("result %v", got["result"])
			}
			if !strings.Contains(p2.logs.String(), "slow_echo: start "+label) {
				t.Error("the next process did not call the upstream again")
			}
		}
		p2.kill()
		if rerun { // the re-run said that it called the upstream again
			st, err := sqlite.Open(t.Context(), strings.TrimPrefix(db, "sqlite:"), nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := st.Get(t.Context(), id)
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(r.History, func(e task.HistoryEvent) bool {
				return e.Kind == task.HistoryStatus && e.Message == "Calling slow_echo on testupstream again (attempt 2)"
			}) {
				t.Errorf("history %+v; want the re-run's status saying it calls the upstream again", r.History)
			}
		}
	}
}

func TestProxy_Help(t *testing.T) {
	cmd := newProxyCmd()
	if cmd.Short == "" || cmd.Long == "" || cmd.Example == "" {
		t.Error("proxy: no Short, Long or Example help")
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if strings.TrimSpace(f.Usage) == "" {
			t.Errorf("proxy --%s has no help", f.Name)
		}
	})
	// serve's runtime flags, reused.
	for _, name := range []string{"listen", "store", "workers", "lease", "drain-timeout", "auth-tokens", "log-level", "max-body-bytes",
		"upstream", "upstream-url", "task-tools", "task-mode", "rerun"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("proxy has no --%s", name)
		}
	}
	for _, name := range []string{"tools", "demo-step"} {
		if f := cmd.Flags().Lookup(name); f != nil && !f.Hidden {
			t.Errorf("proxy shows serve's --%s", name)
		}
	}
	// The default as the README gives it and as one types it, not pflag's [*].
	if usage := cmd.Flags().FlagUsages(); !strings.Contains(usage, `"" for none (default *)`) {
		t.Errorf("--task-tools: want (default *) in\n%s", usage)
	}
	// An example that gives the upstream a credential and listens beyond
	// loopback protects the port with --auth-tokens.
	for line := range strings.Lines(cmd.Example) {
		if strings.Contains(line, "--upstream-header") && !strings.Contains(line, "--listen 127.0.0.1") && !strings.Contains(line, "--auth-tokens") {
			t.Errorf("example hands the upstream's credential to anyone who reaches the port: %s", line)
		}
	}
}

// TestProxy_ListensFirst: proxy listens (and reads its files) before it
// contacts its upstream: with --listen's port in use, or an --auth-tokens
// file missing, it fails at once and the upstream sees no request (before,
// it listed the upstream's tools, which may mean waiting up to
// --upstream-start-timeout for a first "npx -y").
func TestProxy_ListensFirst(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "not an MCP server", http.StatusTeapot)
	}))
	defer up.Close()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"PortInUse", []string{"--listen", busy.Addr().String()}, "--listen: listen tcp " + busy.Addr().String() + ": bind: address already in use"},
		{"NoAuthTokensFile", []string{"--listen", "127.0.0.1:0", "--auth-tokens", filepath.Join(t.TempDir(), "missing")}, "--auth-tokens: open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"proxy", "--store", "memory:"}, tt.args...)
			out, err := exec.CommandContext(t.Context(), binary, append(args, "--upstream-url", up.URL+"/mcp")...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tt.want) {
				t.Errorf("proxy %q: %v\n%s\nwant an error saying %q", tt.args, err, out, tt.want)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the upstream got %d requests before proxy failed", n)
			}
		})
	}
}

func TestProxy_UpstreamHeader(t *testing.T) {
	var got http.Header
	hs := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer hs.Close()
	rt := &headerTransport{h: http.Header{"Authorization": {"Bearer s3cret"}}, scheme: "http", host: strings.TrimPrefix(hs.URL, "http://"), rt: http.DefaultTransport}
	req, _ := http.NewRequest("GET", hs.URL, nil)
	req.Header.Set("Authorization", "Bearer other")
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got.Get("Authorization") != "Bearer s3cret" || req.Header.Get("Authorization") != "Bearer other" {
		t.Errorf("upstream got %v; the request was changed to %v", got, req.Header)
	}
}

func TestProxy_Usage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "no upstream"},
		{[]string{"--upstream"}, "give the upstream command after it"},
		{[]string{"--upstream-url", "http://127.0.0.1:1/mcp", "--upstream", "x"}, "not both"},
		{[]string{"x"}, "put --upstream before the upstream command"},
		{[]string{"--upstream-url", "ftp://x/mcp"}, "want http://"},
		{[]string{"--task-mode", "always", "--upstream", "x"}, `--task-mode "always"`},
		{[]string{"--upstream-header", "nocolon", "--upstream-url", "http://127.0.0.1:1/mcp"}, "want \"NAME: VALUE\""},
		{[]string{"--upstream", "/nonexistent/mcp-server"}, "upstream mcp-server"},
		{[]string{"--upstream-url", "http://127.0.0.1:1/mcp"}, "connection refused"},
		{[]string{"--poll-interval", "0s", "--upstream-url", "http://127.0.0.1:1/mcp"}, "--poll-interval must be positive, got 0s"},
		// An upstream that never answers initialize.
		{[]string{"--upstream-start-timeout", "1s", "--upstream-terminate-timeout", "100ms", "--upstream", "sleep", "60"}, "no answer within 1s at start-up (--upstream-start-timeout)"},
		{[]string{"--upstream-start-timeout", "0s", "--upstream", "x"}, "--upstream-start-timeout must be positive, got 0s"},
		// serve's flags are checked before the upstream is reached.
		{[]string{"--max-body-bytes", "0", "--upstream-url", "http://127.0.0.1:1/mcp"}, "--max-body-bytes must be positive"},
	} {
		out, err := exec.Command(binary, append([]string{"proxy", "--store", "memory:", "--listen", "127.0.0.1:0"}, tt.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("proxy %q: %v\n%s\nwant an error saying %q", tt.args, err, out, tt.want)
		}
	}
}

// TestHeaderTransport: --upstream-header headers go to the upstream's host
// only, not to another that a redirect names.
func TestHeaderTransport(t *testing.T) {
	var got http.Header
	rt := &headerTransport{h: http.Header{"Authorization": {"Bearer secret"}}, scheme: "https", host: "up.example:9000",
		rt: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			got = r.Header
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
		})}
	for _, c := range []struct {
		url  string
		want string
	}{
		{"https://up.example:9000/mcp", "Bearer secret"},
		{"https://elsewhere.example/mcp", ""},
		{"https://up.example/mcp", ""},     // another port: another server
		{"http://up.example:9000/mcp", ""}, // a redirect to plain http: not in the clear
	} {
		req, _ := http.NewRequest("POST", c.url, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if a := got.Get("Authorization"); a != c.want {
			t.Errorf("%s: Authorization %q, want %q", c.url, a, c.want)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
