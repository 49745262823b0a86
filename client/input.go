package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Methods of input requests.
const (
	MethodElicit        = "elicitation/create"
	MethodCreateMessage = "sampling/createMessage"
	MethodListRoots     = "roots/list"
)

// InputRequest is one request of the server for input: an MRTR round's or
// a task's inputRequests entry.
type InputRequest struct {
	// Method is "elicitation/create", "sampling/createMessage" or
	// "roots/list".
	Method string `json:"method"`
	// Params are the request's params as sent.
	Params json.RawMessage `json:"params,omitempty"`
	// Elicit is Params decoded, for elicitation/create.
	Elicit *mcp.ElicitParams `json:"-"`
	// Tool is the tool whose call asks, if known.
	Tool string `json:"-"`
	// TaskID is the task that asks, or "" for an MRTR round of a call.
	TaskID string `json:"-"`
}

// InputHandler answers input requests. HandleInput returns the response
// for the request under key: a value that marshals to the JSON object of
// the matching result, such as an *mcp.ElicitResult for
// elicitation/create. An error aborts the call or wait that asked.
//
// For a task, each key is passed to the handler once, however often the
// server repeats it while the task waits. While the handler runs, the task
// is polled (once per poll interval): if the server no longer asks (it
// took the question back, or the task moved on or ended), ctx ends with
// the cause [ErrNotAsked], and what the handler returns then is dropped,
// its error too; the wait goes on.
type InputHandler interface {
	HandleInput(ctx context.Context, key string, req *InputRequest) (any, error)
}

// InputHandlerFunc adapts a function to [InputHandler].
type InputHandlerFunc func(ctx context.Context, key string, req *InputRequest) (any, error)

// HandleInput calls f.
func (f InputHandlerFunc) HandleInput(ctx context.Context, key string, req *InputRequest) (any, error) {
	return f(ctx, key, req)
}

func decodeInputRequests(raw map[string]json.RawMessage, tool, taskID string) (map[string]*InputRequest, error) {
	out := make(map[string]*InputRequest, len(raw))
	for key, r := range raw {
		var ir InputRequest
		if err := json.Unmarshal(r, &ir); err != nil {
			return nil, fmt.Errorf("inputRequests[%q]: %w", key, err)
		}
		if ir.Method == "" {
			return nil, fmt.Errorf("inputRequests[%q] has no method", key)
		}
		if ir.Method == MethodElicit {
			var p mcp.ElicitParams
			if len(ir.Params) > 0 {
				if err := json.Unmarshal(ir.Params, &p); err != nil {
					return nil, fmt.Errorf("inputRequests[%q]: elicitation params: %w", key, err)
				}
			}
			ir.Elicit = &p
		}
		ir.Tool, ir.TaskID = tool, taskID
		out[key] = &ir
	}
	return out, nil
}

// answerWith asks h and returns the response JSON object.
func answerWith(ctx context.Context, h InputHandler, key string, req *InputRequest) (json.RawMessage, error) {
	v, err := h.HandleInput(ctx, key, req)
	if err != nil {
		return nil, fmt.Errorf("input %q: %w", key, err)
	}
	return encodeResponse(key, v)
}

func encodeResponse(key string, v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("input %q: encode response: %w", key, err)
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("input %q: the response must be a JSON object, got %s", key, snippet(b))
	}
	return b, nil
}
