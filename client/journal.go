package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// Entry is what a [Journal] keeps of one task, or of a create whose reply
// the client has not seen yet (see [Entry.Pending]).
type Entry struct {
	// TaskID is the task's id; "" for a pending create.
	TaskID    string `json:"taskId"`
	ServerURL string `json:"serverUrl"`
	Tool      string `json:"tool"`
	// Args is the arguments JSON of the call; ArgsDigest its SHA-256
	// ("sha256:<hex>").
	Args       json.RawMessage `json:"args,omitempty"`
	ArgsDigest string          `json:"argsDigest,omitempty"`
	// Status and StatusMessage are the last the client saw, at SeenAt.
	Status        task.Status `json:"status"`
	StatusMessage string      `json:"statusMessage,omitempty"`
	SeenAt        time.Time   `json:"seenAt"`
	// CreatedAt is the task's createdAt.
	CreatedAt time.Time `json:"createdAt"`
	// AnsweredKeys are the input keys whose answers were delivered, so
	// that a resumed wait does not ask them again.
	AnsweredKeys []string `json:"answeredKeys,omitempty"`
	// Protocol is the MCP revision the task was created in, when it is
	// not 2026-07-28: LegacyProtocolVersion. A task is served in the
	// revision that created it (Options.ProtocolVersion).
	Protocol string `json:"protocol,omitempty"`
	// IdempotencyKey is the key the tools/call that made the task carried
	// ([task.MetaIdempotencyKey]); "" if it carried none.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// Pending reports whether e is a pending create: a tools/call saved before
// it was sent, whose task the client has not seen. [Client.CallTool]
// replaces it with the task's entry once the server answers with one, or
// removes it once the server answered without one; it stays when the
// outcome is unknown (the program ended while the call was on the wire, or
// a reply was lost), and [Client.Resend] sends it again with its
// IdempotencyKey.
func (e Entry) Pending() bool { return e.TaskID == "" }

// Journal records the tasks a client created, so that a program can find
// them again after a restart ([Client.Resume]). An entry is identified by
// its ServerURL and TaskID, and a pending create (no TaskID yet, see
// [Entry.Pending]) by its ServerURL and IdempotencyKey. Implementations
// must be safe for concurrent use.
type Journal interface {
	// Save adds or replaces e's entry. Saving an entry with a TaskID and an
	// IdempotencyKey also removes the pending create of that key, in the
	// same change: the create's reply was seen.
	Save(ctx context.Context, e Entry) error
	// Load returns the entry of a task, and false if there is none.
	Load(ctx context.Context, serverURL, taskID string) (Entry, bool, error)
	// List returns every entry.
	List(ctx context.Context) ([]Entry, error)
	// Remove deletes e's entry; removing a missing entry is not an error.
	Remove(ctx context.Context, e Entry) error
}

// journalKey identifies an entry: by task id, or for a pending create by
// its idempotency key.
type journalKey struct{ url, id, pendingKey string }

// keyOf returns e's journalKey.
func keyOf(e Entry) journalKey {
	if e.Pending() {
		return journalKey{url: e.ServerURL, pendingKey: e.IdempotencyKey}
	}
	return journalKey{url: e.ServerURL, id: e.TaskID}
}

// put saves e in m as [Journal.Save] says.
func put(m map[journalKey]Entry, e Entry) {
	m[keyOf(e)] = e
	if !e.Pending() && e.IdempotencyKey != "" {
		delete(m, journalKey{url: e.ServerURL, pendingKey: e.IdempotencyKey})
	}
}

// journalFile is the JSON document a file journal holds.
type journalFile struct {
	Version int     `json:"version"`
	Tasks   []Entry `json:"tasks"`
}

// journalVersion is the version of a file journal that holds a pending
// create; one without is written as version 1, as earlier releases wrote
// it (they refuse version 2, whose pending creates they would take for one
// task without an id).
const journalVersion = 2

// FileJournal returns a [Journal] kept in the JSON file at path. Every
// change rewrites the file atomically (a temporary file in the same
// directory, fsync, rename, fsync of the directory), so a crash leaves
// either the old or the new journal, never a torn one; a temporary file
// that a crashed writer left is removed by the first change of a later
// FileJournal of path, once it is older than ten minutes. The file is
// re-read on every operation, so several Clients and processes may share
// it: each change reads, changes and rewrites it holding an exclusive
// flock(2) of path+".lock", so that changes made at once by two processes
// are both kept (where flock is missing, processes must take turns).
// Within a process it is safe for concurrent use. A missing file is an
// empty journal. The directory is created (0700) on the first write; the
// file and its lock file are 0600.
func FileJournal(path string) Journal {
	return &fileJournal{path: path, rename: os.Rename}
}

type fileJournal struct {
	path   string
	rename func(oldpath, newpath string) error // os.Rename; tests make it fail
	mu     sync.Mutex
	swept  bool // stale temporary files looked for, by the first write; guarded by mu
}

// staleTempAge is the age (of its last write) past which a change of a
// [FileJournal] takes a temporary file of the journal for one that a
// writer which died before its rename left, and removes it.
//
// The journal's lock alone does not prove such a file unused, though
// this package writes them only holding it: release 0.1.0 wrote without
// the lock, builds without flock(2) take none, and flock may not reach
// across the hosts of a network file system. A writer holds its
// temporary file only while it writes and syncs it; ten minutes is far
// past that, and a stale file costs only disk space meanwhile.
const staleTempAge = 10 * time.Minute

// Names of a journal's temporary files: os.CreateTemp replaces the "*"
// of tempPrefix+base+".*"+tempSuffix with decimal digits.
const (
	tempPrefix = "."
	tempSuffix = ".tmp"
)

// isTempOf reports whether name is the name of a temporary file of the
// journal whose file is named base: "." + base + "." + digits + ".tmp".
// The temporary files of another journal in the directory ("journal.json"
// and "journal.json.1") never match each other's.
func isTempOf(name, base string) bool {
	digits, ok := strings.CutPrefix(name, tempPrefix+base+".")
	if !ok {
		return false
	}
	digits, ok = strings.CutSuffix(digits, tempSuffix)
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}

// removeStaleTemps removes the temporary files of j in dir older than
// staleTempAge. It is called holding the journal's lock, before the first
// write of j (a directory is read once per FileJournal, not per change);
// it is best effort: a file it cannot remove stays.
func (j *fileJournal) removeStaleTemps(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	base := filepath.Base(j.path)
	for _, d := range entries {
		if !d.Type().IsRegular() || !isTempOf(d.Name(), base) {
			continue
		}
		if fi, err := d.Info(); err == nil && time.Since(fi.ModTime()) > staleTempAge {
			_ = os.Remove(filepath.Join(dir, d.Name()))
		}
	}
}

func (j *fileJournal) read() (map[journalKey]Entry, error) {
	b, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[journalKey]Entry{}, nil
	}
	if err != nil {
		return nil, err
	}
	var f journalFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: not a journal: %w", j.path, err)
	}
	if f.Version != journalVersion && f.Version != 1 {
		return nil, fmt.Errorf("%s: journal version %d, want %d", j.path, f.Version, journalVersion)
	}
	m := make(map[journalKey]Entry, len(f.Tasks))
	for _, e := range f.Tasks {
		if len(e.Args) > 0 { // undo the file's indentation
			var buf bytes.Buffer
			if json.Compact(&buf, e.Args) == nil {
				e.Args = buf.Bytes()
			}
		}
		m[keyOf(e)] = e
	}
	return m, nil
}

func (j *fileJournal) write(m map[journalKey]Entry) error {
	f := journalFile{Version: 1, Tasks: sortedEntries(m)}
	for _, e := range f.Tasks {
		if e.Pending() {
			f.Version = journalVersion
			break
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(j.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if !j.swept {
		j.removeStaleTemps(dir)
		j.swept = true
	}
	tmp, err := os.CreateTemp(dir, tempPrefix+filepath.Base(j.path)+".*"+tempSuffix)
	if err != nil {
		return err
	}
	// A failed write leaves no temporary file; after the rename the
	// name is gone, and this fails harmlessly.
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := j.rename(tmp.Name(), j.path); err != nil {
		return err
	}
	// Make the rename durable. Some systems cannot sync a directory;
	// the rename itself is still atomic there.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func (j *fileJournal) change(ctx context.Context, f func(map[journalKey]Entry) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(j.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	m, err := j.read()
	if err != nil {
		return err
	}
	if !f(m) {
		return nil
	}
	return j.write(m)
}

func (j *fileJournal) Save(ctx context.Context, e Entry) error {
	return j.change(ctx, func(m map[journalKey]Entry) bool {
		put(m, e)
		return true
	})
}

func (j *fileJournal) Remove(ctx context.Context, e Entry) error {
	return j.change(ctx, func(m map[journalKey]Entry) bool {
		k := keyOf(e)
		_, ok := m[k]
		delete(m, k)
		return ok
	})
}

func (j *fileJournal) Load(ctx context.Context, serverURL, taskID string) (Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, false, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	m, err := j.read()
	if err != nil {
		return Entry{}, false, err
	}
	e, ok := m[journalKey{url: serverURL, id: taskID}]
	return e, ok && taskID != "", nil
}

func (j *fileJournal) List(ctx context.Context) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	m, err := j.read()
	if err != nil {
		return nil, err
	}
	return sortedEntries(m), nil
}

// MemoryJournal returns a [Journal] held in memory: it survives a Client,
// not a process. Useful in tests and for programs that only want
// [Client.Resume] across Clients.
func MemoryJournal() Journal { return &memJournal{m: map[journalKey]Entry{}} }

type memJournal struct {
	mu sync.Mutex
	m  map[journalKey]Entry
}

func (j *memJournal) Save(_ context.Context, e Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Args = slices.Clone(e.Args)
	e.AnsweredKeys = slices.Clone(e.AnsweredKeys)
	put(j.m, e)
	return nil
}

func (j *memJournal) Load(_ context.Context, serverURL, taskID string) (Entry, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.m[journalKey{url: serverURL, id: taskID}]
	return e, ok && taskID != "", nil
}

func (j *memJournal) List(context.Context) ([]Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return sortedEntries(j.m), nil
}

func (j *memJournal) Remove(_ context.Context, e Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.m, keyOf(e))
	return nil
}

// sortedEntries returns the entries by creation, then server and id.
func sortedEntries(m map[journalKey]Entry) []Entry {
	out := make([]Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, compareEntries)
	return out
}

// compareEntries orders entries by creation, then server and id.
func compareEntries(a, b Entry) int {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ServerURL, b.ServerURL), cmp.Compare(a.TaskID, b.TaskID),
		cmp.Compare(a.IdempotencyKey, b.IdempotencyKey))
}

// Prune removes from j the entries for which drop reports true, in one
// change of the file for a [FileJournal] (one Remove each for another
// Journal), and returns how many it removed. Entries are never removed on
// their own: a journal keeps every task until it is pruned (see
// "mcptasks tasks --prune") or forgotten ([Forget]).
func Prune(ctx context.Context, j Journal, drop func(Entry) bool) (int, error) {
	n := 0
	if fj, ok := j.(*fileJournal); ok {
		err := fj.change(ctx, func(m map[journalKey]Entry) bool {
			for k, e := range m {
				if drop(e) {
					delete(m, k)
					n++
				}
			}
			return n > 0
		})
		if err != nil {
			return 0, err
		}
		return n, nil
	}
	entries, err := j.List(ctx)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if !drop(e) {
			continue
		}
		if err := j.Remove(ctx, e); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Forget removes from j the entries of the given ones: each is identified
// as a [Journal] identifies it, by its ServerURL and TaskID, or for a
// pending create ([Entry.Pending]) by its ServerURL and IdempotencyKey;
// their other fields are not compared. The removal is one change of the
// file for a [FileJournal] (one Remove each for another Journal), as with
// [Prune]. Forget returns the entries it removed, as the journal held
// them, by creation time, then server and id; an entry that is no longer
// in the journal (its pending create was settled meanwhile, say) is not
// among them, and is not an error (for a Journal other than a
// [FileJournal], which removes each entry on its own, one that another
// program removed meanwhile may be among them).
//
// Forget is for what the journal cannot settle on its own: a task that
// its server no longer knows (expired, deleted, or another principal's:
// a server answers them alike, so a Client never drops them itself) or a
// pending create that [Client.Resend] cannot settle. No server is asked.
func Forget(ctx context.Context, j Journal, entries ...Entry) ([]Entry, error) {
	keys := make(map[journalKey]bool, len(entries))
	for _, e := range entries {
		keys[keyOf(e)] = true
	}
	var removed []Entry
	n, err := Prune(ctx, j, func(e Entry) bool {
		if !keys[keyOf(e)] {
			return false
		}
		removed = append(removed, e)
		return true
	})
	// Prune drops in the order it asks, and n counts the removals done.
	removed = removed[:n]
	slices.SortFunc(removed, compareEntries)
	return removed, err
}
