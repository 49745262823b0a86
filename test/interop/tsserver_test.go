package interop

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
)

// tsServer starts the TypeScript SDK v1's example task server
// (simpleTaskInteractive: confirm_delete asks with elicitation,
// write_haiku with sampling; both tools require a task) on port.
func tsServer(t *testing.T, port string) string {
	t.Helper()
	needNode(t)
	script := filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", "simpleTaskInteractive.js")
	cmd := exec.Command("node", script)
	cmd.Env = append(cmd.Environ(), "PORT="+port)
	startCmd(t, cmd)
	url := "http://127.0.0.1:" + port + "/mcp"
	waitHTTP(t, url)
	return url
}

// TestGoClientAgainstTSServer: the Go client finds out that the server
// speaks 2025-11-25, calls with params.task, and answers the server's
// elicitation and sampling requests, which this server sends on the GET
// stream, through its InputHandler.
func TestGoClientAgainstTSServer(t *testing.T) {
	url := tsServer(t, "19420")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	asked := map[string]string{}
	c := client.New(url, &client.Options{InputHandler: client.InputHandlerFunc(func(_ context.Context, key string, req *client.InputRequest) (any, error) {
		asked[req.Method] = key
		switch req.Method {
		case client.MethodElicit:
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		case client.MethodCreateMessage:
			// A sampling result, written out: go-sdk's type for it is
			// deprecated with sampling in 2026-07-28.
			return map[string]any{"role": "assistant", "model": "interop", "content": map[string]any{"type": "text", "text": "an old pond"}}, nil
		}
		return nil, errors.New("unexpected request " + req.Method)
	})})

	for _, tt := range []struct {
		tool, want string
		args       map[string]any
		method     string
	}{
		{"confirm_delete", "Deleted 'x.txt'", map[string]any{"filename": "x.txt"}, client.MethodElicit},
		{"write_haiku", "an old pond", map[string]any{"topic": "ponds"}, client.MethodCreateMessage},
	} {
		res, err := c.CallTool(ctx, tt.tool, tt.args)
		if err != nil || res.Task == nil {
			t.Fatalf("%s: %+v, %v", tt.tool, res, err)
		}
		out, err := res.Task.Wait(ctx)
		if err != nil {
			t.Fatalf("%s: wait: %v", tt.tool, err)
		}
		if b, _ := json.Marshal(out.Content); !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: result %s, want %q", tt.tool, b, tt.want)
		}
		if _, ok := asked[tt.method]; !ok {
			t.Errorf("%s: the InputHandler was not asked %s (asked %v)", tt.tool, tt.method, asked)
		}
	}
	if v, err := c.Protocol(ctx); err != nil || v != client.LegacyProtocolVersion {
		t.Errorf("Protocol = %q, %v", v, err)
	}
}

// TestCLIAgainstTSServer: mcptasks call, without a terminal, shows the
// question of the TypeScript example server and exits 7, as it does for a
// 2026-07-28 server.
func TestCLIAgainstTSServer(t *testing.T) {
	url := tsServer(t, "19421")
	cmd := exec.Command(bin, "call", "--journal", filepath.Join(t.TempDir(), "journal.json"), url, "confirm_delete", "filename=y.txt")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("call: %v, want exit 7\n%s", err, out)
	}
	if !strings.Contains(string(out), `"type":"input_required"`) || !strings.Contains(string(out), "Are you sure you want to delete 'y.txt'?") {
		t.Errorf("call output:\n%s", out)
	}
}

// TestCLIProxyToTSServer: a 2026-07-28 client in front of a 2025-11-25
// upstream: mcptasks proxy follows the task of the TypeScript example
// server; the question goes to mcptasks call, which exits 7 without a
// terminal; mcptasks answer, another process, answers it through the
// proxy, and mcptasks wait gets the upstream's result.
func TestCLIProxyToTSServer(t *testing.T) {
	upstream := tsServer(t, "19422")
	start(t, bin, "proxy", "--listen", "127.0.0.1:19413", "--store", "sqlite:"+filepath.Join(t.TempDir(), "proxy.db"),
		"--log-level", "warn", "--upstream-url", upstream)
	waitHTTP(t, "http://127.0.0.1:19413/healthz")
	journal := filepath.Join(t.TempDir(), "journal.json")
	run := func(want int, args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{args[0], "--journal", journal}, args[1:]...)...).Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want {
			t.Fatalf("mcptasks %v: exit %d, want %d\n%s", args, code, want, out)
		}
		return string(out)
	}
	out := run(7, "call", "--protocol", client.ProtocolVersion, "http://127.0.0.1:19413/mcp", "confirm_delete", "filename=z.txt")
	if !strings.Contains(out, "Are you sure you want to delete 'z.txt'?") || !strings.Contains(out, `"upstream-1"`) {
		t.Fatalf("call output:\n%s", out)
	}
	var ev struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &ev)
	run(0, "answer", "--", ev.TaskID, "upstream-1", "confirm=true")
	if out := run(0, "wait", "--", ev.TaskID); !strings.Contains(out, "Deleted 'z.txt'") {
		t.Errorf("wait output:\n%s", out)
	}
}
