package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
)

// ErrElicitationNotDeclared is returned by [Elicit] when the request that
// created the task did not declare the elicitation capability.
var ErrElicitationNotDeclared = errors.New("the client did not declare the elicitation capability")

// Elicit asks the client one form question from inside a task and waits for
// the answer, which arrives through tasks/update. key must be unique for
// the task's life; a key answered before (by an earlier run of the task)
// returns the stored answer without asking again.
func Elicit(ctx context.Context, run *engine.Run, key string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	res, err := ElicitAll(ctx, run, map[string]*mcp.ElicitParams{key: p})
	if err != nil {
		return nil, err
	}
	return res[key], nil
}

// ElicitAll is [Elicit] for several questions asked at once; the task stays
// input_required until all are answered.
func ElicitAll(ctx context.Context, run *engine.Run, ps map[string]*mcp.ElicitParams) (map[string]*mcp.ElicitResult, error) {
	var caps mcp.ClientCapabilities
	if b := run.ClientCapabilities(); len(b) > 0 {
		_ = json.Unmarshal(b, &caps)
	}
	if caps.Elicitation == nil {
		return nil, ErrElicitationNotDeclared
	}
	reqs := make(map[string]json.RawMessage, len(ps))
	for k, p := range ps {
		// InputRequestMap knows the wire shape ({method, params}).
		b, err := json.Marshal(mcp.InputRequestMap{k: p})
		if err != nil {
			return nil, fmt.Errorf("mcpserver: elicit %q: %w", k, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("mcpserver: elicit %q: %w", k, err)
		}
		reqs[k] = m[k]
	}
	msg := "Waiting for input"
	if len(ps) == 1 {
		for _, p := range ps {
			msg = p.Message
		}
	}
	answers, err := run.RequestInput(ctx, reqs, msg)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*mcp.ElicitResult, len(answers))
	for k, a := range answers {
		var r mcp.ElicitResult
		if err := json.Unmarshal(a, &r); err != nil {
			return nil, fmt.Errorf("mcpserver: answer to %q is not an elicitation result: %w", k, err)
		}
		out[k] = &r
	}
	return out, nil
}
