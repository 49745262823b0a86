package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// This file runs command tools (--tools) in the real binary.

// commandTools writes a tools file and scripts into a fresh directory,
// starts "mcptasks serve --tools" on it with a memory store, and returns a
// client that declares the Tasks extension, and the directory.
func commandTools(t *testing.T, src string, scripts map[string]string) (*rpc, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, freeAddr(t), "--store", "memory:", "--tools", path)
	return &rpc{url: p.url, tasks: true}, dir
}

// waitFor polls tasks/get until ok holds, for at most d.
func (c *rpc) waitFor(t *testing.T, id, what string, d time.Duration, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := c.get(t, id)
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: no %s after %s: %v", id, what, d, got)
		}
		time.Sleep(50 * time.Millisecond) // the poll interval of this test client
	}
}

// taskID returns the id of a CreateTaskResult, failing the test otherwise.
func taskID(t *testing.T, created map[string]any) string {
	t.Helper()
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %v, want a task", created)
	}
	return id
}

// contentTexts returns the texts of a tool result's content.
func contentTexts(res any) []string {
	m, _ := res.(map[string]any)
	items, _ := m["content"].([]any)
	var out []string
	for _, it := range items {
		c, _ := it.(map[string]any)
		s, _ := c["text"].(string)
		out = append(out, s)
	}
	return out
}

// liveGroupMembers returns the processes of group pgid that are not
// zombies, from /proc. (kill(-pgid, 0) would also count the zombies of
// killed processes that were reparented to PID 1, until it reaps them.)
func liveGroupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])) // state ppid pgrp ...
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestCommandTools_Progress checks that a running command's progress lines
// show as the task's status message, and its stdout as the result.
func TestCommandTools_Progress(t *testing.T) {
	c, dir := commandTools(t, `tools:
  - name: render
    input_schema: {type: object, properties: {gate: {type: string}}, required: [gate]}
    argv: [./render.sh, "{gate}"]
    progress: '^progress: (.*)$'
`, map[string]string{"render.sh": `echo "progress: 25%"
echo "chatter"
echo "progress: 50%"
while [ ! -e "$1" ]; do sleep 0.02; done
echo "progress: 100%"
echo "rendered"
`})
	gate := filepath.Join(dir, "gate")
	id := taskID(t, c.callTool(t, "render", map[string]any{"gate": gate}))
	seen := map[any]bool{}
	c.waitFor(t, id, "status 50%", 10*time.Second, func(got map[string]any) bool {
		seen[got["statusMessage"]] = true
		return got["status"] == "working" && got["statusMessage"] == "50%"
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := c.waitFor(t, id, "completion", 10*time.Second, func(got map[string]any) bool {
		seen[got["statusMessage"]] = true
		return got["status"] == "completed"
	})
	if got := contentTexts(done["result"]); len(got) != 1 || !strings.HasSuffix(got[0], "progress: 100%\nrendered\n") {
		t.Errorf("result %v", done["result"])
	}
	for s := range seen {
		switch s {
		case nil, "Running render.sh", "25%", "50%", "100%":
		default:
			t.Errorf("status message %q is not a progress line", s)
		}
	}
}

// TestCommandTools_Failure checks that a failing command completes the
// task with an isError result giving the exit code and the end of stderr.
func TestCommandTools_Failure(t *testing.T) {
	c, _ := commandTools(t, `tools:
  - name: fail
    argv: [./fail.sh]
`, map[string]string{"fail.sh": `echo "half done"
i=0; while [ $i -lt 1000 ]; do echo "warning $i" >&2; i=$((i+1)); done
echo "fatal: disk full" >&2
exit 3
`})
	id := taskID(t, c.callTool(t, "fail", map[string]any{}))
	done := c.waitStatus(t, id, "completed", 10*time.Second)
	res, _ := done["result"].(map[string]any)
	got := contentTexts(res)
	if res["isError"] != true || len(got) != 2 {
		t.Fatalf("result %v, want isError with a summary and stdout", res)
	}
	for _, want := range []string{"./fail.sh failed with exit code 3", "earlier bytes omitted", "fatal: disk full"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("summary lacks %q:\n%s", want, got[0])
		}
	}
	if strings.Contains(got[0], "warning 0\n") {
		t.Error("the summary holds all of stderr, not its tail")
	}
	if got[1] != "stdout:\nhalf done\n" {
		t.Errorf("stdout part %q", got[1])
	}
}

// TestCommandTools_CancelIgnoringSIGTERM cancels a task whose command
// ignores SIGTERM: it is killed after its grace period, the task ends
// cancelled, and no process of the command's group is left.
func TestCommandTools_CancelIgnoringSIGTERM(t *testing.T) {
	const grace = 500 * time.Millisecond
	c, _ := commandTools(t, fmt.Sprintf(`tools:
  - name: stubborn
    argv: [./stubborn.sh]
    grace: %s
`, grace), map[string]string{"stubborn.sh": `trap '' TERM
sleep 60 &
echo "pgid $$"
sleep 60
`})
	id := taskID(t, c.callTool(t, "stubborn", map[string]any{}))
	running := c.waitFor(t, id, "pgid status", 10*time.Second, func(got map[string]any) bool {
		s, _ := got["statusMessage"].(string)
		return strings.HasPrefix(s, "pgid ")
	})
	pgid, err := strconv.Atoi(strings.TrimPrefix(running["statusMessage"].(string), "pgid "))
	if err != nil {
		t.Fatal(err)
	}
	waitMembers(t, pgid, 3) // the script and its two sleeps
	cancelled := time.Now()
	c.mustCall(t, "tasks/cancel", map[string]any{"taskId": id})
	c.waitStatus(t, id, "cancelled", 10*time.Second)
	if took := time.Since(cancelled); took < grace {
		t.Errorf("cancelled after %s, before the %s grace period", took, grace)
	}
	waitMembers(t, pgid, 0) // SIGKILLed processes are gone within moments
}

// waitMembers waits until group pgid has n live processes, for at most 5s.
func waitMembers(t *testing.T, pgid, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := liveGroupMembers(t, pgid)
		if len(left) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %d has processes %v, want %d", pgid, left, n)
		}
		time.Sleep(20 * time.Millisecond) // polling /proc against the deadline
	}
}

// TestCommandTools_ServerKilled kills the server with SIGKILL while a
// command runs: the command's process dies with it (Pdeathsig) instead of
// running on unowned.
func TestCommandTools_ServerKilled(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "long.sh"), []byte("#!/bin/sh\necho \"pgid $$\"\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(tools, []byte("tools:\n  - name: long\n    argv: [./long.sh]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, freeAddr(t), "--store", "memory:", "--tools", tools)
	c := &rpc{url: p.url, tasks: true}
	id := taskID(t, c.callTool(t, "long", map[string]any{}))
	running := c.waitFor(t, id, "pgid status", 10*time.Second, func(got map[string]any) bool {
		s, _ := got["statusMessage"].(string)
		return strings.HasPrefix(s, "pgid ")
	})
	pgid, err := strconv.Atoi(strings.TrimPrefix(running["statusMessage"].(string), "pgid "))
	if err != nil {
		t.Fatal(err)
	}
	waitMembers(t, pgid, 1)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	waitMembers(t, pgid, 0)
}

// TestCommandTools_LiteralArguments passes shell metacharacters as an
// argument: the program gets them verbatim, and nothing runs them.
func TestCommandTools_LiteralArguments(t *testing.T) {
	c, dir := commandTools(t, `tools:
  - name: echo
    input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
    argv: [printf, "%s\n", "{text}", last]
`, nil)
	pwned := filepath.Join(dir, "pwned")
	payload := fmt.Sprintf("$(touch %[1]s); `touch %[1]s`; rm -rf x; | touch %[1]s & touch %[1]s > %[1]s \"'\\ * ~", pwned)
	id := taskID(t, c.callTool(t, "echo", map[string]any{"text": payload}))
	done := c.waitStatus(t, id, "completed", 10*time.Second)
	if got := contentTexts(done["result"]); len(got) != 1 || got[0] != payload+"\nlast\n" {
		t.Errorf("output %q, want the payload verbatim as one argument", got)
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: the argument was interpreted", pwned)
	}
}

// TestCommandTools_Truncation checks that stdout beyond output_limit is cut
// with a note saying how much was left out.
func TestCommandTools_Truncation(t *testing.T) {
	c, _ := commandTools(t, `tools:
  - name: count
    argv: [seq, 100000]
    output_limit: 1KiB
`, nil)
	id := taskID(t, c.callTool(t, "count", map[string]any{}))
	done := c.waitStatus(t, id, "completed", 10*time.Second)
	got := contentTexts(done["result"])
	// seq 100000 prints 588895 bytes.
	const note = "\n[output truncated: 587871 bytes omitted]"
	if len(got) != 1 || !strings.HasPrefix(got[0], "1\n2\n3\n") || !strings.HasSuffix(got[0], note) || len(got[0]) != 1024+len(note) {
		t.Errorf("output of %d bytes ending %q", len(got[0]), got[0][max(0, len(got[0])-60):])
	}
}

// TestCommandTools_Confirm checks the confirmation round: input_required
// before any task; a refusal is a tool error and creates no task; a yes
// creates the task.
func TestCommandTools_Confirm(t *testing.T) {
	c, dir := commandTools(t, `tools:
  - name: export
    input_schema: {type: object, properties: {table: {type: string}}, required: [table]}
    argv: [./export.sh, "{table}"]
    confirm: Overwrite {table}.csv?
`, map[string]string{"export.sh": `echo "rows" > "$1.csv"; echo "exported $1"`})
	args := map[string]any{"table": "orders"}
	out := filepath.Join(dir, "orders.csv")

	round := c.callTool(t, "export", args)
	reqs, _ := round["inputRequests"].(map[string]any)
	confirm, _ := reqs["confirm"].(map[string]any)
	params, _ := confirm["params"].(map[string]any)
	if round["resultType"] != "input_required" || confirm["method"] != "elicitation/create" || params["message"] != "Overwrite orders.csv?" {
		t.Fatalf("first call: %v, want an input_required round asking to confirm", round)
	}

	declined := c.mustCall(t, "tools/call", map[string]any{"name": "export", "arguments": args,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "decline"}}})
	if declined["isError"] != true || declined["taskId"] != nil || declined["resultType"] != "complete" {
		t.Errorf("declined call: %v, want an isError result and no task", declined)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists after a refusal", out)
	}

	created := c.mustCall(t, "tools/call", map[string]any{"name": "export", "arguments": args, "requestState": round["requestState"],
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}})
	done := c.waitStatus(t, taskID(t, created), "completed", 10*time.Second)
	if got := contentTexts(done["result"]); len(got) != 1 || got[0] != "exported orders\n" {
		t.Errorf("result %v", done["result"])
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the confirmed export did not run: %v", err)
	}
}

// TestCommandTools_BadFile checks that serve and worker refuse a bad tools
// file at start-up, naming the line and field, before serve listens: the
// test holds the --listen port, and the error is about the file, not the
// port.
func TestCommandTools_BadFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("tools:\n  - name: slow\n    argv: [sleep, 1]\n    timeout: 5 minutes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, args := range [][]string{
		{"serve", "--listen", ln.Addr().String(), "--store", "memory:", "--tools", bad},
		{"worker", "--store", "sqlite:" + filepath.Join(t.TempDir(), "tasks.db"), "--tools", bad},
	} {
		cmd := exec.Command(binary, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%s with a bad tools file still runs after 20s; stderr:\n%s", args[0], stderr.String())
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Errorf("%s: exit %v, want a non-zero exit code", args[0], err)
		}
		want := bad + `:4: tools[0].timeout: "5 minutes" is not a duration (use e.g. 5m)`
		if got := stderr.String(); !strings.Contains(got, want) || strings.Contains(got, "--listen") || strings.Contains(got, "serving") {
			t.Errorf("%s stderr:\n%s\nwant %q, and no attempt to listen", args[0], got, want)
		}
	}
}

// TestCommandTools_OnlyThose: serve --tools serves the file's tools and no
// built-in one; --demo adds the built-in tools.
func TestCommandTools_OnlyThose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(path, []byte("tools:\n  - name: hello\n    argv: [echo, hello]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		demo bool
		want []string
	}{{false, []string{"hello"}}, {true, []string{"hello", "greet", "export_report", "test_simple_text"}}} {
		args := []string{"--store", "memory:", "--tools", path}
		if tc.demo {
			args = append(args, "--demo")
		}
		p := start(t, freeAddr(t), args...)
		c := &rpc{url: p.url, tasks: true}
		res := c.mustCall(t, "tools/list", map[string]any{})
		var names []string
		for _, tool := range res["tools"].([]any) {
			names = append(names, tool.(map[string]any)["name"].(string))
		}
		for _, w := range tc.want {
			if !slices.Contains(names, w) {
				t.Errorf("--demo=%v: tools/list %v lacks %s", tc.demo, names, w)
			}
		}
		if !tc.demo && len(names) != 1 {
			t.Errorf("--tools alone: tools/list = %v, want only hello", names)
		}
	}
}

// TestCommandTools_ServerEnvironHidden: a command runs as the server's
// user, yet cannot read the server's environment (its secrets) in
// /proc/<server>/environ: serve with --tools makes itself non-dumpable.
// Root reads any process's /proc, so run as root the test runs the server
// as nobody.
func TestCommandTools_ServerEnvironHidden(t *testing.T) {
	dir, err := os.MkdirTemp("", "mcptasks-environ")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcptasks"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(tools, []byte(`tools:
  - name: peek
    argv: [sh, -c, 'cat /proc/$PPID/environ']
`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(filepath.Join(dir, "mcptasks"), "serve", "--listen", addr, "--store", "memory:", "--tools", tools)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "MCPTASKS_TEST_SECRET=hunter2"}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	c := &rpc{url: startCmd(t, addr, cmd).url, tasks: true}
	id := taskID(t, c.callTool(t, "peek", map[string]any{}))
	done := c.waitStatus(t, id, "completed", 10*time.Second)
	res, _ := done["result"].(map[string]any)
	got := strings.Join(contentTexts(res), "\n")
	if strings.Contains(got, "hunter2") || res["isError"] != true || !strings.Contains(got, "Permission denied") {
		t.Errorf("a command reading the server's /proc/<pid>/environ got %q (isError %v); want it refused", got, res["isError"])
	}
}

// TestCommandTools_InheritedFDsClosed: descriptors the server inherited
// from its parent without close-on-exec (the marker file here, and any
// this test inherited) are not passed on to the commands it runs: serve
// with --tools marks every descriptor above stderr close-on-exec at
// start-up.
func TestCommandTools_InheritedFDsClosed(t *testing.T) {
	dir := t.TempDir()
	marker, err := os.Create(filepath.Join(dir, "inherited-marker"))
	if err != nil {
		t.Fatal(err)
	}
	defer marker.Close()
	tools := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(tools, []byte(`tools:
  - name: fds
    argv: [sh, -c, 'ls -l /proc/$$/fd']
`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(binary, "serve", "--listen", addr, "--store", "memory:", "--tools", tools)
	cmd.ExtraFiles = []*os.File{marker} // fd 3 of the server, not close-on-exec
	c := &rpc{url: startCmd(t, addr, cmd).url, tasks: true}
	id := taskID(t, c.callTool(t, "fds", map[string]any{}))
	done := c.waitStatus(t, id, "completed", 10*time.Second)
	res, _ := done["result"].(map[string]any)
	got := strings.Join(contentTexts(res), "\n")
	if res["isError"] == true || !strings.Contains(got, "0 ->") {
		t.Fatalf("listing the command's descriptors: %q (isError %v)", got, res["isError"])
	}
	// Beyond the marker, nothing the server (or this test) inherited
	// from its parent: only stdin, stdout and stderr.
	var fds []string
	for _, line := range strings.Split(got, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[len(f)-2] == "->" {
			fds = append(fds, f[len(f)-3])
		}
	}
	if !slices.Equal(fds, []string{"0", "1", "2"}) || strings.Contains(got, marker.Name()) {
		t.Errorf("the command has descriptors %v, want only 0, 1 and 2:\n%s", fds, got)
	}
}
