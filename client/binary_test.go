package client_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
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
	bin := filepath.Join(t.TempDir(), "mcptasks")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mcptasks/mcptasks/cmd/mcptasks").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mcptasks: %v\n%s", err, out)
	}
	// The binary needs a concrete port: take a free one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs syncBuffer
	cmd := exec.Command(bin, "serve", "--listen", addr, "--store", "memory:", "--demo-step", "20ms", "--log-level", "debug")
	cmd.Stderr = &logs
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

	url := "http://" + addr + "/mcp"
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
