package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/task"
)

// TestReplicasListen subscribes on replica A, which runs no tools, to a
// task created on replica B, which runs it: the subscription acknowledges
// the task, then sees it go through input_required and, after an answer
// given on B, completed with the result, each notification within a
// second of the change it reports (its lastUpdatedAt, written on B), and
// ends with the listen's response. The changes reach A only through
// Postgres LISTEN/NOTIFY.
func TestReplicasListen(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := repServe(t, "A", "--store", dsn, "--workers", "0")
	b := repServe(t, "B", "--store", dsn, "--workers", "4", "--demo-step", "300ms")
	cb := newRepClient(b.url)
	const bound = time.Second

	id := cb.mustCreate(t, "export_report", map[string]any{"rows": 7})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen", "params": map[string]any{
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
		},
		"notifications": map[string]any{"taskIds": []string{id}},
	}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("listen on A: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	next := func() map[string]any {
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatalf("bad message %q: %v", data, err)
				}
				return m
			}
		}
		t.Fatalf("the stream ended: %v\nA:\n%s", sc.Err(), repTail(a.logs.String(), 4000))
		return nil
	}

	ack := next()
	params, _ := ack["params"].(map[string]any)
	if ack["method"] != "notifications/subscriptions/acknowledged" || !strings.Contains(mustJSON(t, params["notifications"]), id) {
		t.Fatalf("first message: want the acknowledgement of %s, got %v", id, ack)
	}
	// A says that its change feed is up and that one subscription is open.
	if m := serverMetrics(t, a.base); m["mcptasks_change_feed_up"] != 1 || m["mcptasks_task_subscriptions"] != 1 {
		t.Errorf("A's /metrics: mcptasks_change_feed_up %v, mcptasks_task_subscriptions %v; want 1 and 1", m["mcptasks_change_feed_up"], m["mcptasks_task_subscriptions"])
	}
	var seen []string
	answered := false
	for {
		m := next()
		got := time.Now()
		if m["method"] != "notifications/tasks" {
			if _, ok := m["result"]; ok && answered {
				break // the listen's response: every task is terminal
			}
			t.Fatalf("want notifications/tasks, got %v", m)
		}
		p, _ := m["params"].(map[string]any)
		meta, _ := p["_meta"].(map[string]any)
		if meta["io.modelcontextprotocol/subscriptionId"] != "sub" || p["taskId"] != id {
			t.Fatalf("notification without the subscription id or of another task: %v", m)
		}
		at, err := time.Parse(task.TimeFormat, p["lastUpdatedAt"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if lat := got.Sub(at); lat > bound {
			t.Errorf("notification of %v on A came %s after the change on B; want within %s", p["status"], lat, bound)
		}
		status, _ := p["status"].(string)
		seen = append(seen, status)
		switch status {
		case "input_required":
			if answered {
				t.Fatalf("input_required again after the answer: %v", seen)
			}
			key := repOnlyKey(t, p)
			cb.must(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
				key: map[string]any{"action": "accept", "content": map[string]any{"overwrite": true}},
			}})
			answered = true
		case "completed":
			if !answered || repResultText(p) != "Wrote 7 rows to report.csv" {
				t.Fatalf("completed without the answer or with another result: %v", p)
			}
		}
	}
	if !answered || seen[len(seen)-1] != "completed" {
		t.Fatalf("statuses seen on A: %v; want input_required, then completed", seen)
	}
	t.Logf("statuses seen on A: %v", seen)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
