package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"os"
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
		{name: "PendingCall", id: "key:k1", url: "http://a/mcp", err: `key:k1 names a pending call, which has no task id yet: "mcptasks tasks --resume" learns its task, "mcptasks tasks --forget key:k1" drops it`},
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

// TestRunTasks_Forget: --forget removes the entries it names, by task id,
// unique prefix, or a pending call's key:KEY as "tasks" lists it (or its
// bare key), and says which; an ID that names no entry or several is a
// usage error that removes nothing, even with good IDs beside it.
func TestRunTasks_Forget(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	entries := []client.Entry{
		{TaskID: "abc123", ServerURL: "http://a/mcp", Tool: "t1", Status: task.Working, CreatedAt: now.Add(-5 * time.Hour)},
		{TaskID: "abd999", ServerURL: "http://b/mcp", Tool: "t2", Status: task.InputRequired, CreatedAt: now.Add(-4 * time.Hour)},
		{TaskID: "twice", ServerURL: "http://a/mcp", Tool: "t3", Status: task.Working, CreatedAt: now.Add(-3 * time.Hour)},
		{TaskID: "twice", ServerURL: "http://b/mcp", Tool: "t4", Status: task.Completed, CreatedAt: now.Add(-2 * time.Hour)},
		{ServerURL: "http://a/mcp", Tool: "t5", IdempotencyKey: "Kp-1", CreatedAt: now.Add(-time.Hour)},
	}
	all := []string{"abc123 a", "abd999 b", "key:Kp-1 a", "twice a", "twice b"}
	for _, tc := range []struct {
		name   string
		forget []string
		url    string
		prune  time.Duration
		kept   []string // "NAME SERVER", sorted; nil: all
		stderr string   // for a usage error, in it
	}{
		{name: "ByID", forget: []string{"abc123"}, kept: []string{"abd999 b", "key:Kp-1 a", "twice a", "twice b"},
			stderr: "mcptasks: removed task abc123 of t1 on http://a/mcp, last seen working\n"},
		{name: "ByPrefix", forget: []string{"abd"}, kept: []string{"abc123 a", "key:Kp-1 a", "twice a", "twice b"},
			stderr: "mcptasks: removed task abd999 of t2 on http://b/mcp, last seen input_required\n"},
		{name: "PendingAsListed", forget: []string{"key:Kp-1"}, kept: []string{"abc123 a", "abd999 b", "twice a", "twice b"},
			stderr: "mcptasks: removed the pending call key:Kp-1 of t5 on http://a/mcp\n"},
		{name: "PendingByBareKey", forget: []string{"Kp-1"}, kept: []string{"abc123 a", "abd999 b", "twice a", "twice b"},
			stderr: "mcptasks: removed the pending call key:Kp-1 of t5 on http://a/mcp\n"},
		{name: "PendingByPrefix", forget: []string{"key:K"}, kept: []string{"abc123 a", "abd999 b", "twice a", "twice b"},
			stderr: "mcptasks: removed the pending call key:Kp-1 of t5 on http://a/mcp\n"},
		{name: "Several", forget: []string{"abc", "key:Kp-1", "abc123"}, kept: []string{"abd999 b", "twice a", "twice b"},
			stderr: "mcptasks: removed task abc123 of t1 on http://a/mcp, last seen working\nmcptasks: removed the pending call key:Kp-1 of t5 on http://a/mcp\n"},
		{name: "OneServer", forget: []string{"twice"}, url: "http://b/mcp", kept: []string{"abc123 a", "abd999 b", "key:Kp-1 a", "twice a"},
			stderr: "mcptasks: removed task twice of t4 on http://b/mcp, last seen completed\n"},
		// Found, then pruned before it was forgotten (as if another
		// process had removed it).
		{name: "Pruned", forget: []string{"twice"}, url: "http://b/mcp", prune: time.Hour, kept: []string{"abc123 a", "abd999 b", "key:Kp-1 a", "twice a"},
			stderr: "mcptasks: removed 1 finished task(s) last seen before " + now.Add(-time.Hour).Local().Format(time.DateTime) + "\n" +
				"mcptasks: twice of http://b/mcp was no longer in the journal\n"},
		{name: "Unknown", forget: []string{"zzz"}, stderr: `--forget zzz: no entry in the journal has this id; "mcptasks tasks" lists them`},
		{name: "UnknownBesideKnown", forget: []string{"abc123", "zzz"}, stderr: "--forget zzz: no entry in the journal"},
		{name: "UnknownOnServer", forget: []string{"abd999"}, url: "http://a/mcp", stderr: "--forget abd999: no entry of http://a/mcp in the journal"},
		{name: "AmbiguousPrefix", forget: []string{"abc123", "ab"}, stderr: "--forget ab is ambiguous: abc123 (http://a/mcp), abd999 (http://b/mcp); pass a longer id"},
		{name: "TwoServers", forget: []string{"twice"}, stderr: "--forget twice is ambiguous: twice (http://a/mcp), twice (http://b/mcp); pass the server's --url"},
		{name: "Empty", forget: []string{""}, stderr: "--forget: empty id"},
		{name: "URLAlone", url: "http://a/mcp", stderr: "--url goes with --forget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := journalWith(t, entries...)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			f := &tasksFlags{clientFlags: clientFlags{journal: path, url: tc.url}, json: true, forget: tc.forget, prune: tc.prune}
			err = runTasks(t.Context(), f, &streams{out: &out, err: &errOut}, now)
			if tc.kept == nil {
				if exitCodeOf(err) != exitUsage || !strings.Contains(err.Error(), tc.stderr) {
					t.Errorf("tasks --forget %q: %v; want a usage error with %q", tc.forget, err, tc.stderr)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
					t.Errorf("the journal changed:\n%s\nwas:\n%s", after, before)
				}
				tc.kept = all
			} else if err != nil || errOut.String() != tc.stderr {
				t.Errorf("tasks --forget %q: %v; stderr:\n%s\nwant:\n%s", tc.forget, err, errOut.String(), tc.stderr)
			}
			left, err := client.FileJournal(path).List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, e := range left {
				kept = append(kept, journalName(e)+" "+strings.TrimSuffix(strings.TrimPrefix(e.ServerURL, "http://"), "/mcp"))
			}
			slices.Sort(kept)
			if !slices.Equal(kept, tc.kept) {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
		})
	}

	// "tasks" lists a pending call by the name that --forget takes.
	path := journalWith(t, entries[4])
	var out, errOut bytes.Buffer
	if err := runTasks(t.Context(), &tasksFlags{clientFlags: clientFlags{journal: path}}, &streams{out: &out, err: &errOut}, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 2 || !strings.Contains(out.String(), "--forget key:KEY") {
		t.Fatalf("tasks:\n%s", out.String())
	}
	listed := strings.Fields(lines[1])
	if len(listed) < 2 || listed[1] != "pending" {
		t.Fatalf("tasks lists the pending call as %q", lines[1])
	}
	f := &tasksFlags{clientFlags: clientFlags{journal: path}, forget: listed[:1]}
	out.Reset()
	if err := runTasks(t.Context(), f, &streams{out: &out, err: &errOut}, now); err != nil || !strings.Contains(out.String(), "No tasks in the journal.") {
		t.Errorf("tasks --forget %s: %v\n%s", listed[0], err, out.String())
	}
}
