package cmdtool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
)

// loadTool parses a tools file holding one tool, written into dir.
func loadTool(t *testing.T, dir, src string) *Tool {
	t.Helper()
	cfg, err := Parse(filepath.Join(dir, "tools.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Tools[0]
}

// callInline runs the tool's handler synchronously, as for a client that
// does not take tasks.
func callInline(ctx context.Context, t *testing.T, tool *Tool, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.handle(ctx, engine.NewInlineRun(tool.Name, raw, nil), raw)
}

// texts returns the text of each content item.
func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

// TestHandle_ShellMetacharacters checks that an argument reaches the
// program as one literal argv entry: nothing interprets it.
func TestHandle_ShellMetacharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	payload := "$(touch " + pwned + "); `touch " + pwned + "`; rm -rf x; | cat /etc/passwd & echo $HOME > " + pwned + " \"'\\ *"
	tool := loadTool(t, dir, `tools:
  - name: echo
    input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
    argv: [printf, "%s\n", "{text}"]
`)
	res, err := callInline(t.Context(), t, tool, map[string]any{"text": payload})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, texts(res))
	}
	if got := texts(res); len(got) != 1 || got[0] != payload+"\n" {
		t.Errorf("output %q, want the payload verbatim", got)
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: the argument was interpreted", pwned)
	}
}

func TestHandle_Placeholders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := loadTool(t, dir, `tools:
  - name: args
    input_schema:
      type: object
      properties:
        a: {type: string}
        b: {type: string}
        c: {type: string, default: dflt}
        n: {type: number}
        files: {type: array, items: {type: string}}
    argv: [printf, "%s|", "{a}", "--b={b}", "{c}", "n={n}", "{files}", "{{a}"]
`)
	cases := []struct {
		args any
		want string
	}{
		{map[string]any{"a": "x"}, "x|dflt|{a}|"},
		{map[string]any{"a": "x", "b": "y", "c": "z", "n": 1.5}, "x|--b=y|z|n=1.5|{a}|"},
		{map[string]any{"files": []string{"f 1", "f2"}, "n": 12345678901234567}, "dflt|n=12345678901234567|f 1|f2|{a}|"},
		{nil, "dflt|{a}|"},
	}
	for _, c := range cases {
		res, err := callInline(t.Context(), t, tool, c.args)
		if err != nil || res.IsError {
			t.Fatalf("call %v: %v %v", c.args, err, texts(res))
		}
		if got := texts(res)[0]; got != c.want {
			t.Errorf("args %v: output %q, want %q", c.args, got, c.want)
		}
	}
}

// TestHandle_IntegerArgv checks that an integer the schema accepts reaches
// argv as its decimal value, however the client spelled it: -0 passes
// minimum: 0, and as "-0" it would be an option (head -n -0 prints every
// line).
func TestHandle_IntegerArgv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tool := loadTool(t, dir, `tools:
  - name: lines
    input_schema:
      type: object
      properties: {n: {type: integer, minimum: 0, maximum: 1000}}
      required: [n]
    argv: [printf, "%s|", -n, "{n}", "--lines={n}"]
`)
	for _, c := range []struct{ args, want string }{
		{`{"n":-0}`, "-n|0|--lines=0|"},
		{`{"n":-0.0}`, "-n|0|--lines=0|"},
		{`{"n":1e2}`, "-n|100|--lines=100|"},
		{`{"n":1.0}`, "-n|1|--lines=1|"},
		{`{"n":7}`, "-n|7|--lines=7|"},
	} {
		res, err := callInline(t.Context(), t, tool, json.RawMessage(c.args))
		if err != nil || res.IsError {
			t.Fatalf("call %s: %v %v", c.args, err, texts(res))
		}
		if got := texts(res)[0]; got != c.want {
			t.Errorf("args %s: argv %q, want %q", c.args, got, c.want)
		}
	}
}

// TestHandle_Revalidates: the handler checks the arguments against the
// schema as it is when the command runs, not only when the task was
// created: a task created under a looser tools.yaml (before a pattern
// closed an option injection, or on a replica with another file) does not
// run with arguments the schema now refuses.
func TestHandle_Revalidates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tool := loadTool(t, dir, `tools:
  - name: make
    input_schema: {type: object, properties: {name: {type: string, pattern: '^[a-z]+$'}}, required: [name]}
    argv: [touch, "{name}"]
`)
	res, err := callInline(t.Context(), t, tool, map[string]any{"name": "--no-create"})
	if err == nil || !strings.Contains(err.Error(), "invalid arguments") {
		t.Errorf("arguments the schema refuses: %v %v, want an error naming them invalid", err, res)
	}
	if _, err := callInline(t.Context(), t, tool, map[string]any{"name": "ok"}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var made []string
	for _, e := range entries {
		made = append(made, e.Name())
	}
	if !slices.Equal(made, []string{"ok"}) {
		t.Errorf("files made: %v, want only ok", made)
	}
}

func TestHandle_Dir(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := loadTool(t, dir, `tools:
  - name: pwd
    input_schema: {type: object, properties: {d: {type: string}}}
    argv: [pwd, -P]
    dir: "{d}"
`)
	for _, c := range []struct {
		d    any
		want string
	}{{"sub", filepath.Join(dir, "sub")}, {nil, dir}, {"/", "/"}} {
		args := map[string]any{}
		if c.d != nil {
			args["d"] = c.d
		}
		res, err := callInline(t.Context(), t, tool, args)
		if err != nil || res.IsError {
			t.Fatalf("call: %v %v", err, texts(res))
		}
		if got := strings.TrimSpace(texts(res)[0]); got != c.want {
			t.Errorf("dir %v: ran in %q, want %q", c.d, got, c.want)
		}
	}
	// A directory that is not there is named as such, not as a missing
	// program.
	res, err := callInline(t.Context(), t, tool, map[string]any{"d": "missing"})
	if err != nil || !res.IsError || !strings.Contains(texts(res)[0], "working directory") || !strings.Contains(texts(res)[0], "missing") {
		t.Errorf("dir missing: %v %v, want an error naming the working directory", texts(res), err)
	}
}

// TestHandle_Env checks that a command sees only the inherited variables,
// its arguments (with env_args) and its env, and none of the server's
// other variables. Not parallel: it sets a variable of the test process.
func TestHandle_Env(t *testing.T) {
	t.Setenv("MCPTASKS_TEST_SECRET", "hunter2")
	t.Setenv("MCPTASKS_TEST_PASSED", "yes")
	tool := loadTool(t, t.TempDir(), `tools:
  - name: env
    input_schema: {type: object, properties: {name: {type: string}, out-file: {type: string}, absent: {type: string}}}
    argv: [env]
    env_args: true
    inherit_env: [MCPTASKS_TEST_PASSED, MCPTASKS_TEST_UNSET]
    env:
      GREETING: "hello {name}"
      MISSING: "{absent}"
      MCPTASKS_ARG_NAME: overridden
`)
	res, err := callInline(t.Context(), t, tool, map[string]any{"name": "bob", "out-file": "x.csv"})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, texts(res))
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(texts(res)[0]), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	want := map[string]string{
		"GREETING": "hello bob", "MCPTASKS_ARG_NAME": "overridden", "MCPTASKS_ARG_OUT_FILE": "x.csv",
		"MCPTASKS_TEST_PASSED": "yes", "PATH": os.Getenv("PATH"),
	}
	for _, k := range []string{"HOME", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			want[k] = v
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected variable %s=%q", k, got[k])
		}
	}
}

// TestHandle_EmptyEnv: a call with nothing to pass in the environment (no
// PATH, HOME or LANG in the server's, inline, no env or env_args) gives the
// command an empty environment, not the server's: exec.Cmd takes a nil
// Env as "inherit everything".
func TestHandle_EmptyEnv(t *testing.T) {
	env, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range inheritedEnv {
		t.Setenv(k, "") // restored when the test ends
		os.Unsetenv(k)
	}
	t.Setenv("MCPTASKS_TEST_SECRET", "hunter2")
	tool := loadTool(t, t.TempDir(), "tools:\n  - name: env\n    argv: ["+env+"]\n")
	res, err := callInline(t.Context(), t, tool, map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, texts(res))
	}
	if out := strings.TrimSpace(texts(res)[0]); out != "" {
		t.Errorf("the command's environment: %q, want none", out)
	}
}

// TestHandle_EnvArgsClash: with env_args, an argument that would be passed
// in the variable of a property of another name is refused, whether that
// property is sent or not, and so are two undeclared arguments that share
// a variable: an argument the schema does not check cannot fill the
// variable of one it does.
func TestHandle_EnvArgsClash(t *testing.T) {
	tool := loadTool(t, t.TempDir(), `tools:
  - name: env
    input_schema: {type: object, properties: {target-dir: {type: string, pattern: "^[a-z]+$"}}}
    argv: [env]
    env_args: true
`)
	for _, args := range []map[string]any{
		{"target-dir": "safe", "target_dir": "../../etc"},
		{"target_dir": "../../etc"}, // the declared one left out
		{"other-x": "a", "other_x": "b"},
	} {
		_, err := callInline(t.Context(), t, tool, args)
		if err == nil || !strings.Contains(err.Error(), "MCPTASKS_ARG_") {
			t.Errorf("call with %v: %v, want an error naming the variable", args, err)
		}
	}
}

func TestHandle_Failure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, dir, "fail.sh", `echo "partial output"
i=0; while [ $i -lt 2000 ]; do echo "noise line $i" >&2; i=$((i+1)); done
echo "the real problem" >&2
exit 3
`)
	tool := loadTool(t, dir, "tools:\n  - name: fail\n    argv: [sh, fail.sh]\n")
	res, err := callInline(t.Context(), t, tool, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := texts(res)
	if !res.IsError || len(got) != 2 {
		t.Fatalf("result %v, want isError with a summary and stdout", got)
	}
	summary := got[0]
	for _, want := range []string{"sh failed with exit code 3", "stderr (last 4096 bytes;", "the real problem"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if len(summary) > StderrTail+200 || strings.Contains(summary, "noise line 0\n") {
		t.Errorf("summary of %d bytes holds more than the tail of stderr", len(summary))
	}
	if got[1] != "stdout:\npartial output\n" {
		t.Errorf("stdout part %q", got[1])
	}
}

func TestHandle_Truncation(t *testing.T) {
	t.Parallel()
	tool := loadTool(t, t.TempDir(), "tools:\n  - name: seq\n    argv: [seq, 1000]\n    output_limit: 100\n")
	res, err := callInline(t.Context(), t, tool, nil)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, texts(res))
	}
	out := texts(res)[0]
	// seq 1000 prints 3893 bytes.
	if !strings.HasPrefix(out, "1\n2\n") || !strings.HasSuffix(out, "\n[output truncated: 3793 bytes omitted]") || len(out) != 100+len("\n[output truncated: 3793 bytes omitted]") {
		t.Errorf("output %q", out)
	}
}

func TestHandle_Timeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, dir, "slow.sh", "echo started; echo warming up >&2; sleep 60\n")
	tool := loadTool(t, dir, "tools:\n  - name: slow\n    argv: [sh, slow.sh]\n    timeout: 200ms\n    grace: 100ms\n")
	res, err := callInline(t.Context(), t, tool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(res); !res.IsError || !strings.Contains(got[0], "sh timed out after 200ms") || !strings.Contains(got[0], "warming up") {
		t.Errorf("result %v", got)
	}
}

func TestHandle_StartFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, dir, "gone.sh", "echo hi\n")
	tool := loadTool(t, dir, "tools:\n  - name: gone\n    argv: [./gone.sh]\n")
	if err := os.Remove(filepath.Join(dir, "gone.sh")); err != nil {
		t.Fatal(err)
	}
	res, err := callInline(t.Context(), t, tool, nil)
	if err != nil || !res.IsError || !strings.Contains(texts(res)[0], "cannot run ./gone.sh") {
		t.Errorf("result %v, %v", texts(res), err)
	}
}

// TestHandle_Cancelled checks that a cancelled inline call stops the
// command and returns the context's error.
func TestHandle_Cancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, dir, "wait.sh", "touch started; sleep 60\n")
	tool := loadTool(t, dir, "tools:\n  - name: wait\n    argv: [sh, wait.sh]\n    grace: 100ms\n")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := callInline(ctx, t, tool, nil)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond) // polling for the marker file
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// TestStatusPump_Throttles: the pump sends a status at once, then at most
// one per interval, the latest offered, on a fake clock.
func TestStatusPump_Throttles(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			sent []string
		)
		set := func(_ context.Context, s string) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, s)
			return nil
		}
		updates := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(sent)
		}
		const every = 50 * time.Millisecond
		p := startStatusPump(t.Context(), every, set)
		defer p.stop()
		p.offer("the first line")
		synctest.Wait()
		if got := updates(); !slices.Equal(got, []string{"the first line"}) {
			t.Fatalf("at once: %q, want the first line", got)
		}
		for i := range 1000 {
			p.offer("line " + strings.Repeat("x", i%3) + string(rune('0'+i%10)))
		}
		p.offer("the last line")
		time.Sleep(every - time.Nanosecond)
		synctest.Wait()
		if got := updates(); len(got) != 1 {
			t.Fatalf("within the interval: %q, want nothing more", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := updates(); !slices.Equal(got, []string{"the first line", "the last line"}) {
			t.Fatalf("after the interval: %q, want the last line offered, once", got)
		}
		time.Sleep(10 * every)
		synctest.Wait()
		if got := updates(); len(got) != 2 {
			t.Errorf("with nothing new offered: %q, want no more updates", got)
		}
	})
}

func TestProgressFilter(t *testing.T) {
	t.Parallel()
	var got []string
	offer := func(s string) { got = append(got, s) }
	for _, c := range []struct {
		re   string
		want string
	}{
		{"", "progress: 10%|rendering|done 3/4"},
		{`^progress: (\d+%)`, "10%"},
		{`^(?:progress|done)`, "progress: 10%|done 3/4"},
	} {
		got = nil
		f := progressFilter(nil, offer)
		if c.re != "" {
			tool := loadTool(t, t.TempDir(), "tools:\n  - name: x\n    argv: [true]\n    progress: '"+c.re+"'\n")
			f = progressFilter(tool.Progress, offer)
		}
		for _, l := range []string{"progress: 10%", "rendering", "done 3/4"} {
			f(l)
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("progress %q: status %q, want %q", c.re, got, c.want)
		}
	}
}
