package client

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// legacyQuiet is how long a 2025-11-25 poll of a task that needs input
// waits for more questions after the last one arrived.
const legacyQuiet = 50 * time.Millisecond

// legacyGet is Get for a 2025-11-25 server. The status comes from
// tasks/get. A task that ended is read with tasks/result: a tool result
// makes it completed (a result with isError included, which that era calls
// failed), a JSON-RPC error failed. A task that needs input is asked with
// tasks/result, and the requests the server sends on that stream (or on
// the session's GET stream) are the status's InputRequests, keyed by their
// JSON-RPC ids.
func (t *Task) legacyGet(ctx context.Context, leg *legacy) (*TaskStatus, error) {
	st, err := t.legacyStatus(ctx, leg)
	if err != nil {
		return nil, err
	}
	switch st.Status {
	case task.Completed, task.Failed:
		res, err := leg.do(ctx, t.c, t.resultCall(), nil)
		if err := t.legacyOutcome(st, res, err); err != nil {
			return nil, err
		}
	case task.InputRequired:
		if err := t.legacyInput(ctx, leg, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (t *Task) resultCall() *call {
	k, _ := newCall("tasks/result", map[string]string{"taskId": t.ID})
	return k
}

// legacyOutcome sets st from what tasks/result returned: res, or the
// JSON-RPC error err of a task that failed (tasks/get said so, or the task
// ended while tasks/result waited for it). Other errors, and any error for
// a task that tasks/get said completed, are returned: the poll failed, not
// the task.
func (t *Task) legacyOutcome(st *TaskStatus, res json.RawMessage, err error) error {
	var re *Error
	switch {
	case st.Status != task.Completed && errors.As(err, &re):
		st.Status = task.Failed
		st.Error = &Error{Code: re.Code, Message: re.Message, Data: re.Data}
		return nil
	case err != nil:
		return err
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		return invalidResult("tasks/result", "task %s result: %v", t.ID, err)
	}
	st.Status, st.Result, st.RawResult = task.Completed, &r, res
	return nil
}

// legacyStatus reads the task's status with a 2025-11-25 tasks/get alone:
// without its result or its questions.
func (t *Task) legacyStatus(ctx context.Context, leg *legacy) (*TaskStatus, error) {
	k, err := newCall("tasks/get", map[string]string{"taskId": t.ID})
	if err != nil {
		return nil, err
	}
	raw, err := leg.do(ctx, t.c, k, nil)
	if err != nil {
		return nil, err
	}
	var lt task.LegacyTask
	if err := json.Unmarshal(raw, &lt); err != nil {
		return nil, invalidResult(k.method, "%v", err)
	}
	if !lt.Status.Valid() {
		return nil, invalidResult(k.method, "unknown task status %q", lt.Status)
	}
	if lt.TaskID != "" && lt.TaskID != t.ID {
		return nil, invalidResult(k.method, "asked for task %s, got %s", t.ID, lt.TaskID)
	}
	st := statusFromLegacy(&lt)
	st.TaskID = t.ID
	return st, nil
}

// legacyInput opens tasks/result, and the session's GET stream, to read the
// questions of a task that needs input: until no new one came for
// legacyQuiet, for at most one poll interval, or until the task ends (then
// st is its outcome).
func (t *Task) legacyInput(ctx context.Context, leg *legacy, st *TaskStatus) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		reqs = map[string]*InputRequest{}
		came = make(chan struct{}, 1)
	)
	onRequest := func(m *message) {
		var rel struct {
			Meta map[string]struct {
				TaskID string `json:"taskId"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(m.Params, &rel)
		if r, ok := rel.Meta[task.MetaRelatedTask]; ok && r.TaskID != t.ID {
			return // another task's question
		}
		if leg.pong(ctx, t.c, m) {
			return
		}
		key, req, err := inputRequestOf(m, t.Tool, t.ID)
		if err != nil {
			t.c.log.Warn("ignoring a request of the server", "task", t.ID, "err", err)
			return
		}
		mu.Lock()
		reqs[key] = req
		mu.Unlock()
		t.mu.Lock()
		t.inputIDs[key] = m.ID
		t.mu.Unlock()
		select {
		case came <- struct{}{}:
		default:
		}
	}
	// The GET stream first: a server that sends its questions there (the
	// TypeScript SDK's example does) sends them as tasks/result starts.
	ready := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() { defer wg.Done(); leg.listen(ctx, t.c, ready, onRequest) }()
	select {
	case <-ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	type outcome struct {
		res json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err := leg.do(ctx, t.c, t.resultCall(), onRequest)
		done <- outcome{res, err}
	}()
	bound := time.NewTimer(t.c.interval(st))
	defer bound.Stop()
	quiet := time.NewTimer(time.Hour)
	defer quiet.Stop()
	for {
		select {
		case o := <-done:
			if ctx.Err() == nil {
				return t.legacyOutcome(st, o.res, o.err)
			}
		case <-came:
			quiet.Reset(legacyQuiet)
			continue
		case <-quiet.C:
		case <-bound.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		st.InputRequests = reqs
		mu.Unlock()
		return nil
	}
}

// legacyUpdate sends each response as the client's JSON-RPC response to
// the server's request of that key.
func (t *Task) legacyUpdate(ctx context.Context, leg *legacy, responses map[string]json.RawMessage) error {
	for _, key := range sortedKeys(responses) {
		t.mu.Lock()
		id, ok := t.inputIDs[key]
		t.mu.Unlock()
		if !ok {
			id = idOfKey(key) // asked of another process: the key is the id
		}
		if err := leg.respond(ctx, t.c, id, responses[key]); err != nil {
			return err
		}
	}
	return nil
}
