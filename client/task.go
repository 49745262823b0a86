package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// TaskStatus is a task as tasks/get returns it (a DetailedTask).
type TaskStatus struct {
	TaskID        string
	Status        task.Status
	StatusMessage string
	// CreatedAt and LastUpdatedAt are zero if the server sent a time the
	// client cannot parse.
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	// TTLMs is the task's time to live from CreatedAt; nil means no limit.
	TTLMs *int64
	// PollIntervalMs is the server's suggested polling interval, if any.
	PollIntervalMs *int64
	// InputRequests are the outstanding requests of an input_required
	// task, by key. A 2025-11-25 server sends them as requests of its own
	// over tasks/result while [Task.Get] reads the task, for up to one
	// poll interval: there they may be fewer than the task's, or none yet;
	// the next read brings the rest.
	InputRequests map[string]*InputRequest
	// Result is the final result of a completed task; RawResult its JSON.
	Result    *mcp.CallToolResult
	RawResult json.RawMessage
	// Error is the JSON-RPC error of a failed task.
	Error *Error

	seenAt time.Time
}

// Terminal reports whether the task has ended: completed, failed or
// cancelled.
func (s *TaskStatus) Terminal() bool { return s.Status.Terminal() }

// SeenAt is when the client received this status.
func (s *TaskStatus) SeenAt() time.Time { return s.seenAt }

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func statusFromInfo(in *task.Info) *TaskStatus {
	return &TaskStatus{
		TaskID: in.TaskID, Status: in.Status, StatusMessage: in.StatusMessage,
		CreatedAt: parseTime(in.CreatedAt), LastUpdatedAt: parseTime(in.LastUpdatedAt),
		TTLMs: int64p(in.TTLMs), PollIntervalMs: int64p(in.PollIntervalMs), seenAt: now(),
	}
}

func int64p(m *task.Millis) *int64 {
	if m == nil {
		return nil
	}
	n := int64(*m)
	return &n
}

// Task is a handle on a task of one server. It is safe for concurrent use.
type Task struct {
	// ID is the task id.
	ID string
	// ServerURL is the endpoint the task lives on.
	ServerURL string
	// Tool is the tool the task runs, if known.
	Tool string

	c *Client

	mu      sync.Mutex
	last    *TaskStatus
	answers map[string]json.RawMessage // responses the InputHandler gave, by key
	sent    map[string]bool            // keys whose answers tasks/update delivered
	// inputIDs are the JSON-RPC ids of the requests a 2025-11-25 server
	// sent for the task, by input key.
	inputIDs map[string]json.RawMessage

	inputMu sync.Mutex // one input round at a time, so each key is asked once

	recordMu    sync.Mutex // orders journal writes
	entry       *Entry     // the journal's entry, once known
	entryLoaded bool
}

func (c *Client) newTask(id, tool string, last *TaskStatus) *Task {
	return &Task{ID: id, ServerURL: c.url, Tool: tool, c: c, last: last,
		answers: map[string]json.RawMessage{}, sent: map[string]bool{}, inputIDs: map[string]json.RawMessage{}}
}

// Task returns a handle on the task id of this client's server, such as
// one printed by another program. If the Journal has the task, status
// changes are recorded there.
func (c *Client) Task(id string) *Task { return c.newTask(id, "", nil) }

// Resume returns handles on the Journal's tasks of this client's server
// that were not seen to end, in the order of their creation. Calls whose
// reply was never seen are not among them: see [Client.Pending].
func (c *Client) Resume(ctx context.Context) ([]*Task, error) {
	if c.opts.Journal == nil {
		return nil, nil
	}
	entries, err := c.opts.Journal.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("resume: %w: %w", ErrJournal, err)
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.CreatedAt.Compare(b.CreatedAt) })
	var out []*Task
	for _, e := range entries {
		if e.ServerURL != c.url || e.Pending() || e.Status.Terminal() {
			continue
		}
		t := c.newTask(e.TaskID, e.Tool, nil)
		t.entry, t.entryLoaded = &e, true
		for _, k := range e.AnsweredKeys {
			t.sent[k] = true
		}
		out = append(out, t)
	}
	return out, nil
}

// Pending returns the Journal's pending creates of this client's server
// ([Entry.Pending]), in the order they were sent: calls whose outcome is
// unknown, because the program ended (or the call's context did) while a
// request of the call was on the wire, or its reply was lost. The server
// may or may not have made their tasks; [Client.Resend] finds out. A
// pending create whose task is in the journal already is removed, not
// returned (the journals of this package replace it when the task is
// saved; this covers other implementations of [Journal]).
func (c *Client) Pending(ctx context.Context) ([]Entry, error) {
	if c.opts.Journal == nil {
		return nil, nil
	}
	entries, err := c.opts.Journal.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("pending: %w: %w", ErrJournal, err)
	}
	made := map[string]bool{} // the keys of the tasks in the journal
	for _, e := range entries {
		if e.ServerURL == c.url && !e.Pending() && e.IdempotencyKey != "" {
			made[e.IdempotencyKey] = true
		}
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.CreatedAt.Compare(b.CreatedAt) })
	var out []Entry
	for _, e := range entries {
		switch {
		case e.ServerURL != c.url || !e.Pending():
		case made[e.IdempotencyKey]:
			if err := c.opts.Journal.Remove(ctx, e); err != nil {
				return nil, fmt.Errorf("pending: %w: %w", ErrJournal, err)
			}
		default:
			out = append(out, e)
		}
	}
	return out, nil
}

// Resend sends the pending create e (from [Client.Pending]) again, with
// its arguments and idempotency key, its input rounds answered through
// the InputHandler, and returns what [Client.CallTool] returns. A server
// that honours keys answers with the task the first request made, or
// makes it now if that request never arrived; either way the task's entry
// replaces e. But the server keeps a key only while the task it made lives
// (its TTL), and for the same principal (the same token): a call resent
// later, or with another token, may make a second task. A call the server
// answers with a result ran again, or for the first time (keys hold for
// tasks only); one it refuses with a JSON-RPC error made nothing: e is
// then removed. It stays while the outcome is still unknown (the server
// cannot be reached, a question goes unanswered). To a server that does
// not honour keys it is not sent: e is removed and the error wraps
// [ErrOutcomeUnknown]. Nor is it sent by a client that speaks 2025-11-25,
// whose requests carry no key, or that does not speak the Tasks extension
// (the error wraps ErrOutcomeUnknown; e stays). [Journal.Remove] drops an
// entry the program gives up on.
func (c *Client) Resend(ctx context.Context, e Entry) (*CallResult, error) {
	what := fmt.Sprintf("resend tools/call %s of %s", e.Tool, e.CreatedAt.Format(time.RFC3339))
	if !e.Pending() || e.ServerURL != c.url || e.IdempotencyKey == "" {
		return nil, fmt.Errorf("%s: not a pending create of %s", what, c.url)
	}
	if c.opts.Journal == nil {
		return nil, fmt.Errorf("%s: the client has no journal", what)
	}
	if c.noTasks {
		return nil, fmt.Errorf("%s: %w: the client does not speak the Tasks extension", what, ErrOutcomeUnknown)
	}
	if leg, _, err := c.knownProtocol(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	} else if leg != nil {
		return nil, fmt.Errorf("%s: %w: the client speaks %s, without idempotency keys", what, ErrOutcomeUnknown, LegacyProtocolVersion)
	}
	honours, err := c.honoursKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !honours {
		if err := c.opts.Journal.Remove(ctx, e); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", what, ErrJournal, err)
		}
		return nil, fmt.Errorf("%s: %w: the server does not honour idempotency keys", what, ErrOutcomeUnknown)
	}
	var args any
	if len(e.Args) > 0 {
		args = e.Args
	}
	res, err := c.callTool(ctx, e.Tool, args, c.opts.InputHandler, &e, "")
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	return res, nil
}

// Last returns the last status the client saw of the task (from
// tools/call or tasks/get), or nil.
func (t *Task) Last() *TaskStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// Get sends tasks/get and returns the task's current status. A task that
// does not exist, expired or belongs to someone else gives an error
// matching [ErrInvalidParams].
func (t *Task) Get(ctx context.Context) (*TaskStatus, error) {
	st, err := t.get(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.last = st
	t.mu.Unlock()
	t.record(ctx, st, nil)
	return st, nil
}

// get reads the task's status, in the server's protocol.
func (t *Task) get(ctx context.Context) (*TaskStatus, error) {
	if leg, err := t.c.protocol(ctx); err != nil || leg != nil {
		if err != nil {
			return nil, err
		}
		return t.legacyGet(ctx, leg)
	}
	k, err := newCall("tasks/get", map[string]string{"taskId": t.ID})
	if err != nil {
		return nil, err
	}
	raw, err := t.c.do(ctx, k)
	if err != nil {
		return nil, err
	}
	var d task.Detailed
	if err := completeResult(k.method, raw, &d); err != nil {
		return nil, err
	}
	return t.detailed(k.method, &d)
}

// detailed checks a DetailedTask of this task, from tasks/get or a
// notifications/tasks, and turns it into a status.
func (t *Task) detailed(method string, d *task.Detailed) (*TaskStatus, error) {
	if !d.Status.Valid() {
		return nil, invalidResult(method, "unknown task status %q", d.Status)
	}
	if d.TaskID != "" && d.TaskID != t.ID {
		return nil, invalidResult(method, "asked for task %s, got %s", t.ID, d.TaskID)
	}
	st := statusFromInfo(&d.Info)
	st.TaskID = t.ID
	var err error
	switch d.Status {
	case task.InputRequired:
		if st.InputRequests, err = decodeInputRequests(d.InputRequests, t.Tool, t.ID); err != nil {
			return nil, invalidResult(method, "%v", err)
		}
	case task.Completed:
		if len(d.Result) == 0 {
			return nil, invalidResult(method, "completed task %s has no result", t.ID)
		}
		st.RawResult = d.Result
		var r mcp.CallToolResult
		if err := json.Unmarshal(d.Result, &r); err != nil {
			return nil, invalidResult(method, "task %s result: %v", t.ID, err)
		}
		st.Result = &r
	case task.Failed:
		st.Error = &Error{Code: CodeInternalError, Message: "task failed without an error"}
		if d.Error != nil {
			st.Error = &Error{Code: d.Error.Code, Message: d.Error.Message, Data: d.Error.Data}
		}
	}
	return st, nil
}

// Update sends tasks/update with responses, by input key: values that
// marshal to JSON objects, such as *mcp.ElicitResult. Keys answered here
// are not passed to the InputHandler by a later Wait. To a 2025-11-25
// server each response goes as the client's answer to the server's
// request of that key.
func (t *Task) Update(ctx context.Context, responses map[string]any) error {
	enc := make(map[string]json.RawMessage, len(responses))
	for k, v := range responses {
		b, err := encodeResponse(k, v)
		if err != nil {
			return err
		}
		enc[k] = b
	}
	return t.update(ctx, enc)
}

func (t *Task) update(ctx context.Context, responses map[string]json.RawMessage) error {
	leg, err := t.c.protocol(ctx)
	switch {
	case err != nil:
		return err
	case leg != nil:
		err = t.legacyUpdate(ctx, leg, responses)
	default:
		var k *call
		if k, err = newCall("tasks/update", map[string]any{"taskId": t.ID, "inputResponses": responses}); err != nil {
			return err
		}
		var raw json.RawMessage
		if raw, err = t.c.do(ctx, k); err == nil {
			err = completeResult(k.method, raw, &struct{}{})
		}
	}
	if err != nil {
		return err
	}
	keys := sortedKeys(responses)
	t.mu.Lock()
	for _, key := range keys {
		t.answers[key] = responses[key]
		t.sent[key] = true
	}
	t.mu.Unlock()
	t.record(ctx, nil, keys)
	return nil
}

// Cancel sends tasks/cancel. Cancellation is cooperative: the task may
// still complete or fail; Wait reports how it ended. Cancelling a task that
// has ended is not an error.
func (t *Task) Cancel(ctx context.Context) error {
	k, err := newCall("tasks/cancel", map[string]string{"taskId": t.ID})
	if err != nil {
		return err
	}
	raw, err := t.c.do(ctx, k)
	if leg, _, _ := t.c.knownProtocol(ctx); leg != nil {
		// 2025-11-25 answers with the task, cancelled, and refuses a task
		// that has ended; the extension acknowledges both.
		if errors.Is(err, ErrInvalidParams) {
			if st, gerr := t.legacyGet(ctx, leg); gerr == nil && st.Terminal() {
				return nil
			}
		}
		return err
	}
	if err != nil {
		return err
	}
	return completeResult(k.method, raw, &struct{}{})
}

// record writes a status change (st) or newly answered keys to the
// Journal entry of the task, if the journal has one.
func (t *Task) record(ctx context.Context, st *TaskStatus, answered []string) {
	j := t.c.opts.Journal
	if j == nil {
		return
	}
	t.recordMu.Lock()
	defer t.recordMu.Unlock()
	if !t.loadEntry(ctx) {
		return
	}
	apply := func(e *Entry) (changed bool) {
		if st != nil && st.Status != e.Status && !st.seenAt.Before(e.SeenAt) {
			e.Status, e.StatusMessage, e.SeenAt = st.Status, st.StatusMessage, st.seenAt
			changed = true
		}
		for _, k := range answered {
			if !slices.Contains(e.AnsweredKeys, k) {
				e.AnsweredKeys = append(slices.Clone(e.AnsweredKeys), k)
				changed = true
			}
		}
		return changed
	}
	// Nothing new against the entry as this program last wrote or read
	// it: no journal I/O (a poll that sees the same status reads nothing).
	if probe := *t.entry; !apply(&probe) {
		return
	}
	// Another program may have changed the entry since ("mcptasks answer"
	// adds the keys it answered, "mcptasks tasks --prune" or Remove drops
	// it): the change goes on the entry as it is now.
	e := *t.entry
	if cur, ok, err := j.Load(ctx, e.ServerURL, e.TaskID); err == nil {
		if !ok {
			return
		}
		e = cur
	}
	if !apply(&e) {
		t.entry = &e
		return
	}
	if err := j.Save(ctx, e); err != nil {
		t.c.log.Warn("journal: save", "task", t.ID, "err", err)
		return
	}
	t.entry = &e
}

// loadEntry reads the task's Journal entry once, and takes the input keys
// it says were answered (by this program before a restart, or by another
// one such as "mcptasks answer") as delivered. It reports whether the
// entry is known; the caller holds recordMu.
func (t *Task) loadEntry(ctx context.Context) bool {
	j := t.c.opts.Journal
	if j == nil {
		return false
	}
	if !t.entryLoaded {
		e, ok, err := j.Load(ctx, t.ServerURL, t.ID)
		if err != nil {
			t.c.log.Warn("journal: load", "task", t.ID, "err", err)
			return false
		}
		t.entryLoaded = true
		if ok {
			t.entry = &e
			t.mu.Lock()
			for _, k := range e.AnsweredKeys {
				t.sent[k] = true
			}
			t.mu.Unlock()
		}
	}
	return t.entry != nil
}

// answeredBefore loads the journal's answered keys, if not done yet.
func (t *Task) answeredBefore(ctx context.Context) {
	t.recordMu.Lock()
	defer t.recordMu.Unlock()
	t.loadEntry(ctx)
}
