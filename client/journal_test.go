package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

func entry(i int) client.Entry {
	return client.Entry{
		TaskID: fmt.Sprintf("task-%02d", i), ServerURL: "http://s/mcp", Tool: "t",
		Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), Status: task.Working,
		CreatedAt: time.Date(2026, 7, 28, 10, 0, i, 0, time.UTC), SeenAt: time.Date(2026, 7, 28, 10, 0, i, 0, time.UTC),
	}
}

func testJournal(t *testing.T, j client.Journal) {
	ctx := context.Background()
	if all, err := j.List(ctx); err != nil || len(all) != 0 {
		t.Fatalf("empty journal: %v, %v", all, err)
	}
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := j.Save(ctx, entry(i)); err != nil {
				t.Errorf("Save %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	all, err := j.List(ctx)
	if err != nil || len(all) != n {
		t.Fatalf("List after %d concurrent saves: %d entries, %v", n, len(all), err)
	}
	for i, e := range all {
		if e.TaskID != entry(i).TaskID || string(e.Args) != string(entry(i).Args) {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	e := entry(3)
	e.Status, e.AnsweredKeys = task.Completed, []string{"k"}
	if err := j.Save(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, ok, err := j.Load(ctx, e.ServerURL, e.TaskID)
	if err != nil || !ok || got.Status != task.Completed || len(got.AnsweredKeys) != 1 || !got.CreatedAt.Equal(e.CreatedAt) {
		t.Errorf("Load after update: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := j.Load(ctx, "http://other/mcp", e.TaskID); ok {
		t.Error("entries are keyed by server too")
	}
	if err := j.Remove(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := j.Remove(ctx, e); err != nil {
		t.Errorf("removing a missing entry: %v", err)
	}
	if all, _ := j.List(ctx); len(all) != n-1 {
		t.Errorf("%d entries after Remove", len(all))
	}

	// Pending creates: identified by their key, replaced by the entry of
	// their task, removed as entries.
	p1, p2 := pending("k1"), pending("k2")
	for _, p := range []client.Entry{p1, p2, p1} {
		if err := j.Save(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := pendingKeys(t, j); fmt.Sprint(got) != "[k1 k2]" {
		t.Fatalf("pending after saving k1, k2, k1: %v", got)
	}
	if _, ok, _ := j.Load(ctx, p1.ServerURL, ""); ok {
		t.Error("Load of task id \"\" found a pending create")
	}
	made := entry(90)
	made.IdempotencyKey = "k1"
	if err := j.Save(ctx, made); err != nil {
		t.Fatal(err)
	}
	if got := pendingKeys(t, j); fmt.Sprint(got) != "[k2]" {
		t.Errorf("pending after k1's task was saved: %v", got)
	}
	if got, ok, _ := j.Load(ctx, made.ServerURL, made.TaskID); !ok || got.IdempotencyKey != "k1" {
		t.Errorf("the task of k1: %+v, %v", got, ok)
	}
	if err := j.Remove(ctx, p2); err != nil {
		t.Fatal(err)
	}
	if got := pendingKeys(t, j); len(got) != 0 {
		t.Errorf("pending after removing k2: %v", got)
	}
	if all, _ := j.List(ctx); len(all) != n {
		t.Errorf("%d entries at the end, want %d", len(all), n)
	}
}

// pending returns a pending create of key.
func pending(key string) client.Entry {
	return client.Entry{ServerURL: "http://s/mcp", Tool: "t", IdempotencyKey: key,
		CreatedAt: time.Date(2026, 7, 28, 11, 0, 0, 0, time.UTC)}
}

// pendingKeys returns the keys of j's pending creates, in List's order.
func pendingKeys(t *testing.T, j client.Journal) []string {
	t.Helper()
	all, err := j.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range all {
		if e.Pending() {
			keys = append(keys, e.IdempotencyKey)
		}
	}
	return keys
}

func TestMemoryJournal(t *testing.T) { testJournal(t, client.MemoryJournal()) }

func TestFileJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "journal.json")
	testJournal(t, client.FileJournal(path))
	// Without a pending create, the file is what earlier releases read.
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"version": 1,`) {
		t.Errorf("a journal without pending creates is not version 1:\n%.80s", b)
	}
	if err := client.FileJournal(path).Save(context.Background(), pending("p")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"version": 2,`) {
		t.Errorf("a journal with a pending create is not version 2:\n%.80s", b)
	}
	if err := client.FileJournal(path).Remove(context.Background(), pending("p")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	// A second journal on the same file sees the same entries.
	if all, _ := client.FileJournal(path).List(context.Background()); len(all) != 40 {
		t.Errorf("reopened journal: %d entries", len(all))
	}
}

// TestFileJournalShared: two FileJournals of one file, changing it at
// once, keep every entry both saved. They stand for two processes (two
// "mcptasks call" at once): each has its own mutex, and flock(2) locks an
// open file, not a process, so they contend as two processes would.
func TestFileJournalShared(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.json")
	ctx := context.Background()
	const each = 40
	var wg sync.WaitGroup
	for w := range 2 {
		j := client.FileJournal(path)
		wg.Go(func() {
			for i := range each {
				e := entry(i)
				e.TaskID = fmt.Sprintf("w%d-%02d", w, i)
				if err := j.Save(ctx, e); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if all, err := client.FileJournal(path).List(ctx); err != nil || len(all) != 2*each {
		t.Errorf("the journal holds %d entries (%v), want %d", len(all), err, 2*each)
	}
}

func TestFileJournalCrashMidWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.json")
	j := client.FileJournal(path)
	if err := j.Save(ctx, entry(1)); err != nil {
		t.Fatal(err)
	}
	// A crash between writing the temporary file and the rename leaves a
	// torn temporary file next to the intact journal.
	if err := os.WriteFile(filepath.Join(dir, ".journal.json.123.tmp"), []byte(`{"version":1,"tasks":[{"taskId":`), 0o600); err != nil {
		t.Fatal(err)
	}
	all, err := j.List(ctx)
	if err != nil || len(all) != 1 || all[0].TaskID != "task-01" {
		t.Fatalf("after a crash mid-write: %v, %v", all, err)
	}
	if err := j.Save(ctx, entry(2)); err != nil {
		t.Fatal(err)
	}
	// A journal that is not ours is refused, not overwritten.
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := j.Save(ctx, entry(3)); err == nil {
		t.Error("Save over a corrupt journal succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "not json" {
		t.Errorf("corrupt journal overwritten: %q", b)
	}
}

// TestFileJournalFailedWrite: a write that fails after writing its
// temporary file (here at the rename) leaves no temporary file, and the
// journal as it was.
func TestFileJournalFailedWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.json")
	if err := client.FileJournal(path).Save(ctx, entry(1)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := client.FileJournalFailingRename(path, boom).Save(ctx, entry(2)); !errors.Is(err, boom) {
		t.Fatalf("Save with a failing rename: %v, want %v", err, boom)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("a failed write left temporary files: %v", left)
	}
	if all, err := client.FileJournal(path).List(ctx); err != nil || len(all) != 1 || all[0].TaskID != "task-01" {
		t.Errorf("journal after a failed write: %v, %v; want task-01 alone", all, err)
	}
}

// TestFileJournalStaleTemps: the next change of a journal removes the
// temporary files of that journal which a writer that crashed before its
// rename left, once they are older than a few minutes; it keeps a recent
// one (a writer without the lock may be using it) and files that only
// look like one (another journal's, a directory, other names).
func TestFileJournalStaleTemps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.json")
	old := time.Now().Add(-time.Hour)
	// As a writer names them (FileJournal uses this pattern).
	temp := func(age time.Time) string {
		f, err := os.CreateTemp(dir, ".journal.json.*.tmp")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chtimes(f.Name(), age, age); err != nil {
			t.Fatal(err)
		}
		return filepath.Base(f.Name())
	}
	stale, recent := temp(old), temp(time.Now())
	others := []string{
		".journal.json.123.456.tmp", // of journal.json.123
		".journal.json.backup.tmp",
		".journal.json..tmp",
		".journal.json.123.tmp.keep",
		"journal.json.123.tmp",
		".other.json.123.tmp",
	}
	for _, name := range others {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("not ours"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	others = append(others, ".journal.json.789.tmp") // a directory
	if err := os.Mkdir(filepath.Join(dir, ".journal.json.789.tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range others {
		if err := os.Chtimes(filepath.Join(dir, name), old, old); err != nil {
			t.Fatal(err)
		}
	}

	if err := client.FileJournal(path).Save(ctx, entry(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, stale)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file %s: %v; want it removed", stale, err)
	}
	for _, name := range append(others, recent) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v; want it kept", name, err)
		}
	}
}

// TestJournalSharedEntry: two programs on one journal change one task's
// entry: a waiter that loaded the entry before "mcptasks answer" recorded
// the key it answered keeps that key when it records the task's end.
// Before, the waiter saved its stale copy whole.
func TestJournalSharedEntry(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "journal.json")
	j := client.FileJournal(path)
	res, err := newClient(s, &client.Options{Journal: j}).CallTool(ctx, "confirm_delete", map[string]any{"filename": "f"})
	if err != nil || res.Task == nil {
		t.Fatalf("CallTool: %+v, %v", res, err)
	}
	id := res.Task.ID
	waitStatus(t, newClient(s, nil).Task(id), task.InputRequired)

	// The waiter loads the entry (its first Get records what it sees).
	waiter, err := newClient(s, &client.Options{Journal: j}).Resume(ctx)
	if err != nil || len(waiter) != 1 {
		t.Fatalf("Resume: %v, %v", waiter, err)
	}
	if _, err := waiter[0].Get(ctx); err != nil {
		t.Fatal(err)
	}
	// Another program answers, and records the key.
	if err := newClient(s, &client.Options{Journal: j}).Task(id).Update(ctx, map[string]any{
		"confirm-delete": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, newClient(s, nil).Task(id), task.Completed)
	if st, err := waiter[0].Get(ctx); err != nil || st.Status != task.Completed {
		t.Fatalf("the waiter's Get: %+v, %v", st, err)
	}
	e, ok, err := j.Load(ctx, s.url, id)
	if err != nil || !ok || e.Status != task.Completed || !slices.Contains(e.AnsweredKeys, "confirm-delete") {
		t.Errorf("entry %+v (%v, %v); want completed, with confirm-delete answered", e, ok, err)
	}
}

// TestPrune: Prune removes the entries its function drops, from a file
// journal in one change and from any other Journal one by one, and says
// how many.
func TestPrune(t *testing.T) {
	for name, j := range map[string]client.Journal{
		"file":   client.FileJournal(filepath.Join(t.TempDir(), "journal.json")),
		"memory": client.MemoryJournal(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			for i := range 5 {
				if err := j.Save(ctx, entry(i)); err != nil {
					t.Fatal(err)
				}
			}
			n, err := client.Prune(ctx, j, func(e client.Entry) bool { return e.TaskID < "task-02" })
			if err != nil || n != 2 {
				t.Fatalf("Prune = %d, %v; want 2", n, err)
			}
			left, err := j.List(ctx)
			if err != nil || len(left) != 3 || slices.ContainsFunc(left, func(e client.Entry) bool { return e.TaskID < "task-02" }) {
				t.Errorf("left %+v, %v; want task-02 to task-04", left, err)
			}
		})
	}
}

// TestForget: Forget removes the entries it is given, identified by server
// and task id, or by server and key for a pending create, whatever their
// other fields; it keeps the same id on another server, and says which it
// removed (not one that is not in the journal). A failed write of a file
// journal removes none.
func TestForget(t *testing.T) {
	pending := func(url, key string) client.Entry {
		return client.Entry{ServerURL: url, Tool: "t", IdempotencyKey: key, CreatedAt: time.Date(2026, 7, 28, 9, 0, 0, 0, time.UTC)}
	}
	other := entry(1)
	other.ServerURL = "http://other/mcp"
	for name, j := range map[string]client.Journal{
		"file":   client.FileJournal(filepath.Join(t.TempDir(), "journal.json")),
		"memory": client.MemoryJournal(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			for _, e := range []client.Entry{entry(0), entry(1), entry(2), other, pending("http://s/mcp", "k1"), pending("http://other/mcp", "k1")} {
				if err := j.Save(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			removed, err := client.Forget(ctx, j,
				client.Entry{ServerURL: "http://s/mcp", TaskID: "task-01", Status: task.Completed}, // the status is not compared
				client.Entry{ServerURL: "http://s/mcp", IdempotencyKey: "k1"},
				client.Entry{ServerURL: "http://s/mcp", TaskID: "task-09"}, // not in the journal
			)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range removed {
				got = append(got, e.ServerURL+" "+e.TaskID+" "+e.IdempotencyKey+" "+string(e.Status))
			}
			if want := []string{"http://s/mcp  k1 ", "http://s/mcp task-01  working"}; !slices.Equal(got, want) {
				t.Errorf("removed %q, want %q", got, want)
			}
			left, err := j.List(ctx)
			var ids []string
			for _, e := range left {
				ids = append(ids, e.ServerURL+" "+e.TaskID+e.IdempotencyKey)
			}
			if want := []string{"http://other/mcp k1", "http://s/mcp task-00", "http://other/mcp task-01", "http://s/mcp task-02"}; err != nil || !slices.Equal(ids, want) {
				t.Errorf("left %q, %v; want %q", ids, err, want)
			}
		})
	}

	t.Run("FailedWrite", func(t *testing.T) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "journal.json")
		if err := client.FileJournal(path).Save(ctx, entry(1)); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		removed, err := client.Forget(ctx, client.FileJournalFailingRename(path, boom), entry(1))
		if !errors.Is(err, boom) || len(removed) != 0 {
			t.Errorf("Forget with a failing write = %v, %v; want none removed, %v", removed, err, boom)
		}
		if all, err := client.FileJournal(path).List(ctx); err != nil || len(all) != 1 {
			t.Errorf("journal after a failed Forget: %v, %v; want task-01", all, err)
		}
	})
}
