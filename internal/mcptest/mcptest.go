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

// Post sends method with params (to which it adds _meta) and the headers
// of a 2026-07-28 request, Mcp-Name set to name unless it is empty, and
// returns the response, from a JSON or an SSE reply. A reply without a
// JSON-RPC response is an error.
func (c *Client) Post(ctx context.Context, method, name string, params map[string]any) (*Response, error) {
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	caps := c.Capabilities
	if caps == nil {
		caps = map[string]any{}
	}
	p["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    ProtocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "mcptest", "version": "1.0"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": p})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
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
	msg := b
	if i := bytes.LastIndex(b, []byte("data: ")); i >= 0 { // an SSE reply: its last event
		msg = b[i+len("data: "):]
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || (m.Result == nil && m.Error == nil) {
		return r, fmt.Errorf("mcptest: %s: HTTP %d without a JSON-RPC response: %s", method, resp.StatusCode, b)
	}
	r.Result, r.Error = m.Result, m.Error
	return r, nil
}

// Call is Post for a result: it decodes the result into a map, and
// returns a JSON-RPC error as the error.
func (c *Client) Call(ctx context.Context, method, name string, params map[string]any) (map[string]any, error) {
	r, err := c.Post(ctx, method, name, params)
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
	return c.Call(ctx, "tasks/get", id, map[string]any{"taskId": id})
}
