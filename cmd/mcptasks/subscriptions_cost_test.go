package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSubscriptionCost measures what open task subscriptions cost a real
// "mcptasks serve" process (memory store): its goroutines and heap, read
// from its /metrics, before and after N subscriptions (each on one of 100
// tasks parked for input) are open; then how long it takes until every
// subscription has its completed notification once the 100 tasks are
// answered. The server is built without the race detector. It reports
// figures and asserts nothing about them; it runs only when asked:
//
//	MCPTASKS_SUBSCRIPTIONS=10000 go test ./cmd/mcptasks -run TestSubscriptionCost -v
func TestSubscriptionCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MCPTASKS_SUBSCRIPTIONS"))
	if n <= 0 {
		t.Skip("set MCPTASKS_SUBSCRIPTIONS=N to measure N open subscriptions")
	}
	const tasks = 100
	// A binary of its own, without the race detector of the other tests,
	// whose shadow memory would count in the figures.
	bin := filepath.Join(t.TempDir(), "mcptasks")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	s := repServeBin(t, bin, "S", "--store", "memory:", "--workers", "8", "--log-level", "warn",
		"--max-subscriptions", strconv.Itoa(n+1), "--max-subscribed-tasks", strconv.Itoa(n+1))
	c := newRepClient(s.url)
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = c.mustCreate(t, "confirm_delete", map[string]any{"filename": fmt.Sprintf("f%d", i)})
	}
	for _, id := range ids {
		c.waitStatus(t, id, "input_required", 30*time.Second)
	}
	before := serverMetrics(t, s.base)

	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableKeepAlives: true}
	hc := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var opened, completed atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64) // opening at most 64 at once
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		acked := make(chan struct{})
		go func() {
			defer wg.Done()
			err := holdListen(ctx, hc, s.url, i, ids[i%tasks], acked, &completed)
			if err != nil && ctx.Err() == nil {
				errs <- err
			}
		}()
		select {
		case <-acked:
			opened.Add(1)
		case err := <-errs:
			t.Fatalf("subscription %d: %v", i, err)
		}
		<-sem
	}
	openTime := time.Since(start)
	time.Sleep(2 * time.Second) // let the server's heap settle before reading it (a measurement, not a sync)
	after := serverMetrics(t, s.base)
	t.Logf("%d subscriptions opened in %s", opened.Load(), openTime.Round(time.Millisecond))
	for _, k := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_heap_sys_bytes", "go_memstats_alloc_bytes_total", "process_resident_memory_bytes"} {
		d := after[k] - before[k]
		t.Logf("%s: %.0f -> %.0f (+%.0f, %.1f per subscription)", k, before[k], after[k], d, d/float64(n))
	}

	// Answer every task: each subscription gets its notifications.
	answered := time.Now()
	for _, id := range ids {
		c.must(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
			"confirm-delete": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}},
		}})
	}
	deadline := time.Now().Add(2 * time.Minute)
	for completed.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling a counter against a deadline
	}
	t.Logf("completed notifications: %d of %d, the last %s after the first answer", completed.Load(), n, time.Since(answered).Round(time.Millisecond))
	cancel()
	wg.Wait()
}

// holdListen opens subscription i on id, closes acked after the
// acknowledgement, and counts a completed notification in done.
func holdListen(ctx context.Context, hc *http.Client, url string, i int, id string, acked chan struct{}, done *atomic.Int64) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "subscriptions/listen", "params": map[string]any{
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
		},
		"notifications": map[string]any{"taskIds": []string{id}},
	}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("HTTP %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		if first {
			first = false
			close(acked)
			continue
		}
		if strings.Contains(line, `"status":"completed"`) {
			done.Add(1)
		}
	}
	return sc.Err()
}

// serverMetrics reads the gauges of a server's /metrics.
func serverMetrics(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			v, err := strconv.ParseFloat(f[1], 64)
			if err == nil {
				m[f[0]] = v
			}
		}
	}
	return m
}
