package interop

import (
	"path/filepath"
	"testing"
)

// tsTaskChecks are the checks of the tasks scenario of ts-client.mjs.
var tsTaskChecks = []string{
	"server declares tasks", "export_report is task-required", "task created working",
	"input_required seen", "elicitation carried related-task", "result after the answer",
	"result carries related-task", "getTask completed", "getTaskResult again",
	"cancelTask returns cancelled", "getTask after cancel", "cancelTask of a terminal task fails",
	"listTasks shows both, newest first", "tools/call of a required tool without task",
	"plain call still synchronous",
}

// TestTSClientHTTP: the TypeScript SDK v1 client over Streamable HTTP, as
// two principals: each sees only its own tasks.
func TestTSClientHTTP(t *testing.T) {
	needNode(t)
	url := serve(t, "127.0.0.1:19410")
	wantChecks(t, tsClient(t, "http", url, tokens["alice"], "tasks"), tsTaskChecks...)

	id := createdID(t, tsClient(t, "http", url, tokens["alice"], "create"))
	wantChecks(t, tsClient(t, "http", url, tokens["bob"], "foreign", id),
		"getTask of a foreign task", "getTaskResult of a foreign task",
		"cancelTask of a foreign task", "listTasks hides the foreign task")
	wantChecks(t, tsClient(t, "http", url, tokens["alice"], "get", id), "getTask of an earlier task")
}

// TestTSClientStdio: the same client launching serve --stdio, twice on one
// store: the second process answers for the tasks of the first.
func TestTSClientStdio(t *testing.T) {
	needNode(t)
	store := "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
	serveArgs := []string{"stdio", bin, "serve", "--stdio", "--store", store, "--demo-step", "200ms", "--log-level", "warn", "--"}
	wantChecks(t, tsClient(t, append(serveArgs, "tasks")...), tsTaskChecks...)
	id := createdID(t, tsClient(t, append(serveArgs, "create")...))
	wantChecks(t, tsClient(t, append(serveArgs, "get", id)...), "getTask of an earlier task")
}

// TestTSClientProxyStdio: a 2025-11-25 client in front of a 2026-07-28
// upstream: the TypeScript client launches mcptasks proxy --stdio, whose
// upstream is mcptasks serve over HTTP.
func TestTSClientProxyStdio(t *testing.T) {
	needNode(t)
	upstream := serve(t, "127.0.0.1:19412")
	store := "sqlite:" + filepath.Join(t.TempDir(), "proxy.db")
	wantChecks(t, tsClient(t, "stdio", bin, "proxy", "--stdio", "--store", store, "--log-level", "warn",
		"--upstream-header", "Authorization: Bearer "+tokens["alice"], "--upstream-url", upstream, "--", "proxy"),
		"proxied task created", "proxied question answered", "proxied result")
}
