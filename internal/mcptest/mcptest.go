// Package mcptest sends MCP 2026-07-28 requests over HTTP for tests, as a
// stateless client does: the one helper for the POSTs that the tests of
// several packages make.
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// ProtocolVersion is the protocol version of every request.
const ProtocolVersion = "2026-07-28"

// Caps returns client capabilities: the Tasks extension if tasks, and
// form elicitation if elicitation.
func Caps(tasks, elicitation bool) map[string]any {
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	if elicitation {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	return caps
}

// Client POSTs JSON-RPC requests to one MCP endpoint.
type Client struct {
	// URL is the MCP endpoint.
	URL string
	// HTTP sends the requests (http.DefaultClient if nil).
	HTTP *http.Client
	// Capabilities are the client capabilities every request declares in
	// its _meta (none if nil).
	Capabilities map[string]any
	// Token, if set, is sent as a bearer token.
	Token string

	id atomic.Int64
}

// Response is one JSON-RPC response and the HTTP reply that carried it.
type Response struct {
	Status int
	Header http.Header
	// Body is the reply's body as sent (JSON, or an SSE stream).
	Body []byte
	// Result and Error are the JSON-RPC response's.
	Result json.RawMessage
	Error  *Error
}

// Error is a JSON-RPC error.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// SetHeaders sets the headers of a 2026-07-28 POST of method on h:
// Content-Type, Accept, MCP-Protocol-Version, Mcp-Method, and Mcp-Name
// unless name is empty.
func SetHeaders(h http.Header, method, name string) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", ProtocolVersion)
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
}

// Post sends method with params, to which it adds _meta (keeping the keys
// of a _meta that params has), and the headers
// of a 2026-07-28 request (Mcp-Name is params' taskId, else its name),
// and returns the response, from a JSON or an SSE reply. A reply without a
// JSON-RPC response is an error.
func (c *Client) Post(ctx context.Context, method string, params map[string]any) (*Response, error) {
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	caps := c.Capabilities
	if caps == nil {
		caps = map[string]any{}
	}
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcptest", "version": "1.0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	if extra, ok := params["_meta"].(map[string]any); ok { // the caller's own keys, such as an idempotency key
		for k, v := range extra {
			meta[k] = v
		}
	}
	p["_meta"] = meta
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": p})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	name, _ := params["name"].(string)
	if id, ok := params["taskId"].(string); ok {
		name = id
	}
	SetHeaders(req.Header, method, name)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(LastMessage(b), &m); err != nil || (m.Result == nil && m.Error == nil) {
		return r, fmt.Errorf("mcptest: %s: HTTP %d without a JSON-RPC response: %s", method, resp.StatusCode, b)
	}
	r.Result, r.Error = m.Result, m.Error
	return r, nil
}

// LastMessage returns the last message of a reply body: the data of its
// last SSE event, or the body itself if it is not an SSE stream.
func LastMessage(body []byte) []byte {
	var last []byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			last = bytes.TrimSpace(d)
		}
	}
	if last == nil {
		return body
	}
	return last
}

// Call is Post for a result: it decodes the result into a map, and
// returns a JSON-RPC error as the error.
func (c *Client) Call(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	r, err := c.Post(ctx, method, params)
	if err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, r.Error
	}
	var m map[string]any
	if err := json.Unmarshal(r.Result, &m); err != nil {
		return nil, fmt.Errorf("mcptest: %s: result: %w", method, err)
	}
	return m, nil
}

// Task sends tasks/get for id and returns the task.
func (c *Client) Task(ctx context.Context, id string) (map[string]any, error) {
	return c.Call(ctx, "tasks/get", map[string]any{"taskId": id})
}
