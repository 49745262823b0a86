package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

// journalWith returns the path of a file journal holding entries.
func journalWith(t *testing.T, entries ...client.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.json")
	j := client.FileJournal(path)
	for _, e := range entries {
		if err := j.Save(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestRunTasks(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	path := journalWith(t,
		client.Entry{TaskID: "old", ServerURL: "http://a/mcp", Tool: "slow_compute", Status: task.Completed, CreatedAt: now.Add(-2 * time.Hour)},
		client.Entry{TaskID: "new", ServerURL: "http://b/mcp", Tool: "export_report", Status: task.InputRequired, CreatedAt: now.Add(-90 * time.Second)},
		client.Entry{TaskID: "mid", ServerURL: "http://a/mcp", Tool: "failing_job", Status: task.Working, CreatedAt: now.Add(-time.Hour)},
	)
	var out bytes.Buffer
	f := &tasksFlags{clientFlags: clientFlags{journal: path}}
	if err := runTasks(t.Context(), f, &streams{out: &out}, now); err != nil {
		t.Fatal(err)
	}
	want := `ID   STATUS          TOOL           AGE    SERVER
new  input_required  export_report  1m30s  http://b/mcp
mid  working         failing_job    1h00m  http://a/mcp
old  completed       slow_compute   2h00m  http://a/mcp
`
	if out.String() != want {
		t.Errorf("tasks:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	f.json = true
	if err := runTasks(t.Context(), f, &streams{out: &out}, now); err != nil {
		t.Fatal(err)
	}
	var got []client.Entry
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("tasks --json: %v\n%s", err, out.String())
	}
	if len(got) != 3 || got[0].TaskID != "new" || got[2].TaskID != "old" || got[0].Tool != "export_report" {
		t.Errorf("tasks --json: %+v", got)
	}

	// An empty journal: an empty array, and a sentence.
	out.Reset()
	f.journal = filepath.Join(t.TempDir(), "none.json")
	if err := runTasks(t.Context(), f, &streams{out: &out}, now); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("tasks --json of no journal: %q, %v", out.String(), err)
	}
}

func TestLocate(t *testing.T) {
	t.Parallel()
	path := journalWith(t,
		client.Entry{TaskID: "abc123", ServerURL: "http://a/mcp", Tool: "t1"},
		client.Entry{TaskID: "abd999", ServerURL: "http://b/mcp", Tool: "t2"},
		client.Entry{TaskID: "twice", ServerURL: "http://a/mcp", Tool: "t3"},
		client.Entry{TaskID: "twice", ServerURL: "http://b/mcp", Tool: "t4"},
	)
	for _, tc := range []struct {
		name, id, url      string
		wantURL, wantEntry string // the entry's tool
		err                string
	}{
		{name: "Exact", id: "abc123", wantURL: "http://a/mcp", wantEntry: "t1"},
		{name: "UniquePrefix", id: "abd", wantURL: "http://b/mcp", wantEntry: "t2"},
		{name: "AmbiguousPrefix", id: "ab", err: "ambiguous: abc123 (http://a/mcp), abd999 (http://b/mcp); pass a longer id"},
		{name: "Unknown", id: "zzz", err: "not in the journal; pass the server's --url"},
		{name: "TwoServers", id: "twice", err: "ambiguous: twice (http://a/mcp), twice (http://b/mcp); pass the server's --url"},
		{name: "NotAURL", id: "abc123", url: "foo", err: `--url "foo": want the server's MCP endpoint`},
		{name: "TwoServersWithURL", id: "twice", url: "http://b/mcp", wantURL: "http://b/mcp", wantEntry: "t4"},
		{name: "UnknownWithURL", id: "zzz", url: "http://c/mcp", wantURL: "http://c/mcp"},
		{name: "NoPrefixWithURL", id: "abc", url: "http://a/mcp", wantURL: "http://a/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &clientFlags{journal: path, url: tc.url}
			j, _ := f.openJournal()
			url, e, err := f.locate(t.Context(), j, tc.id)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || exitCodeOf(err) != exitUsage {
					t.Fatalf("locate = %q, %v, %v; want a usage error with %q", url, e, err, tc.err)
				}
				return
			}
			tool := ""
			if e != nil {
				tool = e.Tool
			}
			if err != nil || url != tc.wantURL || tool != tc.wantEntry {
				t.Errorf("locate = %q, entry of %q, %v; want %q, %q", url, tool, err, tc.wantURL, tc.wantEntry)
			}
		})
	}
}

// TestJournalPath sets environment variables, so it does not run in
// parallel.
func TestJournalPath(t *testing.T) {
	t.Setenv(envJournal, "")
	t.Setenv("XDG_STATE_HOME", "/state")
	t.Setenv("HOME", "/home/ada")
	f := &clientFlags{}
	if p, _ := f.journalPath(); p != "/state/mcptasks/journal.json" {
		t.Errorf("with XDG_STATE_HOME: %s", p)
	}
	t.Setenv("XDG_STATE_HOME", "")
	if p, _ := f.journalPath(); p != "/home/ada/.local/state/mcptasks/journal.json" {
		t.Errorf("without XDG_STATE_HOME: %s", p)
	}
	t.Setenv(envJournal, "/env/j.json")
	if p, _ := f.journalPath(); p != "/env/j.json" {
		t.Errorf("with %s: %s", envJournal, p)
	}
	f.journal = "/flag/j.json"
	if p, _ := f.journalPath(); p != "/flag/j.json" {
		t.Errorf("with --journal: %s", p)
	}
	t.Setenv(envToken, "from-env")
	if got := f.tokenValue(); got != "from-env" {
		t.Errorf("token %q, want the environment's", got)
	}
	f.token = "from-flag"
	if got := f.tokenValue(); got != "from-flag" {
		t.Errorf("token %q, want the flag's", got)
	}
}

// TestRunTasks_Prune: --prune removes the entries of tasks last seen
// finished longer ago than its duration, and keeps the others: newer or
// unfinished ones, and pending calls.
func TestRunTasks_Prune(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	month := 30 * 24 * time.Hour
	path := journalWith(t,
		client.Entry{TaskID: "done-old", ServerURL: "http://a/mcp", Tool: "t", Status: task.Completed, SeenAt: now.Add(-2 * month), CreatedAt: now.Add(-2 * month)},
		client.Entry{TaskID: "failed-old", ServerURL: "http://a/mcp", Tool: "t", Status: task.Failed, SeenAt: now.Add(-2 * month), CreatedAt: now.Add(-2 * month)},
		client.Entry{TaskID: "done-new", ServerURL: "http://a/mcp", Tool: "t", Status: task.Completed, SeenAt: now.Add(-time.Hour), CreatedAt: now.Add(-time.Hour)},
		client.Entry{TaskID: "waiting-old", ServerURL: "http://a/mcp", Tool: "t", Status: task.InputRequired, SeenAt: now.Add(-2 * month), CreatedAt: now.Add(-2 * month)},
		client.Entry{ServerURL: "http://a/mcp", Tool: "t", IdempotencyKey: "pending-old", SeenAt: now.Add(-2 * month), CreatedAt: now.Add(-2 * month)},
	)
	var out, errOut bytes.Buffer
	f := &tasksFlags{clientFlags: clientFlags{journal: path}, json: true, prune: month}
	if err := runTasks(t.Context(), f, &streams{out: &out, err: &errOut}, now); err != nil {
		t.Fatal(err)
	}
	var got []client.Entry
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("tasks --json: %v\n%s", err, out.String())
	}
	var kept []string
	for _, e := range got {
		kept = append(kept, cmp.Or(e.TaskID, e.IdempotencyKey))
	}
	slices.Sort(kept)
	if want := []string{"done-new", "pending-old", "waiting-old"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	if !strings.Contains(errOut.String(), "removed 2 finished task(s)") {
		t.Errorf("stderr %q, want the count removed", errOut.String())
	}

	f.prune = -time.Hour
	if err := runTasks(t.Context(), f, &streams{out: &out, err: &errOut}, now); exitCodeOf(err) != exitUsage {
		t.Errorf("--prune -1h: %v, want a usage error", err)
	}
}
