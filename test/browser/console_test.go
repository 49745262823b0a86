// Package browser drives the operator console in a real headless Chromium:
// a module of its own, so that the browser driver (chromedp) stays out of
// mcptasks' own dependencies. CI runs it from .ci/run:
//
//	cd test/browser && go test -count=1 ./...
//
// It needs Debian's chromium (apt-get install -y chromium), or the browser
// named by MCPTASKS_CHROMIUM; without one it skips, unless
// MCPTASKS_REQUIRE_SERVICES=1. With MCPTASKS_SCREENSHOTS=DIR it saves the
// screenshots of the overview and of a task's page that the README shows
// (DIR/console-overview.png, DIR/console-detail.png).
package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const operatorToken = "ada-console-token-0123456789"

// TestConsole signs in, filters the list to input_required, opens a task,
// sees its question and cancels it in a second tab, and sees the first
// tab's list drop the task without a reload.
func TestConsole(t *testing.T) {
	browser := chromiumPath(t)
	srv := startServer(t)

	// Tasks of every kind, for the overview; the one to cancel asks a
	// question.
	for i := range 3 {
		srv.call(t, "slow_compute", map[string]any{"seconds": 0.2 + 0.1*float64(i), "label": fmt.Sprintf("batch %d", i)})
	}
	srv.call(t, "failing_job", map[string]any{})
	srv.call(t, "protocol_error_job", map[string]any{})
	srv.call(t, "slow_compute", map[string]any{"seconds": 600, "label": "nightly rebuild"})
	srv.call(t, "export_report", map[string]any{"rows": 500})
	id := srv.call(t, "confirm_delete", map[string]any{"filename": "q3-report.csv"})
	srv.waitStatus(t, id, "input_required")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	list := openBrowser(t, ctx, browser)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	// Sign in: the console sends us to the sign-in form first.
	signIn(t, list, srv)
	if heading := value(t, list, "heading", chromedp.Text(css(`h1`))); heading != "Tasks" {
		t.Fatalf("after signing in: page %q, want the task list", heading)
	}

	// The overview, once the short tasks are done.
	srv.waitStatus(t, srv.ids[0], "completed")
	srv.waitStatus(t, srv.ids[2], "completed")
	do(t, list, "overview", chromedp.Navigate(srv.console), chromedp.WaitVisible(css(`svg.chart`)))
	screenshot(t, list, "console-overview.png")

	// Filter the list to input_required.
	row := fmt.Sprintf(`tr[data-task=%q]`, id)
	do(t, list, "filter",
		chromedp.Navigate(srv.console+"tasks"),
		chromedp.WaitVisible(css(`select[name="status"]`)),
		chromedp.SetValue(css(`select[name="status"]`), "input_required"),
		chromedp.Submit(css(`form.filters`)),
		chromedp.WaitVisible(css(row)),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
	)
	statuses := value(t, list, "statuses", chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr[data-status]")].map(r => r.dataset.status)`))
	for _, s := range statuses {
		if s != "input_required" {
			t.Errorf("the filtered list shows a task %s", s)
		}
	}

	// Open the task in a second tab, see its question, cancel it.
	detail, cancelDetail := chromedp.NewContext(list)
	defer cancelDetail()
	do(t, detail, "open the task",
		chromedp.Navigate(srv.console+"tasks?status=input_required"),
		chromedp.Click(css(row+` a`)),
		chromedp.WaitVisible(css(`.question .ask`)),
	)
	if q := value(t, detail, "question", chromedp.Text(css(`.question .ask`))); q != "Delete q3-report.csv?" {
		t.Errorf("the task's question = %q, want %q", q, "Delete q3-report.csv?")
	}
	screenshot(t, detail, "console-detail.png")
	do(t, detail, "cancel",
		chromedp.Click(css(`form.cancel button`)),
		chromedp.WaitVisible(css(`.summary .status.cancelled`)),
	)
	if got := srv.get(t, id)["status"]; got != "cancelled" {
		t.Errorf("the task is %v after the cancel, want cancelled", got)
	}

	// The first tab's list drops the task by itself.
	do(t, list, "live list", chromedp.WaitNotPresent(css(row)))
	notReloaded := value(t, list, "same page", chromedp.Evaluate[bool](`window.notReloaded === true`))
	updates := value(t, list, "updates", chromedp.AttributeValue(css(`[data-live]`), "data-updates"))
	if !notReloaded || !updates.Exists {
		t.Errorf("the list dropped the task with a reload (still the same page: %v; live updates: %q)", notReloaded, updates.Value)
	}
}

// TestConsole_HiddenTabs: a tab holds its live stream only while it is
// shown, so that a browser's six connections to a host are not all taken
// by the streams of tabs in the background: before, the sixth tab opened
// never loaded. A tab shown again gets what changed at once, and one shown
// after its session ended goes to the sign-in page (its stream is refused
// with 401, which a browser does not retry).
//
// Headless Chromium shows every tab, so the test hides and shows them as
// a browser does: document.hidden and a visibilitychange event.
func TestConsole_HiddenTabs(t *testing.T) {
	browser := chromiumPath(t)
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	first := openBrowser(t, ctx, browser)
	signIn(t, first, srv)
	tabs := []context.Context{first}
	for i := 1; i <= 7; i++ {
		for _, tab := range tabs {
			do(t, tab, fmt.Sprintf("hide a tab before tab %d", i+1), setHidden(true))
		}
		tab, cancelTab := chromedp.NewContext(first)
		defer cancelTab()
		do(t, tab, "open a tab") // its first run opens it, and the end of that run's context would close it
		loaded, cancelLoad := context.WithTimeout(tab, 15*time.Second)
		do(t, loaded, fmt.Sprintf("load tab %d of %d", i+1, 8), chromedp.Navigate(srv.console+"tasks"), chromedp.WaitVisible(chromedp.CSS(`[data-live]`)))
		cancelLoad()
		tabs = append(tabs, tab)
	}

	// Shown again, the first tab gets its list at once.
	const updates = `Number(document.querySelector("[data-live]").getAttribute("data-updates") || 0)`
	before := value(t, first, "updates", chromedp.Evaluate[int](updates))
	do(t, first, "show the first tab", setHidden(false))
	do(t, first, "its update", chromedp.Poll[chromedp.Void](fmt.Sprintf("%s > %d", updates, before)))

	// Signed out in the last tab, the first one (hidden meanwhile) goes
	// to the sign-in page once shown.
	last := tabs[len(tabs)-1]
	do(t, first, "hide the first tab", setHidden(true))
	do(t, last, "sign out", chromedp.Submit(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	do(t, first, "show the first tab again", setHidden(false))
	do(t, first, "sent to sign in", chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))

	// Signed in again, the page says so while the server is gone.
	signIn(t, first, srv)
	do(t, first, "no notice", chromedp.WaitNotPresent(chromedp.CSS(`.live-stopped`)))
	if err := srv.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	do(t, first, "notice of the server gone", chromedp.WaitVisible(chromedp.CSS(`.live-stopped`)))
}

// TestConsole_LiveFocus: a live update gives the focus back to the control
// that had it in the updated part of the page (a task's link in the list,
// the Cancel button of a task's page), found again by its data-focus-key.
// Before, an update replaced them and the focus went to the page's body:
// a keyboard's or a screen reader's user was sent back to the top at each
// change of a task.
func TestConsole_LiveFocus(t *testing.T) {
	browser := chromiumPath(t)
	srv := startServer(t)
	kept := srv.call(t, "slow_compute", map[string]any{"seconds": 600, "label": "kept"})
	asks := srv.call(t, "multi_input", map[string]any{})
	srv.waitStatus(t, asks, "input_required")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tab := openBrowser(t, ctx, browser)
	signIn(t, tab, srv)

	// The list: a task's link keeps the focus while a new task's row
	// comes in above it.
	link := fmt.Sprintf(`a[data-focus-key="task:%s"]`, kept)
	do(t, tab, "focus a task's link", chromedp.Navigate(srv.console+"tasks"), chromedp.WaitVisible(chromedp.CSS(link)), focus(link))
	wantFocus(t, tab, "before the update", "task:"+kept)
	added := srv.call(t, "slow_compute", map[string]any{"seconds": 600, "label": "added"})
	do(t, tab, "the new task's row", chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector('[data-live] tr[data-task=%q]')`, added)))
	wantFocus(t, tab, "after the list's update", "task:"+kept)

	// A task's page: its Cancel button keeps the focus, and the request
	// of its second question stays open, while the first is answered.
	button := fmt.Sprintf(`button[data-focus-key="cancel:%s"]`, asks)
	const second = `document.querySelector('summary[data-focus-key="question:second"]').parentNode`
	do(t, tab, "focus the Cancel button", chromedp.Navigate(srv.console+"tasks/"+asks), chromedp.WaitVisible(chromedp.CSS(`.question`)),
		chromedp.Evaluate[chromedp.Void](second+`.open = true`), focus(button))
	wantFocus(t, tab, "before the answer", "cancel:"+asks)
	srv.rpc(t, "tasks/update", asks, map[string]any{"taskId": asks, "inputResponses": map[string]any{
		"first": map[string]any{"action": "accept", "content": map[string]any{"name": "ada"}},
	}})
	do(t, tab, "the answer shown", chromedp.Poll[chromedp.Void](`document.querySelectorAll("[data-live] .question").length === 1`))
	wantFocus(t, tab, "after the task's update", "cancel:"+asks)
	if !value(t, tab, "the second request open", chromedp.Evaluate[bool](second+`.open`)) {
		t.Errorf("after the task's update the request of the second question is closed, want it open as the reader left it")
	}
}

// focus gives the keyboard's focus to the element that selector finds,
// in one step in the page, until it has it: a live update may replace the
// element between a lookup and a focus of chromedp's own (which then
// fails with "Could not find node with given id").
func focus(selector string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		if (!e) return false;
		e.focus();
		return document.activeElement === e;
	})()`, selector))
}

// TestConsole_LiveFocusElsewhere: a live update leaves the focus where it
// is when it is outside the updated part (a filter's field, its caret and
// selection untouched), and moves none into it when nothing has it.
func TestConsole_LiveFocusElsewhere(t *testing.T) {
	browser := chromiumPath(t)
	srv := startServer(t)
	srv.call(t, "slow_compute", map[string]any{"seconds": 600, "label": "first"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tab := openBrowser(t, ctx, browser)
	signIn(t, tab, srv)

	const field = `input[name="tool"]`
	do(t, tab, "type in a filter",
		chromedp.Navigate(srv.console+"tasks"),
		chromedp.WaitVisible(chromedp.CSS(`[data-live] a[data-focus-key]`)),
		chromedp.SendKeys(chromedp.CSS(field), "slow_c"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('input[name="tool"]').setSelectionRange(2, 4)`),
	)
	const where = `(() => { const e = document.activeElement; return [e.tagName, e.name || "", e.value || "", String(e.selectionStart), String(e.selectionEnd)].join(" ") })()`
	const inField = "INPUT tool slow_c 2 4"
	if got := value(t, tab, "focus before", chromedp.Evaluate[string](where)); got != inField {
		t.Fatalf("before the update the focus is on %q, want %q", got, inField)
	}
	added := srv.call(t, "slow_compute", map[string]any{"seconds": 600, "label": "second"})
	do(t, tab, "the new task's row", chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector('[data-live] tr[data-task=%q]')`, added)))
	if got := value(t, tab, "focus after", chromedp.Evaluate[string](where)); got != inField {
		t.Errorf("after the update the focus is on %q, want %q", got, inField)
	}

	// Nothing has the focus: an update gives it to nothing.
	do(t, tab, "leave the field", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	added = srv.call(t, "slow_compute", map[string]any{"seconds": 600, "label": "third"})
	do(t, tab, "the next task's row", chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector('[data-live] tr[data-task=%q]')`, added)))
	if got := value(t, tab, "focus after", chromedp.Evaluate[string](`document.activeElement === document.body ? "body" : document.activeElement.outerHTML`)); got != "body" {
		t.Errorf("after an update with no focus, the focus is on %s, want none (the body)", got)
	}
}

// wantFocus fails t unless the focus is on the element of the live part
// of the page with the data-focus-key key.
func wantFocus(t *testing.T, tab context.Context, when, key string) {
	t.Helper()
	got := value(t, tab, "the focus "+when, chromedp.Evaluate[string](
		`(() => { const e = document.activeElement; return e && e.closest("[data-live]") ? e.getAttribute("data-focus-key") || e.outerHTML : e === document.body ? "body" : e.outerHTML })()`))
	if got != key {
		t.Errorf("%s the focus is on %s, want the element of data-focus-key %q", when, got, key)
	}
}

// setHidden hides or shows the page as a browser does when its tab goes
// to the background or comes back.
func setHidden(hidden bool) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`Object.defineProperty(document, "hidden", {value: %t, configurable: true}); document.dispatchEvent(new Event("visibilitychange"))`, hidden))
}

// openBrowser starts a headless Chromium for the test and returns its
// first tab.
func openBrowser(t *testing.T, ctx context.Context, browser string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 860),
	)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancelTab)
	return tab
}

// signIn signs in with the operator's token: the console sends the
// browser to the sign-in form first.
func signIn(t *testing.T, tab context.Context, srv *server) {
	t.Helper()
	do(t, tab, "sign in",
		chromedp.Navigate(srv.console+"tasks"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), operatorToken),
		chromedp.Submit(chromedp.CSS(`input[name="token"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.filters`)),
	)
}

// do runs the steps of a test step, failing t with its name.
func do(t *testing.T, ctx context.Context, step string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// value runs an action and returns its value, failing t with the step's
// name.
func value[T any](t *testing.T, ctx context.Context, step string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return v
}

// screenshot saves the page in MCPTASKS_SCREENSHOTS, if set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("MCPTASKS_SCREENSHOTS")
	if dir == "" {
		return
	}
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// chromiumPath returns the browser to drive, or skips t.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("MCPTASKS_CHROMIUM"), "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("MCPTASKS_REQUIRE_SERVICES") == "1" {
		t.Fatal("no chromium to drive: apt-get install -y chromium, or set MCPTASKS_CHROMIUM")
	}
	t.Skip("no chromium (apt-get install -y chromium)")
	return ""
}

// server is a running "mcptasks serve" with its console.
type server struct {
	mcp, console string // URLs
	ids          []string
	proc         *os.Process
}

var listening = regexp.MustCompile(`msg=(serving|console) url=(http://\S+)`)

// startServer builds mcptasks and starts serve on loopback ports the
// system picks, with the console and an operator's token; it stops it
// when t ends.
func startServer(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcptasks")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mcptasks")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(operatorToken+" ada operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// --suspend-after 0: the tasks that ask are suspended as they ask, not
	// 5 s later while the browser clicks in a list that the suspension
	// would re-render under it.
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--store", "sqlite:"+filepath.Join(dir, "tasks.db"),
		"--console-listen", "127.0.0.1:0", "--console-tokens", tokens, "--demo-step", "300ms", "--suspend-after", "0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	s := &server{proc: cmd.Process}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				if m[1] == "serving" {
					s.mcp = m[2]
				} else {
					s.console = m[2]
				}
				if s.mcp != "" && s.console != "" {
					close(found)
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not say where it listens")
	}
	return s
}

// rpc sends a JSON-RPC request of MCP 2026-07-28 and returns its result.
func (s *server) rpc(t *testing.T, method, name string, params map[string]any) map[string]any {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, s.mcp, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	raw = bytes.TrimSpace(raw)
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 { // an SSE answer
		raw = bytes.TrimSpace(raw[i+len("data: "):])
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil || msg.Result == nil {
		t.Fatalf("%s: %v %v: %s", method, err, msg.Error, raw)
	}
	return msg.Result
}

// call calls a tool that becomes a task and returns its id.
func (s *server) call(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	r := s.rpc(t, "tools/call", tool, map[string]any{"name": tool, "arguments": args})
	id, _ := r["taskId"].(string)
	if id == "" {
		t.Fatalf("tools/call %s: no task: %v", tool, r)
	}
	s.ids = append(s.ids, id)
	return id
}

// get returns the task's tasks/get result.
func (s *server) get(t *testing.T, id string) map[string]any {
	t.Helper()
	return s.rpc(t, "tasks/get", id, map[string]any{"taskId": id})
}

// waitStatus polls the task until it has the status.
func (s *server) waitStatus(t *testing.T, id, status string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.get(t, id)
		if r["status"] == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %v, not %s, after 30s", id, r["status"], status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
