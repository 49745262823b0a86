package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/internal/mcptest"
)

// binary is the mcptasks binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptasks-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "mcptasks")
	out, err := exec.Command("go", "build", "-race", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build mcptasks: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running mcptasks process.
type proc struct {
	cmd  *exec.Cmd
	url  string
	logs *bytes.Buffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs "mcptasks serve ARGS" on addr and waits until it answers.
func start(t *testing.T, addr string, args ...string) *proc {
	t.Helper()
	return startCmd(t, addr, exec.Command(binary, append([]string{"serve", "--listen", addr, "--log-level", "debug"}, args...)...))
}

// startCmd runs cmd, a serve on addr, and waits until it answers; it is
// killed when the test ends, and its log shown if the test failed.
func startCmd(t *testing.T, addr string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, url: "http://" + addr + "/mcp", logs: &bytes.Buffer{}}
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("server log:\n%s", p.logs)
		}
	})
	waitUp(t, addr, p.logs)
	return p
}

// waitUp waits until the server at addr answers /healthz, for at most 20
// s; then it fails t with the server's logs.
func waitUp(t *testing.T, addr string, logs *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v\n%s", err, logs)
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not open yet
	}
}

// rpc is a minimal 2026-07-28 requester for the tests.
type rpc struct {
	url   string
	token string
	tasks bool // declare the Tasks extension
}

type rpcError = mcptest.Error

// call sends one request and returns its result or error and the HTTP status.
func (c *rpc) call(t *testing.T, method string, params map[string]any) (map[string]any, *rpcError, int) {
	t.Helper()
	caps := map[string]any{"elicitation": map[string]any{}}
	if c.tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	r, err := (&mcptest.Client{URL: c.url, Capabilities: caps, Token: c.token}).Post(t.Context(), method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var res map[string]any
	if r.Result != nil {
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatalf("%s: HTTP %d, bad result %s: %v", method, r.Status, r.Result, err)
		}
	}
	return res, r.Error, r.Status
}

// mustCall is call that fails the test on a JSON-RPC error.
func (c *rpc) mustCall(t *testing.T, method string, params map[string]any) map[string]any {
	t.Helper()
	res, rerr, status := c.call(t, method, params)
	if rerr != nil {
		t.Fatalf("%s: HTTP %d, error %d %s", method, status, rerr.Code, rerr.Message)
	}
	return res
}

func (c *rpc) callTool(t *testing.T, name string, args map[string]any) map[string]any {
	t.Helper()
	return c.mustCall(t, "tools/call", map[string]any{"name": name, "arguments": args})
}

func (c *rpc) get(t *testing.T, id string) map[string]any {
	t.Helper()
	return c.mustCall(t, "tasks/get", map[string]any{"taskId": id})
}

// waitStatus polls tasks/get until the task has the status, for at most d.
func (c *rpc) waitStatus(t *testing.T, id, status string, d time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := c.get(t, id)
		if got["status"] == status {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: status %v after %s, want %s: %v", id, got["status"], d, status, got)
		}
		time.Sleep(50 * time.Millisecond) // the poll interval of this test client
	}
}

// confirm answers the question of a confirm_delete task, seen waiting
// with its inputRequests, with "yes".
func (c *rpc) confirm(t *testing.T, id string, waiting map[string]any) {
	t.Helper()
	var key string
	for k := range waiting["inputRequests"].(map[string]any) {
		key = k
	}
	c.mustCall(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}},
	}})
}

// TestCrashRecovery kills the server with SIGKILL while it holds a running
// task, a task waiting for input and a completed task, starts it again on
// the same SQLite file, and finds every task again: the same ids,
// createdAt and results; the running tasks re-run or fail per their tool's
// retry policy.
func TestCrashRecovery(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
	addr := freeAddr(t)
	args := []string{"--store", db, "--lease", "1s", "--demo-step", "30s"}
	p := start(t, addr, args...)
	c := &rpc{url: p.url, tasks: true}

	done := c.callTool(t, "slow_compute", map[string]any{"seconds": 0.1, "label": "done"})
	rerun := c.callTool(t, "slow_compute", map[string]any{"seconds": 3, "label": "rerun"})
	lost := c.callTool(t, "failing_job", map[string]any{}) // works one 30 s step; not re-runnable
	asks := c.callTool(t, "confirm_delete", map[string]any{"filename": "a.txt"})
	for _, r := range []map[string]any{done, rerun, lost, asks} {
		if r["resultType"] != "task" {
			t.Fatalf("tools/call: want a task, got %v", r)
		}
	}
	id := func(r map[string]any) string { return r["taskId"].(string) }
	completed := c.waitStatus(t, id(done), "completed", 10*time.Second)
	waiting := c.waitStatus(t, id(asks), "input_required", 10*time.Second)
	c.waitStatus(t, id(rerun), "working", time.Second)

	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	p2 := start(t, addr, args...)
	c.url = p2.url

	// Every task is there, unchanged where it had settled.
	for _, r := range []map[string]any{done, rerun, lost, asks} {
		got := c.get(t, id(r))
		if got["createdAt"] != r["createdAt"] {
			t.Errorf("task %s: createdAt %v after restart, was %v", id(r), got["createdAt"], r["createdAt"])
		}
	}
	if got := c.get(t, id(done)); !jsonEqual(got["result"], completed["result"]) || got["status"] != "completed" {
		t.Errorf("completed task after restart: %v, want result %v", got, completed["result"])
	}
	if got := c.get(t, id(asks)); got["status"] != "input_required" || !jsonEqual(got["inputRequests"], waiting["inputRequests"]) {
		t.Errorf("waiting task after restart: %v, want input_required with %v", got, waiting["inputRequests"])
	}

	// The re-runnable task is re-run after its lease expires and completes.
	got := c.waitStatus(t, id(rerun), "completed", 15*time.Second)
	if !strings.Contains(fmt.Sprint(got["result"]), "rerun") {
		t.Errorf("re-run task result: %v", got["result"])
	}
	// The other one fails, saying the worker was lost.
	got = c.waitStatus(t, id(lost), "failed", 15*time.Second)
	if msg := fmt.Sprint(got["error"]); !strings.Contains(msg, "worker") || !strings.Contains(msg, "lost") {
		t.Errorf("lost task error: %v", got["error"])
	}
	// The waiting task takes its answer on the new process.
	c.confirm(t, id(asks), waiting)
	got = c.waitStatus(t, id(asks), "completed", 10*time.Second)
	if !strings.Contains(fmt.Sprint(got["result"]), "Deleted a.txt") {
		t.Errorf("answered task result: %v", got["result"])
	}
}

// TestDrainOnSIGTERM checks that SIGTERM lets a running task finish and the
// process exit 0.
func TestDrainOnSIGTERM(t *testing.T) {
	addr := freeAddr(t)
	p := start(t, addr, "--store", "sqlite:"+filepath.Join(t.TempDir(), "tasks.db"), "--drain-timeout", "10s")
	c := &rpc{url: p.url, tasks: true}
	r := c.callTool(t, "slow_compute", map[string]any{"seconds": 1, "label": "drain"})
	// Wait until a worker runs it (its handler sets a status message).
	deadline := time.Now().Add(10 * time.Second)
	for c.get(t, r["taskId"].(string))["statusMessage"] == nil {
		if time.Now().After(deadline) {
			t.Fatal("no worker picked the task up")
		}
		time.Sleep(20 * time.Millisecond) // the poll interval of this test client
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !strings.Contains(p.logs.String(), `msg="task finished" task=`+r["taskId"].(string)) {
		t.Errorf("the running task did not finish before exit")
	}
}

// TestDrainOneDeadline: SIGTERM gives the HTTP requests and the tasks one
// --drain-timeout together. An inline call and a task that both outlast it
// are cut at the same deadline, not one after the other (the process took
// twice the timeout when the HTTP server drained first).
func TestDrainOneDeadline(t *testing.T) {
	const drain = 3 * time.Second
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.yaml")
	src := fmt.Sprintf(`tools:
  - name: inline_block
    argv: [sh, -c, 'touch "$0"; exec sleep 60', %q]
    task: never
  - name: task_block
    argv: [sh, -c, 'touch "$0"; exec sleep 60', %q]
    task: required
`, filepath.Join(dir, "inline.started"), filepath.Join(dir, "task.started"))
	if err := os.WriteFile(tools, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, freeAddr(t), "--store", "memory:", "--tools", tools, "--drain-timeout", drain.String())
	inline := &mcptest.Client{URL: p.url, Capabilities: map[string]any{}}
	go func() {
		_, _ = inline.Post(context.Background(), "tools/call", map[string]any{"name": "inline_block", "arguments": map[string]any{}})
	}()
	c := &rpc{url: p.url, tasks: true}
	taskID(t, c.callTool(t, "task_block", map[string]any{}))
	for _, marker := range []string{"inline.started", "task.started"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the command did not start", marker)
			}
			time.Sleep(20 * time.Millisecond) // polling a file the command makes
		}
	}
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	// One timeout and the exit's own work, well short of twice the
	// timeout: the drains one after the other (7 s when they were).
	if took := time.Since(signalled); took < drain || took > 2*drain-drain/6 {
		t.Errorf("exited %s after SIGTERM, want one --drain-timeout (%s)", took, drain)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestSQLiteServeAndWorker runs "serve --workers 0" and a "worker" process
// on one SQLite file: the server sees what the worker writes and the worker
// sees the answer the server stores. (How the server's read cache learns
// of another process's writes is tested in store/sqlite, on a fake clock.)
func TestSQLiteServeAndWorker(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
	srv := repServe(t, "serve", "--store", db, "--workers", "0", "--log-level", "debug")
	repWorker(t, "worker", "--store", db, "--lease", "3s", "--log-level", "debug")
	c := &rpc{url: srv.url, tasks: true}

	r := c.callTool(t, "confirm_delete", map[string]any{"filename": "b.txt"})
	id := r["taskId"].(string)
	waiting := c.waitStatus(t, id, "input_required", 10*time.Second)
	c.confirm(t, id, waiting)
	got := c.waitStatus(t, id, "completed", 10*time.Second)
	if !strings.Contains(fmt.Sprint(got["result"]), "Deleted b.txt") {
		t.Errorf("result: %v", got["result"])
	}
}

// TestPprofListener: --pprof-listen serves the runtime's profiles to
// loopback Host names only (not to a page that rebinds its own name), and
// not the command line, which may carry secrets.
func TestPprofListener(t *testing.T) {
	paddr := freeAddr(t)
	db := filepath.Join(t.TempDir(), "secret-marker.db")
	start(t, freeAddr(t), "--store", "sqlite:"+db, "--pprof-listen", paddr)
	get := func(path, host string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+paddr+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/debug/pprof/goroutine?debug=1", ""); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Errorf("goroutine profile: %d %.100q, want it", code, body)
	}
	if code, body := get("/debug/pprof/cmdline", ""); strings.Contains(body, "secret-marker") {
		t.Errorf("/debug/pprof/cmdline: %d %q, want no command line", code, body)
	}
	if code, _ := get("/debug/pprof/goroutine?debug=1", "rebound.example:6060"); code != http.StatusForbidden {
		t.Errorf("a profile under Host rebound.example: %d, want 403", code)
	}
}

// TestServeWarnsBeyondLoopback: serve on an address beyond loopback
// without --auth-tokens says at start that anyone who reaches it is the
// local principal; on loopback it does not. On 0.0.0.0, it logs its URL
// with 0.0.0.0.
func TestServeWarnsBeyondLoopback(t *testing.T) {
	const warning = "listening beyond loopback without --auth-tokens"
	_, port, _ := net.SplitHostPort(freeAddr(t))
	wide := start(t, "0.0.0.0:"+port, "--store", "memory:")
	local := start(t, freeAddr(t), "--store", "memory:")
	// Both logged at start, before they answered /healthz; their logs are
	// read once they have exited (the pipe's copy is then done).
	for _, p := range []*proc{wide, local} {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	}
	if !strings.Contains(wide.logs.String(), warning) {
		t.Errorf("serve on 0.0.0.0 without tokens did not warn:\n%s", wide.logs)
	}
	if strings.Contains(local.logs.String(), warning) {
		t.Errorf("serve on loopback warned:\n%s", local.logs)
	}
	// The address asked for, not the [::] the dual-stack socket reports.
	if want := "url=http://0.0.0.0:" + port + "/mcp"; !strings.Contains(wide.logs.String(), want) {
		t.Errorf("serve on 0.0.0.0 did not log %s:\n%s", want, wide.logs)
	}
}
