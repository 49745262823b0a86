package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	segjson "github.com/segmentio/encoding/json"
)

// message is the part of a JSON-RPC request that the guard and the fast
// path read.
type message struct {
	JSONRPC string
	ID      json.RawMessage
	Method  string
	Params  params
	body    []byte // the request, as parse read it
	stray   bool   // it also has a result or an error member, which go-sdk refuses
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
	// subscriptions/listen
	Notifications *struct {
		TaskIDs json.RawMessage `json:"taskIds"`
	} `json:"notifications"`
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
	// The idempotency key of a tools/call (task.MetaIdempotencyKey).
	IdempotencyKey json.RawMessage `json:"io.github.mcptasks/idempotencyKey"`
}

// rawMeta returns the params._meta of a request body, undecoded (nil if
// there is none): what a task keeps part of (taskMeta). A decode of its
// own, for the requests that create a task only: keeping it in every
// request's decode (a requestMeta that kept it, or decoded apart) cost
// every request, a tasks/get above all, 1 to 2 µs.
func rawMeta(body []byte) json.RawMessage {
	var req struct {
		Params struct {
			Meta json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if decodeJSON(body, &req) != nil {
		return nil
	}
	return req.Params.Meta
}

// envelope is the top level of a JSON-RPC message but its params.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
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
	m.body = body
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
			// Wrong shape: go-sdk reports it, or serves the request if
			// its own params type has no such member. The members that
			// the guard's checks read are read apart, so that those
			// checks hold whatever else the params hold (the fast path
			// takes none of these requests: they have no _meta).
			m.Params = params{}
			var id struct {
				TaskID json.RawMessage `json:"taskId"`
			}
			var listen struct {
				Notifications *struct {
					TaskIDs json.RawMessage `json:"taskIds"`
				} `json:"notifications"`
			}
			if decodeJSON(raw.Params, &id) == nil {
				m.Params.TaskID = id.TaskID
			}
			if decodeJSON(raw.Params, &listen) == nil {
				m.Params.Notifications = listen.Notifications
			}
		}
	}
	if decodeJSON(env.JSONRPC, &m.JSONRPC) != nil || m.JSONRPC != "2.0" {
		return codeInvalidRequest, `Invalid request: jsonrpc must be "2.0"`
	}
	m.ID, m.stray = env.ID, env.Result != nil || env.Error != nil
	if string(m.ID) == "null" {
		return codeInvalidRequest, "Invalid request: id must not be null"
	}
	if m.ID != nil {
		id, ok := replyID(m.ID)
		if !ok {
			return codeInvalidRequest, invalidID
		}
		m.ID = id
	}
	switch {
	case env.Method == nil:
		return codeInvalidRequest, "Invalid request: method is required" // a response or junk: clients send requests
	case decodeJSON(env.Method, &m.Method) != nil:
		return codeInvalidRequest, "Invalid request: method must be a string"
	}
	return 0, ""
}

// invalidID is the refusal of a request whose id replyID does not take.
const invalidID = "Invalid request: id must be a string or an integer"

// replyID returns id as a reply carries it, as go-sdk's replies do, which
// decode the id and encode it again: a string with its escapes resolved
// and invalid UTF-8 replaced, an integer in its shortest form (-0 is 0).
// ok is false if id is neither a string nor an integer that fits in 64
// bits.
//
// An integer beyond ±2^53 is written back exactly, where go-sdk, which
// reads ids as float64, answers under the nearest float (see
// design/fast-path.md): clients that number requests by the nanosecond
// send such ids.
func replyID(id json.RawMessage) (_ json.RawMessage, ok bool) {
	if string(id) == "null" {
		return nil, false
	}
	if len(id) > 0 && id[0] == '"' {
		var s string
		if decodeJSON(id, &s) != nil {
			return nil, false
		}
		if plainString(id) {
			return id, true
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // as go-sdk's encoder
		if enc.Encode(s) != nil {
			return nil, false
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
	}
	var n int64
	if decodeJSON(id, &n) != nil {
		return nil, false
	}
	var b [20]byte
	if short := strconv.AppendInt(b[:0], n, 10); string(short) != string(id) {
		return append(json.RawMessage(nil), short...), true // -0
	}
	return id, true
}

// plainString reports whether the JSON string s is printable ASCII without
// escapes: the encoding of its value then is s itself.
func plainString(s json.RawMessage) bool {
	for _, c := range s[1 : len(s)-1] {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	return true
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
