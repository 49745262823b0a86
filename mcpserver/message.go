package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"

	segjson "github.com/segmentio/encoding/json"
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
			return codeParseError, "Parse error: the body is not valid JSON"
		case len(b) > 0 && b[0] == '[':
			return codeInvalidRequest, "Invalid request: batches are not supported; send one message per POST"
		}
		return codeInvalidRequest, "Invalid request: the body must be a JSON-RPC message object"
	} else {
		env = raw.envelope
		if len(raw.Params) > 0 && decodeJSON(raw.Params, &m.Params) != nil {
			m.Params = params{} // wrong shape: go-sdk reports it
		}
	}
	if decodeJSON(env.JSONRPC, &m.JSONRPC) != nil || m.JSONRPC != "2.0" {
		return codeInvalidRequest, `Invalid request: jsonrpc must be "2.0"`
	}
	m.ID = env.ID
	switch {
	case string(m.ID) == "null":
		return codeInvalidRequest, "Invalid request: id must not be null"
	case env.Method == nil:
		return codeInvalidRequest, "Invalid request: method is required" // a response or junk: clients send requests
	case decodeJSON(env.Method, &m.Method) != nil:
		return codeInvalidRequest, "Invalid request: method must be a string"
	}
	return 0, ""
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

// isJSONObject reports whether b holds a JSON object (it does not check
// that the object is well-formed).
func isJSONObject(b json.RawMessage) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}

// errTrailing is returned by decodeJSON for data after the value.
var errTrailing = errors.New("invalid data after the top-level value")

// decodeJSON decodes b into v the way go-sdk reads requests: object member
// names match struct fields case-sensitively (JSON-RPC and MCP names are
// case-sensitive; encoding/json would also take "Method" for "method"), and
// nothing but space may follow the value. Strings and raw values may point
// into b, which the caller must not modify afterwards.
func decodeJSON(b []byte, v any) error {
	rest, err := segjson.Parse(b, v, segjson.ZeroCopy|segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(rest) > 0 {
		err = errTrailing
	}
	return err
}
