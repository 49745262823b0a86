package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/mcptest"
)

// cliTimeout bounds one run of a client command in the tests.
const cliTimeout = 60 * time.Second

// cliServer starts "mcptasks serve" on a fresh SQLite file with the demo
// tools paced by step, and returns its MCP endpoint.
//
// The end-to-end tests of the client commands do not run in parallel with
// each other: each starts a -race server, and the machine has two cores.
// Their subtests share one server and run in parallel.
func cliServer(t *testing.T, step string) *proc {
	t.Helper()
	return start(t, freeAddr(t), "--store", "sqlite:"+filepath.Join(t.TempDir(), "tasks.db"), "--demo-step", step)
}

// cliEnv is the environment of a client command: the test's journal, and
// no token from the test's own environment.
func cliEnv(journal string) []string {
	return append(os.Environ(), envJournal+"="+journal, envToken+"=")
}

// cliRun runs "mcptasks ARGS" without a terminal (stdin is /dev/null,
// stdout a pipe) and returns its stdout, stderr and exit code.
func cliRun(t *testing.T, journal string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = cliEnv(journal)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		code = ee.ExitCode()
	default:
		t.Fatalf("mcptasks %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), errb.String(), code
}

// cliMust is cliRun that fails the test unless the exit code is want.
func cliMust(t *testing.T, want int, journal string, args ...string) string {
	t.Helper()
	out, errOut, code := cliRun(t, journal, args...)
	if code != want {
		t.Fatalf("mcptasks %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// cliEvents decodes JSON lines.
func cliEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for line := range strings.Lines(out) {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		t.Fatalf("no JSON lines in %q", out)
	}
	return evs
}

// resultText is the text of the first content item of a result event.
func resultText(ev map[string]any) string {
	r, _ := ev["result"].(map[string]any)
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

func TestCLI_Call(t *testing.T) {
	p := cliServer(t, "200ms")
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		task     bool   // whether the call became a task
		status   string // of the last event
		text     string // of the result
		isError  bool
		errCode  float64
		stderrOK string
	}{
		{name: "SlowCompute", args: []string{"slow_compute", "seconds=1", "label=x"}, task: true, status: "completed", text: `Computed "x" in 1s`},
		{name: "ArgsMerged", args: []string{"slow_compute", "--args", `{"seconds": 0.2, "label": "a"}`, "label=b"}, task: true, status: "completed", text: `Computed "b" in 200ms`},
		{name: "Immediate", args: []string{"greet", "name=Bob"}, status: "completed", text: "Hello, Bob!"},
		// Mcp-Param-Region (x-mcp-header), learned from tools/list after the first refusal.
		{name: "ParamHeader", args: []string{"archive_logs", "region=us", "days=1"}, task: true, status: "completed", text: "Archived 1 days of logs in us"},
		{name: "ToolError", args: []string{"failing_job"}, code: exitToolError, task: true, status: "completed", text: "the job failed, as it always does", isError: true},
		{name: "TaskFailed", args: []string{"protocol_error_job"}, code: exitTaskFailed, task: true, status: "failed", errCode: -32603, stderrOK: "failed: internal error while running the job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			journal := filepath.Join(t.TempDir(), "journal.json")
			out, errOut, code := cliRun(t, journal, append([]string{"call", p.url}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			evs := cliEvents(t, out)
			last := evs[len(evs)-1]
			if last["type"] != "result" || last["status"] != tc.status {
				t.Errorf("last line %v, want a result with status %s", last, tc.status)
			}
			if got := resultText(last); got != tc.text {
				t.Errorf("result text %q, want %q", got, tc.text)
			}
			if r, _ := last["result"].(map[string]any); tc.isError != (r["isError"] == true) {
				t.Errorf("result isError %v, want %v", r["isError"], tc.isError)
			}
			if e, _ := last["error"].(map[string]any); tc.errCode != 0 && e["code"] != tc.errCode {
				t.Errorf("error %v, want code %v", last["error"], tc.errCode)
			}
			if !strings.Contains(errOut, tc.stderrOK) {
				t.Errorf("stderr %q lacks %q", errOut, tc.stderrOK)
			}
			if !tc.task {
				if len(evs) != 1 || last["taskId"] != nil {
					t.Errorf("an immediate result: want one line without taskId, got %v", evs)
				}
				return
			}
			// Each status change is one line of the same task, starting
			// with working.
			id, _ := evs[0]["taskId"].(string)
			if evs[0]["type"] != "status" || evs[0]["status"] != "working" || id == "" {
				t.Errorf("first line %v, want the working status of a task", evs[0])
			}
			for i, ev := range evs {
				if ev["taskId"] != id || ev["serverUrl"] != p.url {
					t.Errorf("line %d: %v, want task %s on %s", i, ev, id, p.url)
				}
				if i > 0 && ev["type"] == "status" && ev["status"] == evs[i-1]["status"] && ev["statusMessage"] == evs[i-1]["statusMessage"] {
					t.Errorf("line %d repeats the status of line %d: %v", i, i-1, ev)
				}
			}
		})
	}
}

func TestCLI_Errors(t *testing.T) {
	p := cliServer(t, "200ms")
	unreachable := "http://" + freeAddr(t) + "/mcp"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"NoArgs", []string{"call"}, exitUsage, "missing URL and TOOL: mcptasks call URL TOOL [key=value ...]"},
		{"NoTool", []string{"call", p.url}, exitUsage, "missing TOOL, the name of the tool to call: mcptasks call " + p.url + " TOOL [key=value ...]"},
		// Not at /mcp: the error says where the endpoint usually is.
		{"WrongPath", []string{"call", strings.TrimSuffix(p.url, "mcp"), "greet", "name=Ada"}, exitTransport, "HTTP 404: 404 page not found\nNo MCP endpoint at that path: it is usually /mcp (mcptasks serve's is); try " + p.url},
		{"StoreWithoutKind", []string{"serve", "--store", "tasks.db"}, exitUsage, `--store "tasks.db": no kind; for a SQLite file, use --store sqlite:tasks.db`},
		{"UnknownLogLevel", []string{"serve", "--store", "memory:", "--log-level", "verbose"}, exitUsage, `--log-level "verbose": want debug, info, warn or error`},
		{"UnknownLogLevelConsole", []string{"console", "--log-level", "verbose"}, exitUsage, `--log-level "verbose": want debug, info, warn or error`},
		{"NotAURL", []string{"call", "localhost:8080", "greet"}, exitUsage, "want the server's MCP endpoint"},
		{"NotKeyValue", []string{"call", p.url, "greet", "Bob"}, exitUsage, `argument "Bob": want key=value`},
		{"ArgsNotObject", []string{"call", p.url, "greet", "--args", "[1]"}, exitUsage, "--args: want a JSON object"},
		{"UnknownFlag", []string{"call", "--bogus", p.url, "greet"}, exitUsage, "unknown flag: --bogus"},
		{"NotInJournal", []string{"wait", "no-such-task"}, exitUsage, "not in the journal"},
		{"AnswerBothActions", []string{"answer", "x", "--decline", "--cancel"}, exitUsage, "exclude each other"},
		{"AnswerNoResponses", []string{"answer", "x", "--json", "{}"}, exitUsage, "--json: no responses"},
		{"NegativeSuspendAfter", []string{"serve", "--store", "memory:", "--suspend-after", "-1s"}, exitUsage, "--suspend-after must be 0 (at once) or more, got -1s"},
		{"NegativeMaxHeld", []string{"serve", "--store", "memory:", "--max-held", "-1"}, exitUsage, "--max-held must be 0 (none) or more, got -1"},
		{"NegativeMaxHolding", []string{"proxy", "--store", "memory:", "--max-holding", "-1", "--upstream", "x"}, exitUsage, "--max-holding must be 0 (none) or more, got -1"},
		{"NegativeDrainTimeout", []string{"serve", "--store", "memory:", "--drain-timeout", "-5s"}, exitUsage, "--drain-timeout must be 0 (cancel at once) or more, got -5s"},
		{"NegativeMinPollInterval", []string{"serve", "--store", "memory:", "--min-poll-interval", "-1s"}, exitUsage, "--min-poll-interval must be 0 (no limit) or more, got -1s"},
		{"MinPollIntervalAboveSuggested", []string{"serve", "--store", "memory:", "--listen", "127.0.0.1:0", "--min-poll-interval", "3s"}, exitUsage, "MinPollInterval 3s is longer than the poll interval 1s"},
		{"PprofNotLoopback", []string{"serve", "--store", "memory:", "--listen", "127.0.0.1:0", "--pprof-listen", "0.0.0.0:0"}, exitUsage, `--pprof-listen "0.0.0.0:0": not a loopback address`},
		{"ZeroMaxBodyBytes", []string{"serve", "--store", "memory:", "--max-body-bytes", "0"}, exitUsage, "--max-body-bytes must be positive, got 0"},
		{"ZeroMaxStreams", []string{"serve", "--store", "memory:", "--max-streams", "0"}, exitUsage, "--max-streams must be positive, got 0"},
		{"Unreachable", []string{"call", unreachable, "greet"}, exitTransport, "connection refused"},
		{"UnknownTool", []string{"call", p.url, "no_such_tool"}, exitTransport, "-32602"},
		{"UnknownTaskOnServer", []string{"get", "--url", p.url, "no-such-task"}, exitTransport, "-32602"},
		// A journal that cannot be read: the call is not sent unrecorded.
		{"CorruptJournal", []string{"call", p.url, "slow_compute", "seconds=60", "label=never-sent"}, exitUsage, "not a journal"},
		{"CorruptJournalTasks", []string{"tasks"}, exitUsage, "move the file aside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			journal := filepath.Join(t.TempDir(), "journal.json")
			if strings.HasPrefix(tc.name, "CorruptJournal") {
				if err := os.WriteFile(journal, []byte("{not json"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, errOut, code := cliRun(t, journal, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q\nstdout: %s", code, errOut, tc.code, tc.stderr, out)
			}
			if tc.code == exitUsage && !strings.Contains(errOut, "--help") {
				t.Errorf("usage error without a hint: %q", errOut)
			}
		})
	}
}

// TestCLI_CallNotSent: a call that fails before it reaches the server
// (nothing listens; an https:// URL of a plain-HTTP server) exits 3 with
// the error as it is, and leaves no pending call in the journal: "tasks"
// lists nothing and "tasks --resume" succeeds. Before, the https:// call
// left a "key:… pending" entry that every "tasks --resume" failed on (exit
// 3) until "tasks --forget".
func TestCLI_CallNotSent(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	for _, tc := range []struct {
		name, url, stderr string
	}{
		{"Refused", "http://" + freeAddr(t) + "/mcp", "connection refused"},
		{"HTTPSToPlainHTTP", strings.Replace(plain.URL, "http://", "https://", 1) + "/mcp", "server gave HTTP response to HTTPS client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			journal := filepath.Join(t.TempDir(), "journal.json")
			out, errOut, code := cliRun(t, journal, "call", tc.url, "greet", "name=Ada")
			if code != exitTransport || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("call: exit %d, stderr %q; want exit %d and %q\nstdout: %s", code, errOut, exitTransport, tc.stderr, out)
			}
			if out := cliMust(t, exitOK, journal, "tasks", "--json"); strings.TrimSpace(out) != "[]" {
				t.Errorf("tasks --json after the call:\n%s\nwant no entry", out)
			}
			if out := cliMust(t, exitOK, journal, "tasks", "--resume"); !strings.Contains(out, "No tasks in the journal.") {
				t.Errorf("tasks --resume after the call:\n%s", out)
			}
		})
	}
}

// TestCLI_CallSurvivesSIGKILL kills "mcptasks call" with SIGKILL once the
// task exists; the journal still lists the task, and "mcptasks wait"
// brings back its result.
func TestCLI_CallSurvivesSIGKILL(t *testing.T) {
	p := cliServer(t, "200ms")
	journal := filepath.Join(t.TempDir(), "journal.json")
	cmd, _, id := cliStartTask(t, journal, "call", p.url, "slow_compute", "seconds=2", "label=killed")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("call exited 0 after SIGKILL")
	}

	var entries []map[string]any
	if err := json.Unmarshal([]byte(cliMust(t, exitOK, journal, "tasks", "--json")), &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0]["taskId"] != id || entries[0]["serverUrl"] != p.url || entries[0]["tool"] != "slow_compute" {
		t.Fatalf("tasks --json after SIGKILL: %v, want task %s", entries, id)
	}
	if table := cliMust(t, exitOK, journal, "tasks"); !strings.Contains(table, id) {
		t.Errorf("tasks:\n%s\nlacks %s", table, id)
	}

	evs := cliEvents(t, cliMust(t, exitOK, journal, "wait", "--", id))
	last := evs[len(evs)-1]
	if last["type"] != "result" || resultText(last) != `Computed "killed" in 2s` {
		t.Errorf("wait: last line %v", last)
	}
	// The journal saw the end.
	_ = json.Unmarshal([]byte(cliMust(t, exitOK, journal, "tasks", "--json")), &entries)
	if entries[0]["status"] != "completed" {
		t.Errorf("journal status after wait: %v", entries[0]["status"])
	}
}

// TestCLI_TasksResume: a call whose reply was never seen (a "mcptasks call"
// stopped while its request was on the wire leaves it in the journal as a
// pending create) is listed as pending; "tasks --resume" sends it again
// with its idempotency key and lists the task its first request made,
// which runs to its end.
func TestCLI_TasksResume(t *testing.T) {
	p := cliServer(t, "50ms")
	// The call, made; then the journal as it was before its reply came.
	journal := filepath.Join(t.TempDir(), "journal.json")
	cliRun(t, journal, "call", "--detach", p.url, "slow_compute", "seconds=0.1", "label=resumed")
	j := client.FileJournal(journal)
	made, err := j.List(t.Context())
	if err != nil || len(made) != 1 || made[0].Pending() || made[0].IdempotencyKey == "" {
		t.Fatalf("journal after call --detach: %+v, %v; want its task, with its key", made, err)
	}
	sent := made[0]
	sent.TaskID, sent.Status = "", ""
	if err := j.Remove(t.Context(), made[0]); err != nil {
		t.Fatal(err)
	}
	if err := j.Save(t.Context(), sent); err != nil {
		t.Fatal(err)
	}

	table := cliMust(t, exitOK, journal, "tasks")
	if !strings.Contains(table, "key:"+sent.IdempotencyKey+"  pending  slow_compute") || !strings.Contains(table, "tasks --resume") {
		t.Errorf("tasks with a pending call:\n%s", table)
	}
	var entries []client.Entry
	if err := json.Unmarshal([]byte(cliMust(t, exitOK, journal, "tasks", "--resume", "--json")), &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].TaskID != made[0].TaskID || entries[0].IdempotencyKey != sent.IdempotencyKey {
		t.Fatalf("tasks --resume --json: %+v; want task %s, which the call made", entries, made[0].TaskID)
	}
	evs := cliEvents(t, cliMust(t, exitOK, journal, "wait", "--", entries[0].TaskID))
	if got := resultText(evs[len(evs)-1]); !strings.Contains(got, "resumed") {
		t.Errorf("the resumed task's result: %q", got)
	}

	// A pending call the server answers at once: its result is shown (it
	// is kept nowhere), and the call removed.
	journal = journalWith(t, client.Entry{ServerURL: p.url, Tool: "greet", Args: json.RawMessage(`{"name":"Ada"}`), IdempotencyKey: "k-1", CreatedAt: time.Now()})
	out, errOut, code := cliRun(t, journal, "tasks", "--resume")
	if code != exitOK || !strings.Contains(errOut, "answered at once") || !strings.Contains(errOut, "Hello, Ada!") || !strings.Contains(out, "No tasks in the journal.") {
		t.Errorf("tasks --resume of a call answered at once: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// A pending call the server refuses is reported and removed.
	journal = journalWith(t, client.Entry{ServerURL: p.url, Tool: "no_such_tool", IdempotencyKey: "k-2", CreatedAt: time.Now()})
	out, errOut, code = cliRun(t, journal, "tasks", "--resume")
	if code != exitTransport || !strings.Contains(errOut, "no_such_tool") || !strings.Contains(out, "No tasks in the journal.") {
		t.Errorf("tasks --resume of a refused call: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// A pending call that cannot be settled (its server is gone) fails
	// every --resume until "tasks --forget" drops it, asking no server.
	journal = journalWith(t, client.Entry{ServerURL: "http://127.0.0.1:1/mcp", Tool: "gone", IdempotencyKey: "k-3", CreatedAt: time.Now()})
	cliMust(t, exitTransport, journal, "tasks", "--resume")
	if _, errOut, code = cliRun(t, journal, "tasks", "--forget", "key:k-3"); code != exitOK || !strings.Contains(errOut, "removed the pending call key:k-3 of gone") {
		t.Errorf("tasks --forget key:k-3: exit %d\nstderr:\n%s", code, errOut)
	}
	if out := cliMust(t, exitOK, journal, "tasks", "--resume"); !strings.Contains(out, "No tasks in the journal.") {
		t.Errorf("tasks --resume after --forget:\n%s", out)
	}
}

// cliStartTask starts "mcptasks ARGS" without a terminal, reads its first
// JSON line and returns the process, the rest of its stdout and the id of
// its task.
func cliStartTask(t *testing.T, journal string, args ...string) (*exec.Cmd, *bufio.Reader, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = cliEnv(journal)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("first line of %s: %q, %v", args[0], line, err)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(line), &first); err != nil {
		t.Fatal(err)
	}
	id, _ := first["taskId"].(string)
	if id == "" {
		t.Fatalf("first line %s has no taskId", line)
	}
	return cmd, r, id
}

// TestCLI_InterruptDetaches sends SIGINT to a "call" without a terminal:
// it detaches (exit 6), and the task keeps running.
func TestCLI_InterruptDetaches(t *testing.T) {
	p := cliServer(t, "200ms")
	journal := filepath.Join(t.TempDir(), "journal.json")
	cmd, rest, id := cliStartTask(t, journal, "call", p.url, "slow_compute", "seconds=60")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(rest)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != exitDetached {
		t.Fatalf("call after SIGINT: %v, want exit %d\n%s", err, exitDetached, out)
	}
	evs := cliEvents(t, string(out))
	if last := evs[len(evs)-1]; last["type"] != "detached" || last["taskId"] != id {
		t.Errorf("last line %v, want detached", last)
	}
	if got := (&rpc{url: p.url, tasks: true}).get(t, id); got["status"] != "working" {
		t.Errorf("the task is %v after the detach, want working", got["status"])
	}
}

// TestCLI_AnswerAndWait answers questions without a terminal: call stops
// with exit 7 and prints the request, answer sends the answer, and wait
// brings back the result.
func TestCLI_AnswerAndWait(t *testing.T) {
	p := cliServer(t, "200ms")
	t.Run("OneQuestion", func(t *testing.T) {
		t.Parallel()
		journal := filepath.Join(t.TempDir(), "journal.json")
		out, errOut, code := cliRun(t, journal, "call", p.url, "confirm_delete", "filename=a.txt")
		if code != exitInputRequired {
			t.Fatalf("call: exit %d, want %d\n%s\n%s", code, exitInputRequired, out, errOut)
		}
		evs := cliEvents(t, out)
		last := evs[len(evs)-1]
		id, _ := last["taskId"].(string)
		reqs, _ := last["inputRequests"].(map[string]any)
		if last["type"] != "input_required" || reqs["confirm-delete"] == nil {
			t.Fatalf("last line %v, want input_required with confirm-delete", last)
		}
		if want := "mcptasks answer " + idArg(id) + " confirm=<boolean>"; !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks the hint %q", errOut, want)
		}

		var got map[string]any
		if err := json.Unmarshal([]byte(cliMust(t, exitOK, journal, "get", "--", id)), &got); err != nil {
			t.Fatal(err)
		}
		if got["status"] != "input_required" || got["tool"] != "confirm_delete" || got["inputRequests"] == nil {
			t.Errorf("get: %v", got)
		}

		if _, errOut, code := cliRun(t, journal, "answer", "--", id, "confirm=perhaps"); code != exitUsage || !strings.Contains(errOut, "answer y or n") {
			t.Errorf("answer with a bad value: exit %d, %q", code, errOut)
		}
		if _, errOut, code := cliRun(t, journal, "answer", "--", id); code != exitUsage || !strings.Contains(errOut, "missing required field confirm") {
			t.Errorf("answer without the required field: exit %d, %q", code, errOut)
		}
		out = cliMust(t, exitOK, journal, "answer", "--", id, "confirm=yes")
		if ev := cliEvents(t, out)[0]; ev["type"] != "answered" || ev["taskId"] != id {
			t.Errorf("answer printed %v", ev)
		}

		evs = cliEvents(t, cliMust(t, exitOK, journal, "wait", "--", id))
		if last := evs[len(evs)-1]; resultText(last) != "Deleted a.txt" {
			t.Errorf("wait: %v", last)
		}
		if err := json.Unmarshal([]byte(cliMust(t, exitOK, journal, "get", "--", id)), &got); err != nil {
			t.Fatal(err)
		}
		if got["status"] != "completed" || !strings.Contains(fmt.Sprint(got["result"]), "Deleted a.txt") {
			t.Errorf("get after the end: %v", got)
		}
	})
	t.Run("TwoQuestions", func(t *testing.T) {
		t.Parallel()
		journal := filepath.Join(t.TempDir(), "journal.json")
		out := cliMust(t, exitInputRequired, journal, "call", p.url, "multi_input")
		evs := cliEvents(t, out)
		id, _ := evs[len(evs)-1]["taskId"].(string)
		prefix := id[:10] // a unique prefix finds the task too

		if _, errOut, code := cliRun(t, journal, "answer", "--", prefix, "name=x"); code != exitUsage || !strings.Contains(errOut, "asks 2 questions (first, second)") {
			t.Errorf("answer without a key: exit %d, %q", code, errOut)
		}
		cliMust(t, exitOK, journal, "answer", "--", prefix, "first", "name=Ann")
		cliMust(t, exitOK, journal, "answer", "--json", `{"second": {"action": "decline"}}`, "--", prefix)
		evs = cliEvents(t, cliMust(t, exitOK, journal, "wait", "--", prefix))
		if last := evs[len(evs)-1]; resultText(last) != "first=Ann second=<nil>" {
			t.Errorf("wait: %v", last)
		}
	})
}

// TestCLI_Answers: call and wait with --answers answer, without a
// terminal, the questions whose keys it names, each once: one asked before
// the task exists (an MRTR round, which has no task id for "mcptasks
// answer": call ended with exit 7 and no way on), and a task's. A question
// it does not name still ends the command with exit 7.
func TestCLI_Answers(t *testing.T) {
	p := cliServer(t, "200ms")
	const name = `{"user_name": {"action": "accept", "content": {"name": "Ada"}}}`
	const confirm = `{"confirm-delete": {"action": "accept", "content": {"confirm": true}}}`
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // the result's text, or the type of the last line
	}{
		{"BeforeTheTask", []string{"call", "--answers", name, p.url, "test_tool_with_task"}, exitOK, "Hello, Ada! Your task is done."},
		{"BeforeTheTaskDetached", []string{"call", "--detach", "--answers", name, p.url, "test_tool_with_task"}, exitDetached, "detached"},
		{"TheTasks", []string{"call", "--answers", confirm, p.url, "confirm_delete", "filename=a.txt"}, exitOK, "Deleted a.txt"},
		{"NotNamed", []string{"call", "--answers", name, p.url, "confirm_delete", "filename=a.txt"}, exitInputRequired, "input_required"},
		{"NotNamedBeforeTheTask", []string{"call", "--answers", confirm, p.url, "test_tool_with_task"}, exitInputRequired, "input_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			journal := filepath.Join(t.TempDir(), "journal.json")
			out, errOut, code := cliRun(t, journal, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errOut)
			}
			evs := cliEvents(t, out)
			last := evs[len(evs)-1]
			if got := resultText(last); got != tc.want && last["type"] != tc.want {
				t.Errorf("last line %v, want %q", last, tc.want)
			}
		})
	}
	t.Run("Wait", func(t *testing.T) {
		t.Parallel()
		journal := filepath.Join(t.TempDir(), "journal.json")
		evs := cliEvents(t, cliMust(t, exitInputRequired, journal, "call", p.url, "confirm_delete", "filename=b.txt"))
		id, _ := evs[len(evs)-1]["taskId"].(string)
		evs = cliEvents(t, cliMust(t, exitOK, journal, "wait", "--answers", confirm, "--", id))
		if last := evs[len(evs)-1]; resultText(last) != "Deleted b.txt" {
			t.Errorf("wait --answers: %v", last)
		}
	})
	t.Run("Malformed", func(t *testing.T) {
		t.Parallel()
		journal := filepath.Join(t.TempDir(), "journal.json")
		for _, bad := range []string{`{"confirm-delete": true}`, `[1]`, `{}`} {
			if _, errOut, code := cliRun(t, journal, "call", "--answers", bad, p.url, "confirm_delete", "filename=c.txt"); code != exitUsage || !strings.Contains(errOut, "--answers") {
				t.Errorf("--answers %s: exit %d, %q; want %d naming --answers", bad, code, errOut, exitUsage)
			}
		}
	})
}

// TestCLI_Cancel starts a task detached, cancels it, and waits for it.
func TestCLI_Cancel(t *testing.T) {
	p := cliServer(t, "200ms")
	journal := filepath.Join(t.TempDir(), "journal.json")
	out, errOut, code := cliRun(t, journal, "call", "--detach", p.url, "slow_compute", "seconds=60")
	if code != exitDetached {
		t.Fatalf("call --detach: exit %d\n%s\n%s", code, out, errOut)
	}
	evs := cliEvents(t, out)
	last := evs[len(evs)-1]
	id, _ := last["taskId"].(string)
	if last["type"] != "detached" || id == "" || !strings.Contains(errOut, "mcptasks wait "+idArg(id)) {
		t.Fatalf("call --detach: %v, stderr %q", last, errOut)
	}
	if got := (&rpc{url: p.url, tasks: true}).get(t, id); got["status"] != "working" {
		t.Fatalf("the detached task is %v, want working", got["status"])
	}

	// Flags after "--" are flags: the hints print ids after it.
	ev := cliEvents(t, cliMust(t, exitOK, journal, "cancel", "--", id, "--json"))[0]
	if ev["type"] != "cancel_requested" || ev["taskId"] != id {
		t.Errorf("cancel printed %v", ev)
	}
	out, errOut, code = cliRun(t, journal, "wait", "--", id, "--json")
	if code != exitTaskCancelled {
		t.Fatalf("wait: exit %d, want %d\n%s\n%s", code, exitTaskCancelled, out, errOut)
	}
	evs = cliEvents(t, out)
	if last := evs[len(evs)-1]; last["type"] != "result" || last["status"] != "cancelled" {
		t.Errorf("wait: last line %v", last)
	}
}

// TestServe_AllowedOrigins checks the wiring of --allowed-origins: an
// invalid origin stops serve at start-up naming the flag; a listed origin
// is served, another one gets HTTP 403 (the behaviour itself is in the
// mcpserver transcript origin.txtar).
func TestServe_AllowedOrigins(t *testing.T) {
	t.Parallel()
	_, errOut, code := cliRun(t, "", "serve", "--listen", freeAddr(t), "--store", "memory:", "--allowed-origins", "https://app.example/path")
	if want := `--allowed-origins: origin "https://app.example/path": want scheme://host[:port]`; code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("bad origin: exit %d, stderr %q; want exit %d and %q", code, errOut, exitUsage, want)
	}

	p := start(t, freeAddr(t), "--store", "memory:", "--allowed-origins", "https://app.example,https://other.example:8443")
	for origin, want := range map[string]int{
		"https://app.example":        http.StatusOK,
		"https://other.example:8443": http.StatusOK,
		"https://evil.example":       http.StatusForbidden,
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		mcptest.SetHeaders(req.Header, "server/discover", "")
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %s: HTTP %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

// TestServe_StoreDirMade: serve makes the directory of its SQLite file
// when it is missing, as in a fresh workspace's .mcptasks/ of the README's
// VS Code configuration (before, serve exited: "unable to open database
// file").
func TestServe_StoreDirMade(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".mcptasks", "sub", "tasks.db")
	start(t, freeAddr(t), "--store", "sqlite:"+path)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the store's file: %v", err)
	}
}

// TestServe_AuthTokensGuards: with --auth-tokens, /metrics wants a token
// too (the health checks stay open to probes), and a page of another
// origin gets 403 before its token is looked at, not a 401.
func TestServe_AuthTokensGuards(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok-alice alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, freeAddr(t), "--store", "memory:", "--auth-tokens", tokens)
	base := strings.TrimSuffix(p.url, "/mcp")
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		want         int
	}{
		{"GET", "/metrics", nil, http.StatusUnauthorized},
		{"GET", "/metrics", map[string]string{"Authorization": "Bearer tok-alice"}, http.StatusOK},
		{"GET", "/healthz", nil, http.StatusOK},
		{"GET", "/readyz", nil, http.StatusOK},
		{"POST", "/mcp", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"GET", "/metrics", map[string]string{"Origin": "https://evil.example", "Authorization": "Bearer tok-alice"}, http.StatusForbidden},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s %v: HTTP %d, want %d", tc.method, tc.path, tc.header, resp.StatusCode, tc.want)
		}
	}
}

// TestCLI_HelpHidesToken: no command's help prints the bearer token of
// $MCPTASKS_TOKEN (a flag's default is printed as it is).
func TestCLI_HelpHidesToken(t *testing.T) {
	const secret = "s3cr3t-token-value"
	for _, args := range [][]string{{"bench", "--help"}, {"call", "--help"}, {"get", "--help"}, {"wait", "--help"}} {
		cmd := exec.CommandContext(t.Context(), binary, args...)
		cmd.Env = append(cliEnv(filepath.Join(t.TempDir(), "journal.json")), "MCPTASKS_TOKEN="+secret)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mcptasks %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if strings.Contains(string(out), secret) {
			t.Errorf("mcptasks %s prints $MCPTASKS_TOKEN", strings.Join(args, " "))
		}
	}
}
