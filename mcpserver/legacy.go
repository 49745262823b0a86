package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// This file and the other legacy_*.go files serve the experimental tasks
// of MCP 2025-11-25 (the tasks of VS Code and of the TypeScript SDK v1) on
// the same engine and store as the extension. The era is stateful: a
// client initializes once and declares its capabilities there. Here the
// Mcp-Session-Id is a signed token that carries them (legacy_session.go),
// so every replica serves every request of a session without shared
// session state; the questions of a task reach the client as
// elicitation/create requests on its tasks/result stream, and the answer,
// POSTed to any replica, is filed through the store. design/eras.md says
// what happens across eras.

// Method names of 2025-11-25 that only this era has.
const (
	methodResult = "tasks/result"
	methodList   = "tasks/list"
)

// sdkLegacyMethod reports whether method is a client-to-server request of
// 2025-11-25 that go-sdk serves; the others get -32601.
func sdkLegacyMethod(method string) bool {
	switch method {
	case "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe", "completion/complete", "logging/setLevel":
		return true
	}
	return false
}

// legacyTasksCapability is the server capability of 2025-11-25 tasks.
const legacyTasksCapability = `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`

// legacyMessage is a JSON-RPC message of a 2025-11-25 client: a request, a
// notification, or the response to one of the server's input requests.
type legacyMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// legacyRequest is one request of a 2025-11-25 session.
type legacyRequest struct {
	w         http.ResponseWriter
	r         *http.Request
	msg       *legacyMessage
	principal string
	session   *legacySession
	size      int   // of the request's body
	held      *held // its share of the in-flight budget
}

// serveLegacy serves the POST r if it belongs to a 2025-11-25 session
// (an initialize for that version, or a request with that
// MCP-Protocol-Version) and needs more than go-sdk's stateless handler
// gives: initialize, tools/list, task-augmented tools/call, tasks/*, the
// answers to input requests, and unknown methods. It reports false for
// every other request, which then goes its usual way. next is go-sdk's
// handler; principal is the request's (the guard decides it), body is r's
// body, already read, and h its share of the in-flight budget.
func (s *Server) serveLegacy(w http.ResponseWriter, r *http.Request, principal string, body []byte, h *held, next http.Handler) bool {
	v := r.Header.Get("MCP-Protocol-Version")
	if v != "" && v != task.LegacyProtocolVersion {
		return false
	}
	var m legacyMessage
	if decodeJSON(body, &m) != nil || m.JSONRPC != "2.0" {
		return false // the guard reports it
	}
	if v == "" && !initializeLegacyOrLater(&m) {
		return false
	}
	if m.Method != "" && m.ID != nil { // a request (not an answer): its id as every reply carries it
		id, ok := replyID(m.ID)
		if !ok {
			writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, invalidID)
			return true
		}
		m.ID = id
	}
	lr := &legacyRequest{w: w, r: r, msg: &m, principal: principal, size: len(body), held: h}
	if m.Method == "initialize" {
		s.legacyInitialize(lr, body, next)
		return true
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		writeError(w, http.StatusBadRequest, m.ID, codeInvalidRequest, "Bad Request: Mcp-Session-Id header is required; send initialize first")
		return true
	}
	ls, err := decodeSession(s.sessionKey, sid, lr.principal)
	if err != nil {
		// The transport's answer for an unknown session: the client
		// initializes again.
		writeError(w, http.StatusNotFound, m.ID, codeInvalidRequest, "Session not found: initialize again")
		return true
	}
	lr.session = ls
	switch {
	case m.Method == "" && m.ID != nil:
		s.legacyAnswer(lr)
		return true
	case m.ID == nil:
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if decodeJSON(m.Params, &p) == nil && p.RequestID != nil {
				s.legacyCalls.cancel(legacyCallKey(lr.principal, sid, p.RequestID))
			}
		}
		return false // a notification: go-sdk acknowledges it
	}
	switch m.Method {
	case "tools/list":
		s.legacyToolsList(lr, body, next)
		return true
	case "tools/call":
		return s.legacyCall(lr)
	case methodGet, methodResult, methodCancel, methodList:
		s.legacyTaskMethod(lr)
		return true
	}
	if sdkLegacyMethod(m.Method) {
		return false
	}
	writeError(w, http.StatusOK, m.ID, codeMethodNotFound, "Method not found: "+m.Method)
	return true
}

// initializeLegacyOrLater reports whether m is an initialize that asks for
// 2025-11-25 or a later version (versions are dates, and compare as
// strings; a draft's name sorts after them): go-sdk settles a later one
// on 2025-11-25 (a client newer than the server asks for its newest),
// and then the session is ours to give. Older versions are go-sdk's.
func initializeLegacyOrLater(m *legacyMessage) bool {
	if m.Method != "initialize" {
		return false
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	return decodeJSON(m.Params, &p) == nil && p.ProtocolVersion >= task.LegacyProtocolVersion
}

// legacyInitialize lets go-sdk answer initialize, then adds the tasks
// capability (and drops the extensions, which mean nothing under
// 2025-11-25) and issues the session id.
func (s *Server) legacyInitialize(lr *legacyRequest, body []byte, next http.Handler) {
	var p struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	_ = decodeJSON(lr.msg.Params, &p)
	caps, err := sessionCapabilities(p.Capabilities)
	if err != nil {
		writeError(lr.w, http.StatusOK, lr.msg.ID, codeInvalidParams, err.Error())
		return
	}
	sid, err := encodeSession(s.sessionKey, &legacySession{Principal: lr.principal, Capabilities: caps, Nonce: newSessionNonce()})
	if err != nil {
		writeError(lr.w, http.StatusOK, lr.msg.ID, codeInternalError, "cannot issue a session id")
		return
	}
	s.patchResult(lr, body, next, func(res map[string]json.RawMessage) bool {
		var version string
		if json.Unmarshal(res["protocolVersion"], &version) != nil || version != task.LegacyProtocolVersion {
			return false
		}
		c := map[string]json.RawMessage{}
		_ = json.Unmarshal(res["capabilities"], &c)
		delete(c, "extensions")
		c["tasks"] = json.RawMessage(legacyTasksCapability)
		res["capabilities"], _ = json.Marshal(c)
		lr.w.Header().Set("Mcp-Session-Id", sid)
		return true
	})
}

// legacyToolsList lets go-sdk answer tools/list, then adds each
// task-capable tool's execution.taskSupport.
func (s *Server) legacyToolsList(lr *legacyRequest, body []byte, next http.Handler) {
	s.patchResult(lr, body, next, func(res map[string]json.RawMessage) bool {
		var tools []map[string]json.RawMessage
		if json.Unmarshal(res["tools"], &tools) != nil {
			return false
		}
		for _, t := range tools {
			var name string
			_ = json.Unmarshal(t["name"], &name)
			if e := s.tools[name]; e != nil {
				if support := e.taskSupport(); support != "" {
					t["execution"], _ = json.Marshal(map[string]string{"taskSupport": support})
				}
			}
		}
		res["tools"], _ = json.Marshal(tools)
		return true
	})
}

// taskSupport returns the tool's 2025-11-25 execution.taskSupport: a tool
// whose mode is decided per call may always run as a task, and one that
// asks the client for input (see asksClient) must.
func (e *toolEntry) taskSupport() string {
	switch {
	case e.opts.Task == TaskNever && e.opts.Decide == nil:
		return ""
	case e.opts.Task == TaskRequired || !e.asksClient().empty():
		return "required"
	}
	return "optional"
}

// asksClient returns what the tool's Requires names that it asks the
// client for (elicitation, sampling, roots). In 2025-11-25 a call carries
// such a question only in a task, on its tasks/result stream: a
// synchronous call is served by go-sdk's stateless handler, which cannot
// send the client a request.
func (e *toolEntry) asksClient() needs {
	n := e.requires
	n.extensions = nil
	return n
}

// asksFor says, for an error message, what the tool asks the client for
// and why 2025-11-25 then needs a task, or returns "" if it asks nothing.
func (e *toolEntry) asksFor() string {
	asks := e.asksClient()
	if asks.empty() {
		return ""
	}
	return "asks the client for input (" + strings.Join(asks.names(), ", ") + "), which a 2025-11-25 call carries only in a task"
}

// patchResult serves the request through next into a buffer, lets patch
// change the result of the reply, and writes the reply as JSON. A reply
// that is an error, or that patch declines, is written unchanged.
func (s *Server) patchResult(lr *legacyRequest, body []byte, next http.Handler, patch func(map[string]json.RawMessage) bool) {
	rec := &bufferedWriter{header: http.Header{}, status: http.StatusOK}
	r := lr.r.Clone(lr.r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	next.ServeHTTP(rec, r)
	m, ok := rec.message()
	if ok && m.Result != nil {
		res := map[string]json.RawMessage{}
		if json.Unmarshal(m.Result, &res) == nil && patch(res) {
			writeJSON(lr.w, http.StatusOK, lr.msg.ID, "result", res)
			return
		}
	}
	for k, vs := range rec.header {
		lr.w.Header()[k] = vs
	}
	lr.w.WriteHeader(rec.status)
	_, _ = lr.w.Write(rec.buf.Bytes())
}

// bufferedWriter is an http.ResponseWriter that keeps the response.
type bufferedWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header         { return b.header }
func (b *bufferedWriter) Write(p []byte) (int, error) { return b.buf.Write(p) }
func (b *bufferedWriter) WriteHeader(status int)      { b.status = status }

// Flush lets go-sdk stream its SSE reply into the buffer.
func (b *bufferedWriter) Flush() {}

// message returns the JSON-RPC response in the buffered reply: the body of
// a JSON reply, or the first response among the events of an SSE one.
func (b *bufferedWriter) message() (*legacyMessage, bool) {
	mt, _, _ := mime.ParseMediaType(b.header.Get("Content-Type"))
	if mt == "application/json" {
		var m legacyMessage
		return &m, json.Unmarshal(b.buf.Bytes(), &m) == nil
	}
	if mt != "text/event-stream" {
		return nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, int(DefaultMaxBodyBytes))
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		var m legacyMessage
		if json.Unmarshal(bytes.TrimSpace(data), &m) == nil && m.Method == "" {
			return &m, true
		}
	}
	return nil, false
}

// legacyCall serves a 2025-11-25 tools/call that go-sdk cannot: one that
// asks for a task (params.task), and one of a tool that requires a task
// but does not ask for it. It reports false for the others (plain calls),
// which go-sdk serves synchronously.
func (s *Server) legacyCall(lr *legacyRequest) bool {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      json.RawMessage `json:"task"`
		Meta      json.RawMessage `json:"_meta"`
	}
	if decodeJSON(lr.msg.Params, &p) != nil {
		return false // go-sdk reports the bad params
	}
	if err := s.limits.checkArguments(p.Name, p.Arguments); err != nil {
		writeJSON(lr.w, http.StatusOK, lr.msg.ID, "error", err) // before a Decide or a schema reads them
		return true
	}
	ctx := lr.r.Context()
	t := s.tools[p.Name]
	if len(p.Task) == 0 || string(p.Task) == "null" {
		if t == nil {
			return false
		}
		switch asks := t.asksFor(); {
		case asks != "" && t.taskSupport() == "":
			writeError(lr.w, http.StatusOK, lr.msg.ID, codeInvalidRequest,
				"Tool "+p.Name+" "+asks+", and it is not task-capable; call it with a 2026-07-28 client")
			return true
		case asks != "":
			writeError(lr.w, http.StatusOK, lr.msg.ID, codeMethodNotFound,
				"Tool "+p.Name+" requires task augmentation (taskSupport: required): it "+asks+"; call it with params.task")
			return true
		case t.mode(ctx, p.Arguments) == TaskRequired:
			writeError(lr.w, http.StatusOK, lr.msg.ID, codeMethodNotFound,
				"Tool "+p.Name+" requires task augmentation (taskSupport: required); call it with params.task")
			return true
		}
		return false
	}
	if !isJSONObject(p.Task) {
		writeError(lr.w, http.StatusOK, lr.msg.ID, codeInvalidParams, "params.task must be an object ({} or {\"ttl\": ms})")
		return true
	}
	if t == nil || t.taskSupport() == "" {
		advice := "; call it without params.task"
		if t != nil {
			if asks := t.asksFor(); asks != "" {
				advice = ": it " + asks + "; call it with a 2026-07-28 client"
			}
		}
		writeError(lr.w, http.StatusOK, lr.msg.ID, codeMethodNotFound,
			"Tool "+p.Name+" does not support task augmentation (taskSupport: forbidden)"+advice)
		return true
	}
	// What the tool needs of the client, declared once, in initialize
	// (2025-11-25 requests carry no capabilities of their own).
	if missing := t.requires.minus(parseCaps(lr.session.Capabilities).has()); !missing.empty() {
		writeError(lr.w, http.StatusOK, lr.msg.ID, codeInvalidRequest,
			"Tool "+p.Name+" requires the client capabilities "+strings.Join(missing.names(), ", ")+"; declare them in initialize")
		return true
	}
	if err := t.validate(p.Arguments); err != nil {
		writeJSON(lr.w, http.StatusOK, lr.msg.ID, "error", err)
		return true
	}
	args := p.Arguments
	if t.opts.Prepare != nil {
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: p.Name, Arguments: p.Arguments}}
		a, round, err := t.opts.Prepare(ctx, req, args)
		switch {
		case err != nil:
			writeJSON(lr.w, http.StatusOK, lr.msg.ID, "error", err)
			return true
		case round != nil:
			writeError(lr.w, http.StatusOK, lr.msg.ID, codeInvalidRequest,
				"Tool "+p.Name+" asks for input before its task starts, which 2025-11-25 cannot carry; call it with a 2026-07-28 client")
			return true
		}
		args = a
	}
	rec, err := s.createTaskRecord(ctx, t, &taskRequest{args: args, caps: lr.session.Capabilities, meta: p.Meta,
		principal: lr.principal, header: lr.r.Header})
	if err != nil {
		writeJSON(lr.w, http.StatusOK, lr.msg.ID, "error", err)
		return true
	}
	writeJSON(lr.w, http.StatusOK, lr.msg.ID, "result", task.LegacyCreateResult{Task: rec.Legacy()})
	return true
}

// isLegacyTask reports whether r was created by a 2025-11-25 request.
// Every task of the extension was created by a request that declared it
// (it is the only way to get one), and legacy requests never carry
// extensions (their session drops them), so the declaration tells the
// eras apart without a column of its own.
func isLegacyTask(r *task.Record) bool {
	return !DeclaresTasks(task.ProtocolVersion, r.ClientCapabilities)
}

// eraTask returns the principal's task id for a request of method if it
// was created in the era asked for (2025-11-25 if legacy, else
// 2026-07-28), or the one not-found error.
func (s *Server) eraTask(ctx context.Context, method, principal, id string, legacy bool) (*task.Record, error) {
	r, err := s.eng.Load().Get(ctx, principal, id)
	if err != nil {
		return nil, s.taskError(method, err)
	}
	if isLegacyTask(r) != legacy {
		return nil, errTaskNotFound
	}
	return r, nil
}

// legacyGet returns the principal's 2025-11-25 task id, or the not-found
// error.
func (s *Server) legacyGet(ctx context.Context, principal, id string) (*task.Record, error) {
	return s.eraTask(ctx, methodGet, principal, id, true)
}
