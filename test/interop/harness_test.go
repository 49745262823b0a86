package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bin is the mcptasks binary TestMain builds.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptasks-interop")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "mcptasks")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mcptasks")
	build.Dir = filepath.Join("..", "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mcptasks:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needNode skips the test when the npm packages are not installed, or
// fails it where CI promises them.
func needNode(t *testing.T) {
	t.Helper()
	_, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	if _, lerr := exec.LookPath("node"); err == nil && lerr == nil {
		return
	}
	if os.Getenv("MCPTASKS_REQUIRE_SERVICES") == "1" {
		t.Fatal("node and the npm packages are required: run npm ci in test/interop")
	}
	t.Skip("node or test/interop/node_modules missing: run npm ci in test/interop")
}

// tokens are the bearer tokens of the two principals of the HTTP tests.
var tokens = map[string]string{"alice": "alice-token-0123456789", "bob": "bob-token-0123456789"}

// serve starts mcptasks serve on addr with args and waits until it
// answers; it is killed at the end of the test.
func serve(t *testing.T, addr string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	tf := filepath.Join(dir, "tokens")
	var lines []string
	for p, tok := range tokens {
		lines = append(lines, tok+" "+p)
	}
	if err := os.WriteFile(tf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"serve", "--listen", addr, "--store", "sqlite:" + filepath.Join(dir, "tasks.db"),
		"--auth-tokens", tf, "--demo-step", "200ms", "--log-level", "warn"}, args...)
	start(t, bin, all...)
	url := "http://" + addr
	waitHTTP(t, url+"/healthz")
	return url + "/mcp"
}

// start runs a process for the length of the test.
func start(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	return startCmd(t, exec.Command(name, args...))
}

// startCmd starts cmd for the length of the test; its output is logged if
// the test fails.
func startCmd(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	name := cmd.Path
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(name), logs.String())
		}
	})
	return cmd
}

// waitHTTP polls url until it answers, for at most 20 s.
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check is one line of ts-client.mjs.
type check struct {
	Check  string          `json:"check"`
	OK     bool            `json:"ok"`
	Detail json.RawMessage `json:"detail"`
	TaskID string          `json:"taskId"`
}

// tsClient runs ts-client.mjs with args and returns its checks; every
// check must pass and the script must exit 0.
func tsClient(t *testing.T, args ...string) []check {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"ts-client.mjs"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var checks []check
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var c check
		if json.Unmarshal(sc.Bytes(), &c) != nil {
			continue
		}
		checks = append(checks, c)
		if c.Check != "" && !c.OK {
			t.Errorf("%s: failed: %s", c.Check, c.Detail)
		}
	}
	if err != nil {
		t.Fatalf("ts-client.mjs %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return checks
}

// wantChecks fails unless every named check passed.
func wantChecks(t *testing.T, checks []check, names ...string) {
	t.Helper()
	ok := map[string]bool{}
	for _, c := range checks {
		ok[c.Check] = c.OK
	}
	for _, n := range names {
		if !ok[n] {
			t.Errorf("check %q did not pass", n)
		}
	}
}

// createdID returns the taskId printed by the create scenario.
func createdID(t *testing.T, checks []check) string {
	t.Helper()
	for _, c := range checks {
		if c.TaskID != "" {
			return c.TaskID
		}
	}
	t.Fatal("the create scenario printed no taskId")
	return ""
}
