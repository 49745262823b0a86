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
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// Entry is what a [Journal] keeps of one task.
type Entry struct {
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
}

// Journal records the tasks a client created, so that a program can find
// them again after a restart ([Client.Resume]). Entries are keyed by
// server URL and task id. Implementations must be safe for concurrent use.
type Journal interface {
	// Save adds or replaces the entry of e.ServerURL and e.TaskID.
	Save(ctx context.Context, e Entry) error
	// Load returns the entry of a task, and false if there is none.
	Load(ctx context.Context, serverURL, taskID string) (Entry, bool, error)
	// List returns every entry.
	List(ctx context.Context) ([]Entry, error)
	// Remove deletes the entry of a task; removing a missing entry is not
	// an error.
	Remove(ctx context.Context, serverURL, taskID string) error
}

type journalKey struct{ url, id string }

// journalFile is the JSON document a file journal holds.
type journalFile struct {
	Version int     `json:"version"`
	Tasks   []Entry `json:"tasks"`
}

const journalVersion = 1

// FileJournal returns a [Journal] kept in the JSON file at path. Every
// change rewrites the file atomically (a temporary file in the same
// directory, fsync, rename, fsync of the directory), so a crash leaves
// either the old or the new journal, never a torn one. The file is
// re-read on every operation, so several Clients and processes may share
// it: each change reads, changes and rewrites it holding an exclusive
// flock(2) of path+".lock", so that changes made at once by two processes
// are both kept (where flock is missing, processes must take turns).
// Within a process it is safe for concurrent use. A missing file is an
// empty journal. The directory is created (0700) on the first write; the
// file and its lock file are 0600.
func FileJournal(path string) Journal {
	return &fileJournal{path: path}
}

type fileJournal struct {
	path string
	mu   sync.Mutex
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
	if f.Version != journalVersion {
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
		m[journalKey{e.ServerURL, e.TaskID}] = e
	}
	return m, nil
}

func (j *fileJournal) write(m map[journalKey]Entry) error {
	f := journalFile{Version: journalVersion, Tasks: sortedEntries(m)}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(j.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(j.path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
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
	if err := os.Rename(tmp.Name(), j.path); err != nil {
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
		m[journalKey{e.ServerURL, e.TaskID}] = e
		return true
	})
}

func (j *fileJournal) Remove(ctx context.Context, serverURL, taskID string) error {
	return j.change(ctx, func(m map[journalKey]Entry) bool {
		k := journalKey{serverURL, taskID}
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
	e, ok := m[journalKey{serverURL, taskID}]
	return e, ok, nil
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
	j.m[journalKey{e.ServerURL, e.TaskID}] = e
	return nil
}

func (j *memJournal) Load(_ context.Context, serverURL, taskID string) (Entry, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.m[journalKey{serverURL, taskID}]
	return e, ok, nil
}

func (j *memJournal) List(context.Context) ([]Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return sortedEntries(j.m), nil
}

func (j *memJournal) Remove(_ context.Context, serverURL, taskID string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.m, journalKey{serverURL, taskID})
	return nil
}

// sortedEntries returns the entries by creation, then server and id.
func sortedEntries(m map[journalKey]Entry) []Entry {
	out := make([]Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ServerURL, b.ServerURL), cmp.Compare(a.TaskID, b.TaskID))
	})
	return out
}
