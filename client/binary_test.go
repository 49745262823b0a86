package client_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBinaryLifecycle runs one task lifecycle, input included, against the
// real mcptasks binary in a subprocess.
func TestBinaryLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the mcptasks binary")
	}
	url, logs := startBinary(t, "--demo-step", "20ms")
	ctx := testContext(t)
	journal := client.MemoryJournal()
	h := newAccept(func(string) map[string]any { return map[string]any{"confirm": true} })
	c := client.New(url, &client.Options{InputHandler: h, Journal: journal, MinPollInterval: 10 * time.Millisecond})
	d, err := c.Discover(ctx)
	if err != nil || d.Capabilities.Extensions[task.ExtensionID] == nil {
		t.Fatalf("discover: %+v, %v", d, err)
	}
	res, err := c.CallTool(ctx, "confirm_delete", map[string]any{"filename": "b.txt"})
	if err != nil || res.Task == nil {
		t.Fatalf("CallTool: %+v, %v", res, err)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if text(out) != "Deleted b.txt" || h.count("confirm-delete") != 1 {
		t.Errorf("result %q, handler calls %v", text(out), h.calls)
	}
	if e, ok, _ := journal.Load(context.Background(), url, res.Task.ID); !ok || e.Status != task.Completed {
		t.Errorf("journal: %+v", e)
	}
	if !strings.Contains(logs.String(), res.Task.ID) {
		t.Errorf("the server log does not mention task %s", res.Task.ID)
	}
}

// startBinary runs "mcptasks serve" with a memory store and args: the
// binary $MCPTASKS_TEST_BINARY if set (such as one built from another
// branch), else this repository's, built for the test. It returns the MCP
// endpoint and the server's log.
func startBinary(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	bin := os.Getenv("MCPTASKS_TEST_BINARY")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "mcptasks")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/mcptasks/mcptasks/cmd/mcptasks").CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/mcptasks: %v\n%s", err, out)
		}
	}
	// The binary needs a concrete port: take a free one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logs := &syncBuffer{}
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--store", "memory:", "--log-level", "debug"}, args...)...)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	ctx := testContext(t)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server did not come up: %v", err)
		case <-time.After(20 * time.Millisecond): // polling a port that is not open yet
		}
	}
	return "http://" + addr + "/mcp", logs
}

// methodCounter counts the requests a client sends, by Mcp-Method.
type methodCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *methodCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.n[req.Header.Get("Mcp-Method")]++
	m.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (m *methodCounter) count(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[method]
}

// TestBinaryPush: against a server that offers notifications/tasks, a
// wait follows export_report (statuses 300 ms apart, pollIntervalMs 1 s)
// through every status, its question answered, with one tasks/get after
// the subscription's acknowledgement and no polling.
func TestBinaryPush(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the mcptasks binary")
	}
	url, _ := startBinary(t, "--demo-step", "200ms")
	var clientLog syncBuffer
	reqs := &methodCounter{n: map[string]int{}}
	h := newAccept(func(string) map[string]any { return map[string]any{"overwrite": true} })
	c := client.New(url, &client.Options{
		InputHandler: h, HTTPClient: &http.Client{Transport: reqs},
		Logger: slog.New(slog.NewTextHandler(&clientLog, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	var log statusLog
	res, err := c.CallAndWait(testContext(t), "export_report", map[string]any{"rows": 7}, log.option())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(clientLog.String(), "subscribed to task notifications") {
		t.Fatalf("the wait did not subscribe to notifications/tasks; client log:\n%s", clientLog.String())
	}
	if text(res) != "Wrote 7 rows to report.csv" {
		t.Errorf("result %q", text(res))
	}
	var seen []string
	for _, st := range log.all {
		seen = append(seen, string(st.Status)+" "+st.StatusMessage)
	}
	// Every state the task went through, in order (the server may also
	// show one without a message between the answer and "Writing rows").
	want := []string{"working ", "working Querying rows", "input_required report.csv already exists. Overwrite it with 7 rows?", "working Writing rows", "completed "}
	rest := seen
	for _, w := range want {
		i := slices.Index(rest, w)
		if i < 0 {
			t.Fatalf("statuses seen:\n%q\nwant these among them, in order:\n%q", seen, want)
		}
		rest = rest[i+1:]
	}
	t.Logf("%d statuses seen with %d tasks/get", len(seen), reqs.count("tasks/get"))
	if n := reqs.count("tasks/get"); n > 1 {
		t.Errorf("%d tasks/get; want 1, after the acknowledgement", n)
	}

	// WaitAll: one subscription for all the tasks, one tasks/get each.
	ctx := testContext(t)
	var tasks []*client.Task
	for range 3 {
		res, err := c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 0.5})
		if err != nil || res.Task == nil {
			t.Fatalf("CallTool: %v %v", res, err)
		}
		tasks = append(tasks, res.Task)
	}
	listens, gets := reqs.count("subscriptions/listen"), reqs.count("tasks/get")
	for _, o := range c.WaitAll(ctx, tasks) {
		if o.Err != nil || o.Result == nil || o.Result.IsError {
			t.Errorf("task %d: %v %v", o.Index, o.Result, o.Err)
		}
	}
	if n := reqs.count("subscriptions/listen") - listens; n != 1 {
		t.Errorf("WaitAll of 3 tasks sent %d subscriptions/listen, want 1", n)
	}
	if n := reqs.count("tasks/get") - gets; n > 3 {
		t.Errorf("WaitAll of 3 tasks sent %d tasks/get, want at most 3", n)
	}
}
