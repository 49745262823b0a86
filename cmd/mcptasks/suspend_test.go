package main

import (
	"bufio"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// metricSum fetches addr's /metrics and returns the sum of the samples of
// the lines that start with prefix.
func metricSum(t *testing.T, addr, prefix string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestSuspendedRestartAndDrain: tasks that wait for input are suspended
// (--suspend-after 0); SIGTERM then drains in under a second however many
// wait, a process started beside them claims none of them, heartbeats
// nothing and keeps few goroutines, and the answer to one resumes it.
func TestSuspendedRestartAndDrain(t *testing.T) {
	const n = 200
	// The race detector's runtime sleeps a second before exiting, unless
	// told not to: that second is not the drain's.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	db := "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
	addr := freeAddr(t)
	args := []string{"--store", db, "--suspend-after", "0", "--log-level", "info"}
	p := start(t, addr, args...)
	c := &rpc{url: p.url, tasks: true}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = c.callTool(t, "confirm_delete", map[string]any{"filename": "f" + strconv.Itoa(i)})["taskId"].(string)
	}
	// Every task asked: with --suspend-after 0, the write that stored its
	// question (the create's own, or one of its own) suspended it.
	for _, id := range ids {
		c.waitStatus(t, id, "input_required", 30*time.Second)
	}
	start1 := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if took := time.Since(start1); took >= time.Second {
		t.Errorf("drained in %v (SIGTERM at %s) beside %d suspended tasks, want under a second", took, start1.UTC().Format("15:04:05.000"), n)
	}

	q := start(t, addr, args...)
	c = &rpc{url: q.url, tasks: true}
	// Over three claim rounds and more, nothing of them is claimed or
	// heartbeated: the count of claim calls shows the rounds ran.
	deadline := time.Now().Add(30 * time.Second)
	for metricSum(t, addr, `mcptasks_store_op_duration_seconds_count{op="claim"}`) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the new process made fewer than 3 claim calls in 30 s")
		}
		time.Sleep(100 * time.Millisecond) // polling /metrics against the deadline
	}
	for _, m := range []string{"mcptasks_tasks_claimed_total", `mcptasks_store_op_duration_seconds_count{op="heartbeat"}`} {
		if v := metricSum(t, addr, m); v != 0 {
			t.Errorf("%s = %v beside suspended tasks, want 0", m, v)
		}
	}
	if g := metricSum(t, addr, "go_goroutines "); g > 100 {
		t.Errorf("%v goroutines beside %d suspended tasks", g, n)
	}
	waiting := c.waitStatus(t, ids[n/2], "input_required", time.Second)
	c.confirm(t, ids[n/2], waiting)
	c.waitStatus(t, ids[n/2], "completed", 10*time.Second)
	if got := c.get(t, ids[0]); got["status"] != "input_required" {
		t.Errorf("an unanswered task is %v", got["status"])
	}
}
