package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsole_Flags checks that the console's flags are checked before
// anything starts, each error naming the flag (and the file and line).
func TestConsole_Flags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad-tokens")
	if err := os.WriteFile(bad, []byte("# operators\nada-token-0123456789 ada admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", freeAddr(t), "--store", "memory:", "--console-redact"},
			"--console-tokens and --console-redact configure the console: add --console-listen ADDR"},
		{[]string{"serve", "--listen", freeAddr(t), "--store", "memory:", "--console-listen", "0.0.0.0:0"},
			`--console-listen: console address "0.0.0.0:0" is not a loopback address`},
		{[]string{"console", "--store", "memory:", "--listen", freeAddr(t), "--tokens", bad},
			"--tokens: " + bad + `:2: role "admin": use viewer or operator`},
		{[]string{"console", "--store", "memory:", "--listen", ":0"},
			`--listen: console address ":0" is not a loopback address`},
		{[]string{"console", "--store", "memory:", "--listen", freeAddr(t)},
			"--store memory:: a memory store is private to its process"},
		{[]string{"console", "--store", "sqlite:" + filepath.Join(t.TempDir(), "typo.db"), "--listen", freeAddr(t)},
			"no such file or directory; the console shows an existing store"},
		{[]string{"worker", "--store", "memory:"},
			"--store memory:: a memory store is private to its process"},
	}
	for _, tt := range tests {
		_, errOut, code := cliRun(t, "", tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("mcptasks %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tt.args, " "), code, errOut, exitUsage, tt.want)
		}
	}
}

// TestConsole_Standalone starts "mcptasks console" on a store that serve
// writes, signs in and finds serve's task.
func TestConsole_Standalone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "tasks.db")
	srv := start(t, freeAddr(t), "--store", db, "--demo-step", "1h")
	c := &rpc{url: srv.url, tasks: true}
	r := c.callTool(t, "confirm_delete", map[string]any{"filename": "a.txt"})
	id := r["taskId"].(string)

	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("ada-token-0123456789 ada operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(binary, "console", "--store", db, "--listen", addr, "--tokens", tokens)
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("console log:\n%s", logs.String())
		}
	})
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	deadline := time.Now().Add(20 * time.Second)
	var res *http.Response
	for {
		var err error
		res, err = hc.PostForm("http://"+addr+"/login", url.Values{"token": {"ada-token-0123456789"}, "next": {"/tasks/" + id}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("console did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not open yet
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), id) || !strings.Contains(string(body), "confirm_delete") {
		t.Fatalf("the task's page after signing in: HTTP %d:\n%.500s", res.StatusCode, body)
	}
}
