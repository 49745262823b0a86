package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// wireError is a JSON-RPC error object.
type wireError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// message is any JSON-RPC message the server may send.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *wireError      `json:"error,omitempty"`
}

func (m *message) isResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

// call is one request on the wire.
type call struct {
	method string
	// params is the JSON object of params, without _meta.
	params map[string]json.RawMessage
	// extra are headers added to the standard ones (Mcp-Param-*).
	extra map[string]string
	// keyed says that params._meta carries an idempotency key: a request
	// whose outcome is unknown may be sent again (see doKeyed).
	keyed bool
	// noSwitch returns the error of a first request that failed instead
	// of finding out the protocol and sending it again (the caller does).
	noSwitch bool
	// unknown, if not nil, is set once a request sent with the call's
	// idempotency key had an unknown outcome (see unknownOutcome): the
	// server may have made its task. Shared by the rounds of one call.
	unknown *bool
	// handler answers what a 2025-11-25 server asks on the request's own
	// reply (see legacy.answer); nil refuses it.
	handler InputHandler
}

// do sends one request and returns its result JSON, in the protocol the
// server speaks (see Options.ProtocolVersion). Until that is known, the
// request goes as 2026-07-28; if it fails, the protocol is found out and,
// if it is another, the request is sent again in it.
func (c *Client) do(ctx context.Context, k *call) (json.RawMessage, error) {
	leg, known, err := c.knownProtocol(ctx)
	if err != nil {
		return nil, err
	}
	if leg != nil {
		return leg.do(ctx, c, k, leg.answer(ctx, c, k))
	}
	res, err := c.send2026(ctx, k)
	if known || err == nil {
		if !known {
			c.setProtocol(nil)
		}
		return res, err
	}
	// The first request failed: if the server does not speak 2026-07-28,
	// send it again in the protocol it speaks.
	var te *TransportError
	if errors.As(err, &te) || ctx.Err() != nil || k.noSwitch {
		return nil, err
	}
	if leg, perr := c.protocol(ctx); perr == nil && leg != nil {
		return leg.do(ctx, c, k, leg.answer(ctx, c, k))
	}
	return nil, err
}

// send2026 is send, retried once after a -32022 reply whose supported
// versions include ours.
func (c *Client) send2026(ctx context.Context, k *call) (json.RawMessage, error) {
	res, err := c.send(ctx, k)
	var re *Error
	if errors.As(err, &re) && re.Code == CodeUnsupportedVersion {
		for _, v := range re.SupportedVersions() {
			if v == ProtocolVersion {
				c.log.Debug("retrying after -32022", "method", k.method)
				return c.send(ctx, k)
			}
		}
	}
	return res, err
}

// send POSTs one 2026-07-28 request with a fresh id and reads the reply,
// JSON or SSE.
func (c *Client) send(ctx context.Context, k *call) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	body, err := c.encodeRequest(id, k)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(headerProtocolVersion, ProtocolVersion)
	h.Set(headerMethod, EncodeHeaderValue(k.method))
	if f := nameParam(k.method); f != "" {
		var name string
		if raw, ok := k.params[f]; ok && json.Unmarshal(raw, &name) == nil {
			h.Set(headerName, EncodeHeaderValue(name))
		}
	}
	for name, v := range k.extra {
		h.Set(name, v)
	}
	ctx, cancel := c.requestContext(ctx, k.method)
	defer cancel()
	res, _, err := c.exchange(ctx, k.method, id, body, h, nil)
	return res, err
}

// requestContext returns the context of one request of method: ctx bounded
// by Options.RequestTimeout, but for the requests that last as long as the
// server's work: a tools/call, which may run its tool inline (and which a
// timeout would send again, running the tool again), and a 2025-11-25
// tasks/result, which waits for the task's end.
func (c *Client) requestContext(ctx context.Context, method string) (context.Context, context.CancelFunc) {
	if c.opts.RequestTimeout <= 0 || method == "tools/call" || method == "tasks/result" {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opts.RequestTimeout)
}

// exchange POSTs the request body with id and the headers h (to which it
// adds the media types and the token), and returns the result of its
// reply and the reply's headers. Requests the server sends on an SSE
// reply go to onRequest (nil: ignored).
func (c *Client) exchange(ctx context.Context, method string, id int64, body []byte, h http.Header, onRequest func(*message)) (json.RawMessage, http.Header, error) {
	resp, err := c.roundTripHTTP(ctx, http.MethodPost, method, body, h)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	msg, err := c.readReply(resp, id, method, onRequest)
	if err != nil {
		return nil, resp.Header, err
	}
	if msg.Error != nil {
		return nil, resp.Header, &Error{Code: msg.Error.Code, Message: msg.Error.Message, Data: msg.Error.Data, HTTPStatus: resp.StatusCode, Method: method}
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return nil, resp.Header, &HTTPError{StatusCode: resp.StatusCode, Method: method}
	}
	return msg.Result, resp.Header, nil
}

// encodeRequest returns the JSON-RPC request body with the per-request
// _meta merged into params.
func (c *Client) encodeRequest(id int64, k *call) ([]byte, error) {
	params := make(map[string]json.RawMessage, len(k.params)+1)
	for key, v := range k.params {
		params[key] = v
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("%s: params._meta must be an object: %w", k.method, err)
		}
	}
	for key, v := range c.meta {
		meta[key] = v
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	params["_meta"] = mb
	return json.Marshal(struct {
		JSONRPC string                     `json:"jsonrpc"`
		ID      int64                      `json:"id"`
		Method  string                     `json:"method"`
		Params  map[string]json.RawMessage `json:"params"`
	}{"2.0", id, k.method, params})
}

// roundTripHTTP sends one HTTP request of verb to the endpoint (a POST of
// body, a GET of an SSE stream, a DELETE of a session) with the headers h,
// the media types and the token. method names what is sent, in errors.
func (c *Client) roundTripHTTP(ctx context.Context, verb, method string, body []byte, h http.Header) (*http.Response, error) {
	accept := "application/json, text/event-stream"
	var rd io.Reader
	switch {
	case verb == http.MethodGet:
		accept = "text/event-stream"
	case body != nil:
		rd = bytes.NewReader(body)
	}
	// Whether a failed tools/call reached the server decides its pending
	// journal entry (unknownOutcome); no other request needs to know.
	var tr *connTrace
	if method == "tools/call" {
		tr = &connTrace{}
		ctx = tr.with(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, verb, c.url, rd)
	if err != nil {
		return nil, &TransportError{Method: method, URL: c.url, Err: err, notSent: true}
	}
	for name, vs := range h {
		req.Header[name] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &TransportError{Method: method, URL: c.url, Err: err, notSent: tr != nil && notSent(err, tr)}
	}
	return resp, nil
}

// readReply returns the response to request id from resp: the JSON body,
// or the matching event of an SSE stream. Notifications before it go to
// Options.OnNotification.
func (c *Client) readReply(resp *http.Response, id int64, method string, onRequest func(*message)) (*message, error) {
	terr := func(err error) error { return &TransportError{Method: method, URL: c.url, Err: err} }
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		return c.readSSE(resp.Body, id, method, onRequest, nil)
	case "application/json":
		b, err := readLimited(resp.Body, c.opts.MaxReplyBytes)
		if err != nil {
			return nil, terr(err)
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil || !m.isResponse() {
			if resp.StatusCode != http.StatusOK {
				return nil, &HTTPError{StatusCode: resp.StatusCode, Body: snippet(b), Method: method}
			}
			return nil, terr(fmt.Errorf("reply is not a JSON-RPC response: %q", snippet(b)))
		}
		if !sameID(m.ID, id) && !(m.Error != nil && isNullID(m.ID)) {
			return nil, terr(fmt.Errorf("reply has id %s, want %d", m.ID, id))
		}
		return &m, nil
	}
	b, _ := readLimited(resp.Body, maxErrorBodyInDescription)
	if resp.StatusCode != http.StatusOK {
		return nil, &HTTPError{StatusCode: resp.StatusCode, Body: snippet(b), Method: method}
	}
	return nil, terr(fmt.Errorf("reply has Content-Type %q, want application/json or text/event-stream", resp.Header.Get("Content-Type")))
}

// readSSE reads events until the response to id. Requests of the server
// go to onRequest; without one they are ignored. Notifications go to
// onNote, or Options.OnNotification if it is nil.
func (c *Client) readSSE(body io.Reader, id int64, method string, onRequest func(*message), onNote func(method string, params json.RawMessage)) (*message, error) {
	if onNote == nil {
		onNote = c.opts.OnNotification
	}
	terr := func(err error) error { return &TransportError{Method: method, URL: c.url, Err: err} }
	br := bufio.NewReader(body)
	var data bytes.Buffer
	hasData := false
	dispatch := func() (*message, error) {
		if !hasData {
			return nil, nil
		}
		defer func() { data.Reset(); hasData = false }()
		var m message
		if err := json.Unmarshal(data.Bytes(), &m); err != nil {
			return nil, terr(fmt.Errorf("SSE event is not JSON-RPC: %q", snippet(data.Bytes())))
		}
		switch {
		case m.isResponse():
			if sameID(m.ID, id) || m.Error != nil && isNullID(m.ID) {
				return &m, nil
			}
			c.log.Warn("ignoring a response to another request", "method", method, "id", string(m.ID))
		case m.Method != "" && m.ID == nil:
			if onNote != nil {
				onNote(m.Method, m.Params)
			}
		case onRequest != nil && m.Method != "":
			onRequest(&m)
		default:
			c.log.Warn("ignoring a request sent by the server", "method", m.Method)
		}
		return nil, nil
	}
	for {
		line, err := readLine(br, c.opts.MaxReplyBytes)
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			return nil, terr(err)
		}
		switch {
		case len(line) == 0:
			if m, err := dispatch(); m != nil || err != nil {
				return m, err
			}
		case line[0] == ':': // a comment, such as a keep-alive
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			if string(field) == "data" {
				if hasData {
					data.WriteByte('\n')
				}
				if int64(data.Len()+len(value)) > c.opts.MaxReplyBytes {
					return nil, terr(ErrReplyTooLarge)
				}
				data.Write(value)
				hasData = true
			}
		}
		if eof {
			if m, err := dispatch(); m != nil || err != nil {
				return m, err
			}
			return nil, terr(errors.New("SSE stream ended without a response"))
		}
	}
}

// readLine reads one line (ending in \n, \r\n or EOF), without its end,
// of at most max bytes.
func readLine(br *bufio.Reader, max int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if int64(len(line)) > max {
			return nil, ErrReplyTooLarge
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, err
	}
}

func readLimited(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, ErrReplyTooLarge
	}
	return b, nil
}

func sameID(raw json.RawMessage, id int64) bool {
	s := strings.TrimSpace(string(raw))
	if s == strconv.FormatInt(id, 10) {
		return true
	}
	var str string // a server that turned the id into a string
	return json.Unmarshal(raw, &str) == nil && str == strconv.FormatInt(id, 10)
}

func isNullID(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > maxErrorBodyInDescription {
		s = s[:maxErrorBodyInDescription] + "…"
	}
	return s
}
