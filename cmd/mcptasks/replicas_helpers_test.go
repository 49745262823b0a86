package main

// Helpers of the multi-replica tests (replicas_test.go): processes whose
// logs can be read while they run, a requester that returns errors instead
// of failing the test (so that it can be used from many goroutines), and
// direct reads of the shared Postgres table.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcptasks/mcptasks/internal/mcptest"
)

// repLogBuffer is a bytes.Buffer that a process writes while the test reads.
type repLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *repLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *repLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// repProc is a running mcptasks process: "serve" (url set) or "worker".
type repProc struct {
	name string
	cmd  *exec.Cmd
	url  string // http://ADDR/mcp; empty for a worker
	base string // http://ADDR; empty for a worker
	logs *repLogBuffer
	done chan struct{} // closed when the process has exited
}

// repServe runs "mcptasks serve" on a free address with args and waits
// until it answers /healthz.
func repServe(t *testing.T, name string, args ...string) *repProc {
	t.Helper()
	return repServeBin(t, binary, name, args...)
}

// repServeBin is repServe with the mcptasks binary bin.
func repServeBin(t *testing.T, bin, name string, args ...string) *repProc {
	t.Helper()
	return repServeAt(t, bin, name, freeAddr(t), args...)
}

// repServeAt is repServeBin on the address addr (to restart a replica
// where its clients look for it).
func repServeAt(t *testing.T, bin, name, addr string, args ...string) *repProc {
	t.Helper()
	r := repLaunch(t, bin, name, append([]string{"serve", "--listen", addr}, args...))
	r.base = "http://" + addr
	r.url = r.base + "/mcp"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(r.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return r
		}
		if !r.alive() || time.Now().After(deadline) {
			t.Fatalf("%s did not start: %v\n%s", name, err, repTail(r.logs.String(), 8000))
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not open yet
	}
}

// repWorker runs "mcptasks worker" with args and waits until it logs that
// it works.
func repWorker(t *testing.T, name string, args ...string) *repProc {
	t.Helper()
	r := repLaunch(t, binary, name, append([]string{"worker"}, args...))
	repWaitLog(t, r, regexp.MustCompile(`msg=working`), 30*time.Second)
	return r
}

func repLaunch(t *testing.T, bin, name string, args []string) *repProc {
	t.Helper()
	r := &repProc{name: name, logs: &repLogBuffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stderr = r.logs
	r.cmd.Stdout = r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		if r.alive() {
			_ = r.cmd.Process.Signal(syscall.SIGCONT) // in case a test left it stopped
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		logs := r.logs.String()
		if strings.Contains(logs, "WARNING: DATA RACE") {
			t.Errorf("%s: the race detector reported a data race:\n%s", name, repTail(logs, 20000))
		} else if t.Failed() {
			t.Logf("%s log (tail):\n%s", name, repTail(logs, 8000))
		}
	})
	return r
}

func (r *repProc) alive() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (r *repProc) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.done
}

func (r *repProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v: %v", r.name, sig, err)
	}
}

// readyz returns the HTTP status of /readyz and how long it took; 0 on a
// transport error.
func (r *repProc) readyz() (int, time.Duration) {
	start := time.Now()
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(r.base + "/readyz")
	if err != nil {
		return 0, time.Since(start)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// repWaitLog waits until r's log matches re and returns the match.
func repWaitLog(t *testing.T, r *repProc, re *regexp.Regexp, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if m := re.FindString(r.logs.String()); m != "" {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no log line matching %s after %s; log tail:\n%s", r.name, re, d, repTail(r.logs.String(), 8000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func repTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// repClient is a 2026-07-28 requester like rpc, but safe for concurrent use
// and returning errors, so that load goroutines can use it.
type repClient struct {
	url string
	hc  *http.Client
}

var repTransport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}

func newRepClient(url string) *repClient {
	return &repClient{url: url, hc: &http.Client{Transport: repTransport, Timeout: 30 * time.Second}}
}

// do sends one request. It returns the result or the JSON-RPC error; err is
// for transport failures and undecodable replies.
func (c *repClient) do(ctx context.Context, method string, params map[string]any) (map[string]any, *rpcError, error) {
	caps := map[string]any{
		"elicitation": map[string]any{},
		"extensions":  map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
	}
	r, err := (&mcptest.Client{URL: c.url, HTTP: c.hc, Capabilities: caps}).Post(ctx, method, params)
	if err != nil {
		return nil, nil, err
	}
	var res map[string]any
	if r.Result != nil {
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return nil, nil, fmt.Errorf("%s: HTTP %d, bad result %s: %v", method, r.Status, r.Result, err)
		}
	}
	return res, r.Error, nil
}

// call is do that turns a JSON-RPC error into an error.
func (c *repClient) call(method string, params map[string]any) (map[string]any, error) {
	res, rerr, err := c.do(context.Background(), method, params)
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, fmt.Errorf("%s: error %d %s", method, rerr.Code, rerr.Message)
	}
	return res, nil
}

func (c *repClient) must(t *testing.T, method string, params map[string]any) map[string]any {
	t.Helper()
	res, err := c.call(method, params)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// create calls a task-backed tool and returns the task id.
func (c *repClient) create(tool string, args map[string]any) (string, error) {
	res, err := c.call("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", err
	}
	if res["resultType"] != "task" {
		return "", fmt.Errorf("tools/call %s: want a task, got %v", tool, res)
	}
	id, _ := res["taskId"].(string)
	return id, nil
}

func (c *repClient) mustCreate(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	id, err := c.create(tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (c *repClient) get(id string) (map[string]any, error) {
	return c.call("tasks/get", map[string]any{"taskId": id})
}

func (c *repClient) mustGet(t *testing.T, id string) map[string]any {
	t.Helper()
	return c.must(t, "tasks/get", map[string]any{"taskId": id})
}

// waitFor polls tasks/get every poll until ok accepts the task, for at
// most d.
func (c *repClient) waitFor(t *testing.T, id string, d, poll time.Duration, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := c.mustGet(t, id)
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: not %s after %s: %v", id, what, d, got)
		}
		time.Sleep(poll)
	}
}

func (c *repClient) waitStatus(t *testing.T, id, status string, d time.Duration) map[string]any {
	t.Helper()
	return c.waitFor(t, id, d, 20*time.Millisecond, status, func(m map[string]any) bool { return m["status"] == status })
}

func repTerminal(status any) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// repResultText returns the text of a completed task's first content block.
func repResultText(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

// repOnlyKey returns the single key of a task's inputRequests.
func repOnlyKey(t *testing.T, m map[string]any) string {
	t.Helper()
	reqs, _ := m["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("want one input request, got %v", m["inputRequests"])
	}
	for k := range reqs {
		return k
	}
	return ""
}

// repLease is a task's lease as the shared table holds it.
type repLease struct {
	Status  string
	Attempt int
	Owner   string
}

// repDB connects to the test schema, for reading what no MCP method shows
// (attempts, repLease owners).
func repDB(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func repLeaseOf(t *testing.T, conn *pgx.Conn, id string) repLease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var l repLease
	err := conn.QueryRow(ctx, `SELECT status, attempt, lease_owner FROM mcptasks_tasks WHERE id = $1`, id).Scan(&l.Status, &l.Attempt, &l.Owner)
	if err != nil {
		t.Fatalf("read task %s: %v", id, err)
	}
	return l
}

// repLiveTasks counts the tasks that are not terminal.
func repLiveTasks(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM mcptasks_tasks WHERE status IN ('working', 'input_required')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// stats returns the median and maximum of ds.
func repStats(ds []time.Duration) (median, maxd time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2], s[len(s)-1]
}
