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
	// task, by key.
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
	fails    int // transient polling failures in a row

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
// that were not seen to end, in the order of their creation.
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
		if e.ServerURL != c.url || e.Status.Terminal() {
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
	if !d.Status.Valid() {
		return nil, invalidResult(k.method, "unknown task status %q", d.Status)
	}
	if d.TaskID != "" && d.TaskID != t.ID {
		return nil, invalidResult(k.method, "asked for task %s, got %s", t.ID, d.TaskID)
	}
	st := statusFromInfo(&d.Info)
	st.TaskID = t.ID
	switch d.Status {
	case task.InputRequired:
		if st.InputRequests, err = decodeInputRequests(d.InputRequests, t.Tool, t.ID); err != nil {
			return nil, invalidResult(k.method, "%v", err)
		}
	case task.Completed:
		if len(d.Result) == 0 {
			return nil, invalidResult(k.method, "completed task %s has no result", t.ID)
		}
		st.RawResult = d.Result
		var r mcp.CallToolResult
		if err := json.Unmarshal(d.Result, &r); err != nil {
			return nil, invalidResult(k.method, "task %s result: %v", t.ID, err)
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

// Wait polls the task until it ends and returns its result. It waits
// pollIntervalMs between polls, as the latest status says (clamped by
// Options.MinPollInterval and MaxPollInterval, Options.DefaultPollInterval
// when absent). Each new input request is passed to the InputHandler once
// and its answer sent with tasks/update.
//
// A completed task returns its result, which may have IsError set. A
// failed or cancelled task returns a *[TaskError]; input without an
// InputHandler an *[InputRequiredError]; an unknown or expired task an
// error matching [ErrInvalidParams]. Transient errors (transport, HTTP
// 5xx, -32603) are retried up to Options.MaxConsecutiveFailures in a row.
func (t *Task) Wait(ctx context.Context) (*mcp.CallToolResult, error) {
	timer := time.NewTimer(t.firstDelay(time.Now()))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		o := t.step(ctx)
		if o.done {
			return o.result, o.err
		}
		timer.Reset(o.next)
	}
}

// stepOutcome is the outcome of one polling round.
type stepOutcome struct {
	done   bool
	result *mcp.CallToolResult
	err    error
	next   time.Duration // when not done: the wait before the next round
}

// step polls once: tasks/get, then input handling for input_required.
func (t *Task) step(ctx context.Context) stepOutcome {
	st, err := t.Get(ctx)
	if err != nil {
		return t.failure(ctx, err)
	}
	t.mu.Lock()
	t.fails = 0
	t.mu.Unlock()
	switch st.Status {
	case task.Completed:
		return stepOutcome{done: true, result: st.Result}
	case task.Failed:
		return stepOutcome{done: true, err: &TaskError{TaskID: t.ID, Status: st.Status, StatusMessage: st.StatusMessage, Err: st.Error}}
	case task.Cancelled:
		return stepOutcome{done: true, err: &TaskError{TaskID: t.ID, Status: st.Status, StatusMessage: st.StatusMessage}}
	case task.InputRequired:
		if err := t.handleInput(ctx, st); err != nil {
			return t.failure(ctx, err)
		}
	}
	return stepOutcome{next: t.c.interval(st)}
}

// failure ends the wait, unless err is transient and the budget of
// consecutive failures is not spent.
func (t *Task) failure(ctx context.Context, err error) stepOutcome {
	if ctx.Err() != nil || !transient(err) {
		return stepOutcome{done: true, err: err}
	}
	t.mu.Lock()
	t.fails++
	n, last := t.fails, t.last
	t.mu.Unlock()
	if n >= t.c.opts.MaxConsecutiveFailures {
		return stepOutcome{done: true, err: fmt.Errorf("task %s: %d failures in a row: %w", t.ID, n, err)}
	}
	t.c.log.Warn("polling a task failed; retrying", "task", t.ID, "attempt", n, "err", err)
	return stepOutcome{next: t.c.interval(last)}
}

// handleInput answers the keys of st not answered before, then sends the
// answers not yet delivered.
func (t *Task) handleInput(ctx context.Context, st *TaskStatus) error {
	t.inputMu.Lock()
	defer t.inputMu.Unlock()
	pending := map[string]json.RawMessage{}
	missing := map[string]*InputRequest{}
	for _, key := range sortedKeys(st.InputRequests) {
		t.mu.Lock()
		a, have := t.answers[key]
		sent := t.sent[key]
		t.mu.Unlock()
		if sent {
			continue // the server has not caught up with the update yet
		}
		if !have {
			if t.c.opts.InputHandler == nil {
				missing[key] = st.InputRequests[key]
				continue
			}
			var err error
			if a, err = t.c.answer(ctx, key, st.InputRequests[key]); err != nil {
				return fmt.Errorf("task %s: %w", t.ID, err)
			}
			t.mu.Lock()
			t.answers[key] = a
			t.mu.Unlock()
		}
		pending[key] = a
	}
	if len(pending) > 0 {
		if err := t.update(ctx, pending); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return &InputRequiredError{TaskID: t.ID, Requests: missing}
	}
	return nil
}

// interval is the wait before the next poll after st.
func (c *Client) interval(st *TaskStatus) time.Duration {
	d := c.opts.DefaultPollInterval
	if st != nil && st.PollIntervalMs != nil && *st.PollIntervalMs > 0 {
		d = time.Duration(*st.PollIntervalMs) * time.Millisecond
	}
	return min(max(d, c.opts.MinPollInterval), c.opts.MaxPollInterval)
}

// firstDelay is the wait before the first poll of a wait starting at now:
// one interval after the last status seen, or none.
func (t *Task) firstDelay(now time.Time) time.Duration {
	t.mu.Lock()
	last := t.last
	t.mu.Unlock()
	if last == nil {
		return 0
	}
	return max(0, last.seenAt.Add(t.c.interval(last)).Sub(now))
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
	if !t.entryLoaded {
		e, ok, err := j.Load(ctx, t.ServerURL, t.ID)
		if err != nil {
			t.c.log.Warn("journal: load", "task", t.ID, "err", err)
			return
		}
		t.entryLoaded = true
		if ok {
			t.entry = &e
		}
	}
	if t.entry == nil {
		return
	}
	e := *t.entry
	changed := false
	if st != nil && st.Status != e.Status {
		e.Status, e.StatusMessage, e.SeenAt = st.Status, st.StatusMessage, st.seenAt
		changed = true
	}
	for _, k := range answered {
		if !slices.Contains(e.AnsweredKeys, k) {
			e.AnsweredKeys = append(slices.Clone(e.AnsweredKeys), k)
			changed = true
		}
	}
	if !changed {
		return
	}
	if err := j.Save(ctx, e); err != nil {
		t.c.log.Warn("journal: save", "task", t.ID, "err", err)
		return
	}
	t.entry = &e
}
