package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// message is the part of a JSON-RPC request that the guard and the fast
// path read.
type message struct {
	JSONRPC string
	ID      json.RawMessage
	Method  string
	Params  params
}

// params are the request params that the guard and the fast path read.
type params struct {
	Meta           *requestMeta    `json:"_meta"`
	TaskID         json.RawMessage `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses"`
	// tools/call
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments"`
	RequestState json.RawMessage `json:"requestState"`
}

// requestMeta are the per-request _meta values that the fast path reads.
// A struct, not a map: decoding a map costs more than the rest together.
type requestMeta struct {
	ProtocolVersion    json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
	ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	// W3C trace context, read only when tracing is on.
	TraceParent json.RawMessage `json:"traceparent"`
	TraceState  json.RawMessage `json:"tracestate"`
}

// envelope is the top level of a JSON-RPC message but its params.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
}

// request is a JSON-RPC request whose params have the shape message reads;
// rawRequest is any JSON-RPC message, its params left undecoded.
type (
	request struct {
		envelope
		Params params `json:"params"`
	}
	rawRequest struct {
		envelope
		Params json.RawMessage `json:"params"`
	}
)

// parse decodes a request body. If it is not one JSON-RPC message, it
// returns the JSON-RPC error code and message to answer with. Params of the
// wrong shape are left empty, for go-sdk to report. Strings and raw values
// in m point into body.
func (m *message) parse(body []byte) (code int64, invalid string) {
	// One pass when the params have the expected shape (the usual case);
	// otherwise the envelope alone, to tell what is wrong.
	var env envelope
	var req request
	var raw rawRequest
	if decodeJSON(body, &req) == nil {
		env, m.Params = req.envelope, req.Params
	} else if err := decodeJSON(body, &raw); err != nil {
		var syntax *json.SyntaxError
		switch b := bytes.TrimSpace(body); {
		case errors.As(err, &syntax), errors.Is(err, errTrailing):
			return -32700, "Parse error: the body is not valid JSON"
		case len(b) > 0 && b[0] == '[':
			return -32600, "Invalid request: batches are not supported; send one message per POST"
		}
		return -32600, "Invalid request: the body must be a JSON-RPC message object"
	} else {
		env = raw.envelope
		if len(raw.Params) > 0 && decodeJSON(raw.Params, &m.Params) != nil {
			m.Params = params{} // wrong shape: go-sdk reports it
		}
	}
	if decodeJSON(env.JSONRPC, &m.JSONRPC) != nil || m.JSONRPC != "2.0" {
		return -32600, `Invalid request: jsonrpc must be "2.0"`
	}
	m.ID = env.ID
	switch {
	case string(m.ID) == "null":
		return -32600, "Invalid request: id must not be null"
	case env.Method == nil:
		return -32600, "Invalid request: method is required" // a response or junk: clients send requests
	case decodeJSON(env.Method, &m.Method) != nil:
		return -32600, "Invalid request: method must be a string"
	}
	return 0, ""
}

// protocolVersion is the MCP version the fast path serves.
const protocolVersion = "2026-07-28"

// serveTaskMethod answers tasks/get, tasks/update and tasks/cancel without
// go-sdk's per-request session, which costs about half a millisecond and
// half a megabyte per request: polling is the hot path of every deployment.
// It takes only requests that are well-formed in every respect go-sdk
// checks (host, media types, protocol version header and _meta, method
// header) and reports false for all others, which then go through go-sdk
// and get its answers. What it answers, it answers exactly as the go-sdk
// path would, apart from replying with application/json instead of an SSE
// stream (clients must accept both).
func (s *Server) serveTaskMethod(w http.ResponseWriter, r *http.Request, m *message) bool {
	if s.opts.DisableFastPath || !s.fastEligible(r, m) {
		return false
	}
	ctx, span := s.startSpan(r.Context(), m.Method, "", r.Header, m.Params.Meta)
	spanTaskID(span, m.Params.TaskID)
	var (
		res any
		err error
	)
	if !declaresTasksRaw(m.Params.Meta.ClientCapabilities) {
		err = missingTasksCapability(m.Method)
	} else {
		extra := &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
		res, err = s.taskMethod(ctx, m, s.opts.Principal(extra))
	}
	spanError(span, err)
	span.End() // before the reply: a client that got it finds the span ended
	if err != nil {
		je, ok := err.(*jsonrpc.Error)
		if !ok {
			je = &jsonrpc.Error{Code: codeInternalError, Message: err.Error()}
		}
		status := http.StatusOK // as go-sdk: 400 only for the codes below
		switch je.Code {
		case codeInvalidParams, mcp.CodeMissingRequiredClientCapabilities:
			status = http.StatusBadRequest
		}
		writeJSON(w, status, m.ID, "error", je)
		return true
	}
	s.writeResult(w, m.ID, res)
	return true
}

// serveCreate answers a tools/call that creates a task without go-sdk, on
// the same terms as serveTaskMethod. It takes only calls that the
// middleware would turn into a task at once: a task-capable tool, a client
// that declares the extension, a mode that says task, no Prepare step and
// no MRTR fields. Everything else (sync calls, MRTR rounds, -32021, unknown
// tools) goes through go-sdk.
func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, m *message) bool {
	t := s.tools[m.Params.Name]
	if s.opts.DisableFastPath || t == nil || t.opts.Prepare != nil ||
		m.Params.InputResponses != nil || m.Params.RequestState != nil ||
		!s.fastEligible(r, m) || r.Header.Get("Mcp-Name") != m.Params.Name {
		return false
	}
	caps := m.Params.Meta.ClientCapabilities
	if !declaresTasksRaw(caps) {
		return false
	}
	args := m.Params.Arguments
	if t.mode(r.Context(), args) == TaskNever {
		return false
	}
	if err := t.validate(args); err != nil {
		writeJSON(w, http.StatusBadRequest, m.ID, "error", err)
		return true
	}
	extra := &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
	res, err := s.createTask(r.Context(), t, args, caps, s.opts.Principal(extra), r.Header, m.Params.Meta)
	if err != nil {
		writeJSON(w, http.StatusOK, m.ID, "error", err)
		return true
	}
	s.writeResult(w, m.ID, res.CreateResult)
	return true
}

// declaresTasksRaw reports whether raw clientCapabilities declare the
// Tasks extension.
func declaresTasksRaw(caps json.RawMessage) bool {
	var c struct {
		Extensions struct {
			Tasks json.RawMessage `json:"io.modelcontextprotocol/tasks"` // task.ExtensionID
		} `json:"extensions"`
	}
	return decodeJSON(caps, &c) == nil && c.Extensions.Tasks != nil
}

// taskMethod runs one tasks/* method for principal.
func (s *Server) taskMethod(ctx context.Context, m *message, principal string) (any, error) {
	id, err := taskID(m.Params.TaskID)
	if err != nil {
		return nil, err
	}
	switch m.Method {
	case methodGet:
		r, err := s.eng.Get(ctx, principal, id)
		if err != nil {
			return nil, s.taskError(m.Method, err)
		}
		return r.Detailed(), nil
	case methodUpdate:
		responses, err := inputResponses(m.Params.InputResponses)
		if err != nil {
			return nil, err
		}
		if _, err := s.eng.Update(ctx, principal, id, responses); err != nil {
			return nil, s.taskError(m.Method, err)
		}
	case methodCancel:
		if err := s.eng.Cancel(ctx, principal, id); err != nil {
			return nil, s.taskError(m.Method, err)
		}
	}
	return &AckResult{ResultType: task.ResultTypeComplete}, nil
}

// fastEligible reports whether go-sdk would accept r and m up to dispatch.
func (s *Server) fastEligible(r *http.Request, m *message) bool {
	if m.JSONRPC != "2.0" || !validID(m.ID) || m.Params.Meta == nil {
		return false
	}
	h := r.Header
	if h.Get("MCP-Protocol-Version") != protocolVersion || h.Get("Mcp-Method") != m.Method {
		return false
	}
	var v string
	if decodeJSON(m.Params.Meta.ProtocolVersion, &v) != nil || v != protocolVersion {
		return false
	}
	if ci := m.Params.Meta.ClientInfo; ci != nil && !isJSONObject(ci) {
		return false
	}
	if !isJSONObject(m.Params.Meta.ClientCapabilities) {
		return false
	}
	if ct := h.Get("Content-Type"); ct != "application/json" && !strings.HasPrefix(ct, "application/json;") {
		return false
	}
	if !acceptsJSON(h.Values("Accept")) {
		return false
	}
	// go-sdk's DNS rebinding protection: a loopback listener answers only
	// loopback Host names.
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil && isLoopback(la.String()) && !isLoopback(r.Host) {
		return false
	}
	return true
}

// validID reports whether id is a JSON string or integer.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		var s string
		return decodeJSON(id, &s) == nil
	}
	var n int64
	return decodeJSON(id, &n) == nil
}

// acceptsJSON reports whether the Accept values name both JSON and SSE, as
// go-sdk requires.
func acceptsJSON(values []string) bool {
	var jsonOK, sseOK bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK && sseOK
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// writeJSON writes a JSON-RPC response whose member key ("result" or
// "error") holds v. A nil id (one that could not be read) is left out.
func writeJSON(w http.ResponseWriter, status int, id json.RawMessage, key string, v any) {
	writeMember(w, status, id, key, nil, v)
}

// writeResult writes the JSON-RPC result v, a struct encoded as an object,
// with the _meta every result carries (the serverInfo), encoded once.
func (s *Server) writeResult(w http.ResponseWriter, id json.RawMessage, v any) {
	writeMember(w, http.StatusOK, id, "result", s.resultMeta, v)
}

// writeMember writes a JSON-RPC response whose member key is v, with meta
// as its first member _meta if not nil.
func writeMember(w http.ResponseWriter, status int, id json.RawMessage, key string, meta json.RawMessage, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, key = http.StatusOK, "error"
		body, _ = json.Marshal(&jsonrpc.Error{Code: codeInternalError, Message: "cannot encode the result"})
	}
	buf := make([]byte, 0, len(body)+64)
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	if id != nil {
		buf = append(buf, `,"id":`...)
		buf = append(buf, id...)
	}
	buf = append(buf, `,"`...)
	buf = append(buf, key...)
	buf = append(buf, `":`...)
	if meta != nil && len(body) >= 2 && body[0] == '{' {
		buf = append(buf, `{"_meta":`...)
		buf = append(buf, meta...)
		if len(body) > 2 {
			buf = append(buf, ',')
		}
		body = body[1:]
	}
	buf = append(buf, body...)
	buf = append(buf, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf)
}
