package main

import (
	"context"
	"encoding/json"
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

// TestMain_Lines keeps the example's promise: its main is under 60 lines.
func TestMain_Lines(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "\nfunc main() {\n")
	body, _, _ = strings.Cut(body, "\n}\n")
	if n := strings.Count(body, "\n") + 1; n >= 60 {
		t.Errorf("main is %d lines, want under 60", n)
	}
}

// TestRenderVideo builds the example and drives it as a client would: the
// plain tool answers inline; render_video becomes a task that asks its
// question, reports its frames and ends with the file; a second one is
// cancelled while it renders; a third waits for its answer across a
// SIGTERM and a restart on the same SQLite file, and then completes.
func TestRenderVideo(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "render_video")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "render.db")
	ctx := t.Context()
	srv := startServer(t, bin, db)
	c := &mcptest.Client{URL: srv.url + "/mcp", Capabilities: mcptest.Caps(true, true)}

	pong, err := c.Call(ctx, "tools/call", map[string]any{"name": "ping", "arguments": map[string]any{}})
	if err != nil || !strings.Contains(toJSON(pong["content"]), "pong") {
		t.Fatalf("ping: %v %v", pong, err)
	}

	// A render, answered yes: progress, then the file.
	id := create(t, c, "intro", 3)
	answer(t, c, waitFor(t, c, id, "input_required", ""), true)
	waitFor(t, c, id, "working", "Rendering ")
	done := waitFor(t, c, id, "completed", "")
	if got := toJSON(done["result"]); !strings.Contains(got, `"structuredContent":{"file":"intro.mp4"}`) {
		t.Errorf("result = %s, want intro.mp4", got)
	}

	// A render cancelled while it renders.
	id = create(t, c, "long", 1000)
	answer(t, c, waitFor(t, c, id, "input_required", ""), true)
	waitFor(t, c, id, "working", "Rendering ")
	if _, err := c.Call(ctx, "tasks/cancel", map[string]any{"taskId": id}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, id, "cancelled", "")

	// A render whose question outlives the process.
	id = create(t, c, "outro", 2)
	waiting := waitFor(t, c, id, "input_required", "")
	srv.stop(t)
	srv = startServer(t, bin, db)
	c.URL = srv.url + "/mcp"
	answer(t, c, waiting, true)
	done = waitFor(t, c, id, "completed", "")
	if got := toJSON(done["result"]); !strings.Contains(got, "outro.mp4") {
		t.Errorf("result after the restart = %s, want outro.mp4", got)
	}
	srv.stop(t)
}

type server struct {
	url string
	cmd *exec.Cmd
}

// startServer runs the example on a free port with fast frames and waits
// until it is ready.
func startServer(t *testing.T, bin, db string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--listen", addr, "--db", db, "--frame-time", "20ms")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{url: "http://" + addr, cmd: cmd}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server is not ready after 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a process we do not control
	}
}

// stop sends SIGTERM and wants the process to drain and exit 0.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit 15s after SIGTERM")
	}
}

func create(t *testing.T, c *mcptest.Client, scene string, frames int) string {
	t.Helper()
	res, err := c.Call(t.Context(), "tools/call", map[string]any{
		"name": "render_video", "arguments": map[string]any{"scene": scene, "frames": frames},
	})
	id, _ := res["taskId"].(string)
	if err != nil || res["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call render_video: %v %v, want a task", res, err)
	}
	return id
}

// answer answers the task's question yes or no.
func answer(t *testing.T, c *mcptest.Client, task map[string]any, yes bool) {
	t.Helper()
	id := task["taskId"].(string)
	if _, ok := task["inputRequests"].(map[string]any)["overwrite"]; !ok {
		t.Fatalf("task %s asks no overwrite question: %v", id, task)
	}
	_, err := c.Call(t.Context(), "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		"overwrite": map[string]any{"action": "accept", "content": map[string]any{"yes": yes}},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls the task until it has status and a status message that
// starts with msg.
func waitFor(t *testing.T, c *mcptest.Client, id, status, msg string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	for {
		got, err := c.Task(ctx, id)
		if err != nil {
			t.Fatalf("waiting for %s: %v", status, err)
		}
		m, _ := got["statusMessage"].(string)
		if got["status"] == status && strings.HasPrefix(m, msg) {
			return got
		}
		time.Sleep(20 * time.Millisecond) // the poll interval of this client
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
