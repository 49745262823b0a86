package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// How often a blocked tasks/result reads its task: at first every
// legacyResultPollMin, doubling while nothing changes, up to
// legacyResultPollMax. legacyKeepAlive is the longest silence on its
// stream.
const (
	legacyResultPollMin = 50 * time.Millisecond
	legacyResultPollMax = time.Second
	legacyKeepAlive     = 15 * time.Second
)

// inputIDPrefix starts the JSON-RPC id of every input request the server
// sends: "t/<taskId>.<ask>/<input key>". The client echoes it in its
// answer, so that any replica can file the answer with its task
// (design/eras.md). ask tells one asking of the key from the others (see
// questionID): a question taken back and asked again gets a new id, as a
// requestor must not use an id twice in a session. Task ids hold no '.',
// keys may hold '/'. The answers to ids sent before ask was added,
// "t/<taskId>/<input key>", are still filed.
const inputIDPrefix = "t/"

// inputRequestID returns the id of input request key of task id, asked
// for the time ask names.
func inputRequestID(id, ask, key string) string { return inputIDPrefix + id + "." + ask + "/" + key }

// parseInputRequestID returns the task id, asking and input key of an
// input request id, of either form (ask is "" in the old one).
func parseInputRequestID(raw json.RawMessage) (id, ask, key string, ok bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", "", "", false
	}
	rest, found := strings.CutPrefix(s, inputIDPrefix)
	head, key, ok := strings.Cut(rest, "/")
	id, ask, hasAsk := strings.Cut(head, ".")
	return id, ask, key, found && ok && task.ValidID(id) && key != "" && (!hasAsk || ask != "")
}

// askedSeq returns the number (Seq) of the latest event of r's history
// that asked key, or 0 if the history holds none.
func askedSeq(r *task.Record, key string) int {
	key = task.HistoryKey(key)
	for i := len(r.History) - 1; i >= 0; i-- {
		if e := r.History[i]; e.Kind == task.HistoryInputRequested && slices.Contains(e.Keys, key) {
			return e.Seq
		}
	}
	return 0
}

// stale reports whether ask names an asking of key that r's history shows
// was taken back and asked again since. Old-form ids (no ask) and
// askings the history cannot place ("a…") are not stale.
func stale(r *task.Record, ask, key string) bool {
	n, err := strconv.Atoi(ask)
	cur := askedSeq(r, key)
	return err == nil && cur > 0 && n != cur
}

// questionID returns the id of the input request key of r, which r asks.
// Its ask is the number of the latest history event that asked key
// (askedSeq): the same for as long as the question is outstanding, on
// every stream of every replica, and another once it is taken back and
// asked again. Without such an event (the bounded history dropped it,
// after many others), the id is sent, the one this stream sent, if any,
// else "a" and the run's attempt. A new asking that the history does not
// show (an event lists at most task.MaxHistoryKeys keys) keeps the old id:
// an id used twice, in that rare case, rather than a person asked twice.
func questionID(r *task.Record, key, sent string) string {
	if n := askedSeq(r, key); n > 0 {
		return inputRequestID(r.ID, strconv.Itoa(n), key)
	}
	if sent != "" {
		return sent
	}
	return inputRequestID(r.ID, "a"+strconv.Itoa(r.Attempt), key)
}

// legacyTaskMethod serves tasks/get, tasks/result, tasks/cancel and
// tasks/list of 2025-11-25.
func (s *Server) legacyTaskMethod(lr *legacyRequest) {
	ctx := lr.r.Context()
	m := lr.msg
	if m.Method == methodList {
		s.legacyList(lr)
		return
	}
	var p struct {
		TaskID json.RawMessage `json:"taskId"`
	}
	if len(m.Params) > 0 && decodeJSON(m.Params, &p) != nil {
		writeError(lr.w, http.StatusOK, m.ID, codeInvalidParams, "params must be an object with taskId")
		return
	}
	id, err := taskID(p.TaskID)
	if err != nil {
		writeJSON(lr.w, http.StatusOK, m.ID, "error", err)
		return
	}
	if m.Method == methodResult {
		// It waits for the task, holding its body: a stream.
		release, ok := s.openStream(lr.w, lr.held, m.ID, lr.size)
		if !ok {
			return
		}
		defer release()
		s.legacyResult(lr, id)
		return
	}
	if m.Method == methodGet && !s.pollAllowed(lr.w, m.ID, lr.principal, id) {
		return
	}
	get := s.legacyGet
	if m.Method == methodCancel {
		get = s.legacyCancel
	}
	r, err := get(ctx, lr.principal, id)
	if err != nil {
		writeJSON(lr.w, http.StatusOK, m.ID, "error", err)
		return
	}
	writeJSON(lr.w, http.StatusOK, m.ID, "result", r.Legacy())
}

// legacyCancel cancels the principal's task before it returns, as
// 2025-11-25 requires; a terminal task gets -32602.
func (s *Server) legacyCancel(ctx context.Context, principal, id string) (*task.Record, error) {
	r, err := s.legacyGet(ctx, principal, id)
	if err != nil {
		return nil, err
	}
	if !r.Status.Terminal() {
		if r, err = s.eng.Load().CancelNow(ctx, principal, id); err != nil {
			return nil, s.taskError(methodCancel, err)
		}
		if r.Status == task.Cancelled {
			s.log.Info("task cancelled", "task", id)
			return r, nil
		}
	}
	return nil, invalidParams("Cannot cancel task: already in terminal status '%s'", r.LegacyStatus())
}

// legacyResult serves tasks/result: the result of a terminal task at once,
// as JSON; otherwise an SSE stream that carries the task's input requests
// and status notifications until the result ends it.
func (s *Server) legacyResult(lr *legacyRequest, id string) {
	ctx := lr.r.Context()
	var (
		stream   *sseStream            // nil until the first event
		sent     = map[string]string{} // input key -> id of the request sent
		last     [3]string             // status, message, lastUpdatedAt last seen
		delay    = legacyResultPollMin
		wait     = time.NewTimer(0)
		lastSent = time.Now()
	)
	defer wait.Stop()
	reply := func(key string, v any) {
		if stream == nil {
			writeJSON(lr.w, http.StatusOK, lr.msg.ID, key, v)
			return
		}
		stream.send(lr.msg.ID, "", key, v)
	}
	// cancelGone tells the client to stop asking the questions it was sent
	// that r no longer asks and that got no answer: taken back by the
	// handler (and maybe asked again since: then under another id), or
	// left when the task ended.
	cancelGone := func(r *task.Record) {
		for _, key := range slices.Sorted(maps.Keys(sent)) {
			_, asked := r.InputRequests[key]
			_, answered := r.Answers[key]
			if answered || asked && questionID(r, key, sent[key]) == sent[key] {
				continue
			}
			stream.send(nil, "notifications/cancelled", "params", map[string]string{
				"requestId": sent[key], "reason": "The task no longer asks for this input."})
			delete(sent, key) // asked again: sent again, under its new id
			lastSent = time.Now()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.ending:
			// The server is shutting down (EndSubscriptions): the wait
			// ends with an error the client retries, not a cut stream.
			reply("error", &jsonrpc.Error{Code: codeInternalError, Message: "the server is shutting down; send tasks/result again"})
			return
		case <-wait.C:
		}
		r, err := s.legacyGet(ctx, lr.principal, id)
		if err != nil {
			reply("error", err)
			return
		}
		lt := r.Legacy()
		if seen := [3]string{string(lt.Status), lt.StatusMessage, lt.LastUpdatedAt}; seen != last {
			if stream != nil {
				stream.send(nil, "notifications/tasks/status", "params", lt)
				lastSent = time.Now()
			}
			last, delay = seen, legacyResultPollMin
		}
		// The reply carries the result: held until it is written, as the
		// result of tasks/get is. One that does not fit waits below, on
		// the stream, for room: an error here would be taken for the
		// tool's (tasks/result answers what the call would have).
		cancelGone(r) // nothing was sent before the stream
		if r.Status.Terminal() && lr.held.take(r.Size()) {
			res, rpcErr := r.LegacyResult()
			switch {
			case res != nil:
				reply("result", res)
			case rpcErr != nil:
				reply("error", rpcErr)
			default:
				reply("error", &jsonrpc.Error{Code: codeInternalError, Message: fmt.Sprintf("Task %s was cancelled; it has no result", id)})
			}
			return
		}
		if stream == nil {
			stream = startSSE(lr.w)
		}
		for _, key := range slices.Sorted(maps.Keys(r.InputRequests)) { // none once ended
			if sent[key] != "" {
				continue
			}
			method, params, err := legacyInputRequest(r.InputRequests[key], id)
			if err != nil {
				s.log.Error("input request", "task", id, "key", key, "err", err)
				continue
			}
			sent[key] = questionID(r, key, "")
			stream.request(sent[key], method, params)
			lastSent = time.Now()
		}
		if time.Since(lastSent) >= legacyKeepAlive {
			stream.comment("keep-alive")
			lastSent = time.Now()
		}
		if r.Status.Terminal() { // its result waits for room in the budget
			wait.Reset(busyRetry)
			continue
		}
		wait.Reset(delay)
		delay = min(2*delay, legacyResultPollMax)
	}
}

// legacyInputRequest returns the method and params of a stored input
// request ({"method":…,"params":…}), its params with the related-task
// _meta that 2025-11-25 requires.
func legacyInputRequest(raw json.RawMessage, id string) (string, json.RawMessage, error) {
	var ir struct {
		Method string                     `json:"method"`
		Params map[string]json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &ir); err != nil {
		return "", nil, err
	}
	if ir.Params == nil {
		ir.Params = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := ir.Params["_meta"]; ok {
		_ = json.Unmarshal(m, &meta)
	}
	meta[task.MetaRelatedTask], _ = json.Marshal(map[string]string{"taskId": id})
	ir.Params["_meta"], _ = json.Marshal(meta)
	params, err := json.Marshal(ir.Params)
	return ir.Method, params, err
}

// legacyAnswer files the client's response to an input request with its
// task, through the store, whichever replica asked. The reply is 202 for
// every id of the server's form, whether the task took the answer or not
// (it may have been answered already, or belong to someone else).
//
// A response the task cannot take must not leave it waiting for ever (a
// 2025-11-25 client asks once, and then blocks in tasks/result): an error
// response, or a result the request's checks refuse, to an elicitation
// is filed as its cancel action; to another request (sampling, roots),
// which has no such action, it cancels the task.
func (s *Server) legacyAnswer(lr *legacyRequest) {
	m := lr.msg
	id, ask, key, ok := parseInputRequestID(m.ID)
	if !ok {
		writeError(lr.w, http.StatusBadRequest, nil, codeInvalidRequest, "Invalid request: a response to a request this server did not send")
		return
	}
	ctx := lr.r.Context()
	if r, err := s.legacyGet(ctx, lr.principal, id); err == nil && stale(r, ask, key) {
		// A late response to a question taken back and asked again
		// since: it does not answer the new one.
		s.log.Info("response to an earlier asking of an input request ignored", "task", id, "key", key)
	} else if err == nil {
		var ir struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(r.InputRequests[key], &ir)
		why := "" // why the task cannot take the response, if it cannot
		if m.Error != nil || !isJSONObject(m.Result) {
			why = "the client answered with an error"
		} else if _, err := s.eng.Load().Update(ctx, lr.principal, id, map[string]json.RawMessage{key: m.Result}, checkAnswer); err != nil {
			var bad *store.AnswerError
			if errors.As(err, &bad) {
				why = "the answer does not fit the request: " + bad.Err.Error()
			} else {
				s.log.Warn("answer input request", "task", id, "key", key, "err", err)
			}
		}
		switch {
		case why == "":
		case ir.Method == "elicitation/create":
			s.log.Info("input request taken as cancelled", "task", id, "key", key, "why", why)
			if _, err := s.eng.Load().Update(ctx, lr.principal, id, map[string]json.RawMessage{key: json.RawMessage(`{"action":"cancel"}`)}, nil); err != nil {
				s.log.Warn("answer input request", "task", id, "key", key, "err", err)
			}
		case ir.Method != "":
			s.log.Info("task cancelled: its input request was refused", "task", id, "key", key, "why", why)
			if _, err := s.eng.Load().CancelNow(ctx, lr.principal, id); err != nil {
				s.log.Warn("cancel task", "task", id, "err", err)
			}
		}
	}
	lr.w.WriteHeader(http.StatusAccepted)
}

// legacyListLimit is the most tasks of one tasks/list page.
const legacyListLimit = store.DefaultListLimit

// legacyListResult is the result of tasks/list.
type legacyListResult struct {
	Tasks      []task.LegacyTask `json:"tasks"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// legacyList serves tasks/list: a page of the caller's 2025-11-25 tasks,
// newest first, through the store's list. A page may be short, even
// empty, and still have a nextCursor (the store examines a bounded number
// of tasks per call, and the other era's tasks are left out); following
// nextCursor lists every task once.
func (s *Server) legacyList(lr *legacyRequest) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(lr.msg.Params) > 0 && decodeJSON(lr.msg.Params, &p) != nil {
		writeError(lr.w, http.StatusOK, lr.msg.ID, codeInvalidParams, "params.cursor must be a string")
		return
	}
	lp := engine.ListParams{Principal: lr.principal, Limit: legacyListLimit}
	if p.Cursor != nil {
		lp.Cursor = *p.Cursor
	}
	page, err := s.eng.Load().List(lr.r.Context(), lp)
	switch {
	case errors.Is(err, store.ErrBadCursor):
		writeError(lr.w, http.StatusOK, lr.msg.ID, codeInvalidParams, "Failed to list tasks: Invalid cursor")
		return
	case err != nil:
		writeJSON(lr.w, http.StatusOK, lr.msg.ID, "error", s.taskError(methodList, err))
		return
	}
	res := legacyListResult{Tasks: []task.LegacyTask{}, NextCursor: page.Next}
	for _, r := range page.Tasks {
		if isLegacyTask(r) {
			res.Tasks = append(res.Tasks, r.Legacy())
		}
	}
	writeJSON(lr.w, http.StatusOK, lr.msg.ID, "result", res)
}
