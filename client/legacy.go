package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// LegacyProtocolVersion is the earlier MCP revision the client speaks to
// servers without the Tasks extension: the experimental tasks of
// 2025-11-25 (the TypeScript SDK v1's and mcp-go's servers).
const LegacyProtocolVersion = task.LegacyProtocolVersion

// headerSessionID carries the session of a 2025-11-25 server.
const headerSessionID = "Mcp-Session-Id"

// protocol returns the client's 2025-11-25 session, or nil when the server
// speaks 2026-07-28. The first call decides, as Options.ProtocolVersion
// says: by server/discover, and initialize when that fails.
func (c *Client) protocol(ctx context.Context) (*legacy, error) {
	c.protoMu.Lock()
	defer c.protoMu.Unlock()
	return c.decideProtocol(ctx)
}

// knownProtocol is protocol without finding out: known is false while
// Options.ProtocolVersion is "" and no request has told.
func (c *Client) knownProtocol(ctx context.Context) (leg *legacy, known bool, err error) {
	c.protoMu.Lock()
	defer c.protoMu.Unlock()
	if c.protoKnown || c.opts.ProtocolVersion != "" {
		leg, err = c.decideProtocol(ctx)
		return leg, err == nil, err
	}
	return nil, false, nil
}

// setProtocol records the protocol a request told: leg, or 2026-07-28 if
// nil.
func (c *Client) setProtocol(leg *legacy) {
	c.protoMu.Lock()
	defer c.protoMu.Unlock()
	if !c.protoKnown {
		c.leg, c.protoKnown = leg, true
	}
}

// decideProtocol is protocol with protoMu held.
func (c *Client) decideProtocol(ctx context.Context) (*legacy, error) {
	if c.protoKnown {
		return c.leg, nil
	}
	switch c.opts.ProtocolVersion {
	case ProtocolVersion:
	case LegacyProtocolVersion:
		leg := &legacy{}
		if err := leg.initialize(ctx, c); err != nil {
			return nil, err
		}
		c.leg = leg
	case "":
		_, derr := c.send(ctx, &call{method: "server/discover", params: map[string]json.RawMessage{}})
		if derr != nil {
			var te *TransportError
			if errors.As(derr, &te) || ctx.Err() != nil {
				return nil, derr // the server is not there: decide next time
			}
			leg := &legacy{}
			if err := leg.initialize(ctx, c); err != nil {
				return nil, fmt.Errorf("server/discover: %w; initialize: %w", derr, err)
			}
			c.log.Debug("the server speaks an earlier protocol", "version", leg.version, "discover", derr)
			c.leg = leg
		}
	default:
		return nil, fmt.Errorf("client: Options.ProtocolVersion %q: use %q, %q or \"\" (find out)", c.opts.ProtocolVersion, ProtocolVersion, LegacyProtocolVersion)
	}
	c.protoKnown = true
	return c.leg, nil
}

// Protocol returns the protocol version the client speaks to its server,
// finding it out if it has not yet.
func (c *Client) Protocol(ctx context.Context) (string, error) {
	leg, err := c.protocol(ctx)
	switch {
	case err != nil:
		return "", err
	case leg != nil:
		return leg.version, nil
	}
	return ProtocolVersion, nil
}

// ServesTasks reports whether the server can make tool calls tasks: a
// 2026-07-28 server that declares the Tasks extension in server/discover,
// or a 2025-11-25 server that declares tasks.requests.tools.call.
func (c *Client) ServesTasks(ctx context.Context) (bool, error) {
	leg, err := c.protocol(ctx)
	if err != nil {
		return false, err
	}
	if leg != nil {
		leg.mu.Lock()
		defer leg.mu.Unlock()
		return leg.tasks, nil
	}
	d, err := c.Discover(ctx)
	if err != nil {
		return false, err
	}
	if d.Capabilities == nil {
		return false, nil
	}
	_, ok := d.Capabilities.Extensions[task.ExtensionID]
	return ok, nil
}

// legacy is a session with a server of MCP 2025-11-25 or earlier: the
// session id and version of initialize, whether the server serves tasks
// of tools/call, and the execution.taskSupport of its tools.
type legacy struct {
	mu      sync.Mutex
	session string
	version string
	tasks   bool
	support map[string]string // tool name -> taskSupport; nil until listed
}

// initialize opens the session: initialize, then
// notifications/initialized.
func (l *legacy) initialize(ctx context.Context, c *Client) error {
	caps := c.meta[MetaClientCapabilities]
	params, _ := json.Marshal(map[string]json.RawMessage{
		"protocolVersion": json.RawMessage(strconv.Quote(LegacyProtocolVersion)),
		"capabilities":    legacyCapabilities(caps),
		"clientInfo":      c.meta[MetaClientInfo],
	})
	id := c.nextID.Add(1)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "initialize", "params": json.RawMessage(params)})
	raw, h, err := c.exchange(ctx, "initialize", id, body, http.Header{}, nil)
	if err != nil {
		return err
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tasks struct {
				Requests struct {
					Tools struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.ProtocolVersion == "" {
		return invalidResult("initialize", "no protocolVersion: %s", snippet(raw))
	}
	l.mu.Lock()
	l.session, l.version = h.Get(headerSessionID), r.ProtocolVersion
	l.tasks = r.ProtocolVersion == LegacyProtocolVersion && r.Capabilities.Tasks.Requests.Tools.Call != nil
	l.mu.Unlock()
	note, _ := json.Marshal(map[string]string{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return l.post(ctx, c, "notifications/initialized", note)
}

// legacyCapabilities returns the client capabilities of initialize: the
// 2026-07-28 ones without extensions, plus the era's tasks capability.
func legacyCapabilities(caps json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(caps, &m)
	delete(m, "extensions")
	m["tasks"] = json.RawMessage(`{"list":{},"cancel":{}}`)
	b, _ := json.Marshal(m)
	return b
}

// headers returns the headers of a request in the session.
func (l *legacy) headers() http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := http.Header{}
	h.Set(headerProtocolVersion, l.version)
	if l.session != "" {
		h.Set(headerSessionID, l.session)
	}
	return h
}

// do sends one request in the session and returns its result. Requests the
// server sends on its reply go to onRequest. A session the server no
// longer knows (HTTP 404) is opened again, once.
func (l *legacy) do(ctx context.Context, c *Client, k *call, onRequest func(*message)) (json.RawMessage, error) {
	for retried := false; ; retried = true {
		id := c.nextID.Add(1)
		body, err := json.Marshal(struct {
			JSONRPC string                     `json:"jsonrpc"`
			ID      int64                      `json:"id"`
			Method  string                     `json:"method"`
			Params  map[string]json.RawMessage `json:"params,omitempty"`
		}{"2.0", id, k.method, k.params})
		if err != nil {
			return nil, err
		}
		rctx, cancel := c.requestContext(ctx, k.method)
		res, _, err := c.exchange(rctx, k.method, id, body, l.headers(), onRequest)
		if err != nil && rctx.Err() != nil && k.method != "tasks/result" {
			// tasks/result only waits, and a poll cuts it on purpose.
			l.cancelled(ctx, c, id, context.Cause(rctx))
		}
		cancel()
		if !retried && isStatus(err, http.StatusNotFound) {
			c.log.Debug("session not found; initializing again", "method", k.method)
			if ierr := l.initialize(ctx, c); ierr != nil {
				return nil, err
			}
			continue
		}
		return res, err
	}
}

// legacyCancelTimeout bounds the notifications/cancelled of a request the
// client gave up on.
const legacyCancelTimeout = 2 * time.Second

// cancelled tells the server that the client gave up on request id (its
// context ended: cause), so that the server stops its work, as 2025-11-25
// asks: over HTTP, a closed connection does not cancel a request. (Not for
// tasks/result, which does no work, and which a poll cuts on purpose.)
func (l *legacy) cancelled(ctx context.Context, c *Client, id int64, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), legacyCancelTimeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": cause.Error()}})
	if err := l.post(ctx, c, "notifications/cancelled", body); err != nil {
		c.log.Debug("notifications/cancelled", "request", id, "err", err)
	}
}

// close ends the session: an HTTP DELETE with its id, as the Streamable
// HTTP transport asks of a client done with it. A server that does not
// allow it (405) keeps the session until it expires.
func (l *legacy) close(ctx context.Context, c *Client) error {
	l.mu.Lock()
	open := l.session != ""
	l.mu.Unlock()
	if !open {
		return nil
	}
	err := l.send(ctx, c, http.MethodDelete, "DELETE session", nil)
	if isStatus(err, http.StatusMethodNotAllowed) || isStatus(err, http.StatusNotFound) {
		return nil // kept until it expires, or gone already
	}
	return err
}

// Close ends the client's 2025-11-25 session, if it opened one (an HTTP
// DELETE of its Mcp-Session-Id), so that the server can let go of it at
// once; with a 2026-07-28 server, which keeps no session, it does
// nothing. The client stays usable: its next request finds out the
// protocol again, and opens a new session if it needs one.
func (c *Client) Close(ctx context.Context) error {
	c.protoMu.Lock()
	leg := c.leg
	c.leg, c.protoKnown = nil, false
	c.protoMu.Unlock()
	if leg == nil {
		return nil
	}
	if err := leg.close(ctx, c); err != nil {
		return fmt.Errorf("client: closing the session: %w", err)
	}
	return nil
}

// isStatus reports whether err is a reply with the HTTP status.
func isStatus(err error, status int) bool {
	var he *HTTPError
	var re *Error
	return errors.As(err, &he) && he.StatusCode == status || errors.As(err, &re) && re.HTTPStatus == status
}

// post POSTs a message that gets no response (a notification, or the
// client's response to a request of the server).
func (l *legacy) post(ctx context.Context, c *Client, method string, body []byte) error {
	return l.send(ctx, c, http.MethodPost, method, body)
}

// send sends an HTTP request of verb in the session that gets no
// JSON-RPC response, and returns an *HTTPError for a status other than 2xx.
func (l *legacy) send(ctx context.Context, c *Client, verb, method string, body []byte) error {
	resp, err := c.roundTripHTTP(ctx, verb, method, body, l.headers())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := readLimited(resp.Body, maxErrorBodyInDescription)
		return &HTTPError{StatusCode: resp.StatusCode, Body: snippet(b), Method: method}
	}
	return nil
}

// listen opens the session's GET stream and passes the server's requests
// on it to onRequest until ctx ends. ready is closed once the stream is
// open or refused (servers may answer 405).
func (l *legacy) listen(ctx context.Context, c *Client, ready chan<- struct{}, onRequest func(*message)) {
	defer func() {
		if ready != nil {
			close(ready)
		}
	}()
	resp, err := c.roundTripHTTP(ctx, http.MethodGet, "GET stream", nil, l.headers())
	if err != nil {
		return
	}
	defer resp.Body.Close()
	close(ready)
	ready = nil
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		return
	}
	br := bufio.NewReader(resp.Body)
	var data []byte
	for {
		line, err := readLine(br, c.opts.MaxReplyBytes)
		switch {
		case len(line) == 0 && len(data) > 0:
			var m message
			if json.Unmarshal(data, &m) == nil && m.Method != "" && m.ID != nil {
				onRequest(&m)
			}
			data = nil
		case len(line) > 5 && string(line[:5]) == "data:":
			data = append(data, bytes.TrimSpace(line[5:])...)
		}
		if err != nil {
			return
		}
	}
}

// answer returns the onRequest of request k's own reply: it answers what
// the server asks on that stream while it serves k (a 2025-11-25 tool that
// asks during a plain tools/call) through k's handler (the call's, as its
// MRTR rounds are answered), or, without one, refuses it, so that the
// server does not wait for an answer that never comes.
func (l *legacy) answer(ctx context.Context, c *Client, k *call) func(*message) {
	var tool string
	if k.method == "tools/call" {
		_ = json.Unmarshal(k.params["name"], &tool)
	}
	return func(m *message) {
		if l.pong(ctx, c, m) {
			return
		}
		key, req, err := inputRequestOf(m, tool, "")
		var res json.RawMessage
		switch {
		case err != nil:
		case k.handler == nil:
			err = errors.New("the client has no InputHandler to answer it")
		default:
			res, err = answerWith(ctx, k.handler, key, req)
		}
		if err != nil {
			c.log.Info("refusing a request of the server", "method", m.Method, "err", err)
			err = l.refuse(ctx, c, m.ID, err)
		} else {
			err = l.respond(ctx, c, m.ID, res)
		}
		if err != nil {
			c.log.Warn("answering a request of the server", "method", m.Method, "err", err)
		}
	}
}

// pong answers m if it is a ping, and reports whether it was: a ping is
// no question for the user.
func (l *legacy) pong(ctx context.Context, c *Client, m *message) bool {
	if m.Method != "ping" {
		return false
	}
	if err := l.respond(ctx, c, m.ID, json.RawMessage(`{}`)); err != nil {
		c.log.Warn("answering a ping of the server", "err", err)
	}
	return true
}

// inputRequestOf returns the input key (its JSON-RPC id) and the input
// request of m, a request the server sent, asked for tool's task taskID.
func inputRequestOf(m *message, tool, taskID string) (string, *InputRequest, error) {
	key := inputKey(m.ID)
	method, err := json.Marshal(m.Method)
	if err != nil {
		return "", nil, err
	}
	raw, err := json.Marshal(map[string]json.RawMessage{"method": method, "params": m.Params})
	if err != nil {
		return "", nil, err
	}
	irs, err := decodeInputRequests(map[string]json.RawMessage{key: raw}, tool, taskID)
	if err != nil {
		return "", nil, err
	}
	return key, irs[key], nil
}

// refuse sends an error response to the server's request id.
func (l *legacy) refuse(ctx context.Context, c *Client, id json.RawMessage, cause error) error {
	return l.reply(ctx, c, id, "error", map[string]any{"code": CodeInternalError, "message": cause.Error()})
}

// respond sends the client's response to the server's request id.
func (l *legacy) respond(ctx context.Context, c *Client, id, result json.RawMessage) error {
	return l.reply(ctx, c, id, "result", result)
}

// reply sends the JSON-RPC response to the server's request id whose
// member key ("result" or "error") is v.
func (l *legacy) reply(ctx context.Context, c *Client, id json.RawMessage, key string, v any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, key: v})
	if err != nil {
		return err
	}
	return l.post(ctx, c, "response", body)
}

// taskSupport returns the execution.taskSupport of tool name ("" when the
// server does not serve tasks of tools/call or the tool has none),
// listing the tools on first use.
func (l *legacy) taskSupport(ctx context.Context, c *Client, name string) (string, error) {
	l.mu.Lock()
	tasks, support := l.tasks, l.support
	l.mu.Unlock()
	if !tasks {
		return "", nil
	}
	if support == nil {
		pages, err := list(ctx, c, "tools/list", func(p *legacyToolsPage) int { return len(p.Tools) })
		if err != nil {
			return "", err
		}
		support = map[string]string{}
		for _, p := range pages {
			for _, t := range p.Tools {
				support[t.Name] = t.Execution.TaskSupport
			}
		}
		l.mu.Lock()
		l.support = support
		l.mu.Unlock()
	}
	return support[name], nil
}

// legacyToolsPage is what the client reads of a 2025-11-25 tools/list.
type legacyToolsPage struct {
	Tools []struct {
		Name      string `json:"name"`
		Execution struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	} `json:"tools"`
}

// statusFromLegacy returns the status of a 2025-11-25 Task object.
func statusFromLegacy(lt *task.LegacyTask) *TaskStatus {
	return statusFromInfo(&task.Info{
		TaskID: lt.TaskID, Status: lt.Status, StatusMessage: lt.StatusMessage,
		CreatedAt: lt.CreatedAt, LastUpdatedAt: lt.LastUpdatedAt,
		TTLMs: lt.TTL, PollIntervalMs: lt.PollInterval,
	})
}

// inputKey is the input key of a server request with the JSON-RPC id raw:
// a string id as it is, a number as its digits. idOfKey reverses it.
func inputKey(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// idOfKey returns the JSON-RPC id of an input key that was not seen on a
// stream: a number if it is one, else a string.
func idOfKey(key string) json.RawMessage {
	if _, err := strconv.ParseInt(key, 10, 64); err == nil {
		return json.RawMessage(key)
	}
	return json.RawMessage(strconv.Quote(key))
}
