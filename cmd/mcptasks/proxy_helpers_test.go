package main

// Helpers of the proxy tests (proxy_test.go): the upstream test server
// (internal/testupstream) built and run, "mcptasks proxy" processes whose
// logs can be read while they run, and a direct go-sdk client of the
// upstream.

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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// proxyWait bounds every wait of the proxy tests.
const proxyWait = 20 * time.Second

// syncBuffer is a bytes.Buffer that a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitFor polls the buffer until it holds s, for at most proxyWait.
func (b *syncBuffer) waitFor(t *testing.T, what, s string) {
	t.Helper()
	deadline := time.Now().Add(proxyWait)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never logged %q:\n%s", what, s, b.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a log
	}
}

// buildUpstream builds the upstream test server and returns its path.
func buildUpstream(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testupstream")
	out, err := exec.Command("go", "build", "-o", bin, "../../internal/testupstream").CombinedOutput()
	if err != nil {
		t.Fatalf("build testupstream: %v\n%s", err, out)
	}
	return bin
}

// process is a running child process with readable logs.
type process struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{} // closed when it has exited
}

func launch(t *testing.T, name string, argv ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(argv[0], argv[1:]...), logs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stderr = p.logs
	p.cmd.Stdout = p.logs
	// A stdio upstream outlives a killed proxy until it reads EOF, and
	// holds the proxy's stderr meanwhile: do not wait for it forever.
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if strings.Contains(p.logs.String(), "WARNING: DATA RACE") {
			t.Errorf("%s: the race detector found a data race", name)
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.logs)
		}
	})
	return p
}

func (p *process) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill kills the process with SIGKILL and waits for it.
func (p *process) kill() {
	if p.alive() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// startUpstreamHTTP runs the upstream over Streamable HTTP (stateless:
// protocol 2026-07-28; stateful: up to 2025-11-25) and returns it and its
// URL once it accepts connections.
func startUpstreamHTTP(t *testing.T, bin string, stateless bool) (*process, string) {
	t.Helper()
	addr := freeAddr(t)
	argv := []string{bin, "-http", addr}
	if stateless {
		argv = append(argv, "-stateless")
	}
	p := launch(t, "upstream", argv...)
	deadline := time.Now().Add(proxyWait)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return p, "http://" + addr + "/mcp"
		}
		if !p.alive() || time.Now().After(deadline) {
			t.Fatalf("upstream did not start: %v\n%s", err, p.logs)
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not open yet
	}
}

// proxyProc is a running "mcptasks proxy".
type proxyProc struct {
	*process
	url string
}

// startProxy runs "mcptasks proxy --listen ADDR --log-level debug ARGS" and
// waits until it answers /healthz.
func startProxy(t *testing.T, addr string, args ...string) *proxyProc {
	t.Helper()
	argv := append([]string{binary, "proxy", "--listen", addr, "--log-level", "debug"}, args...)
	p := &proxyProc{process: launch(t, "proxy", argv...), url: "http://" + addr + "/mcp"}
	deadline := time.Now().Add(proxyWait)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return p
		}
		if !p.alive() || time.Now().After(deadline) {
			t.Fatalf("proxy did not start: %v\n%s", err, p.logs)
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not open yet
	}
}

// upstreamTools lists the upstream's tools with go-sdk's client, directly.
func upstreamTools(t *testing.T, tr mcp.Transport) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), proxyWait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect to the upstream: %v", err)
	}
	defer cs.Close()
	tools := map[string]*mcp.Tool{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tl.Name] = tl
	}
	return tools
}
