package cmdtool

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/task"
)

// confirmKey is the input key of the confirmation question, and the name
// of the boolean its form asks for.
const confirmKey = "confirm"

// mrtrVersion is the first protocol version with multi round-trip requests
// (input_required results).
const mrtrVersion = "2026-07-28"

// confirmSchema is the form of the confirmation question: one required
// boolean.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		confirmKey: map[string]any{"type": "boolean", "title": "Confirm", "description": "Run the command?"},
	},
	"required": []string{confirmKey},
}

// prepare asks for the confirmation of a call that becomes a task, before
// the task is created (mcpserver.ToolOptions.Prepare).
func (t *Tool) prepare(_ context.Context, req *mcp.CallToolRequest, args json.RawMessage) (json.RawMessage, mcp.Result, error) {
	if round := t.confirmation(req, args); round != nil {
		return nil, round, nil
	}
	return args, nil, nil
}

// confirmation returns nil if the call is confirmed. Otherwise it returns
// what to answer instead: an input_required round asking the question, or
// a tool error if the answer was no or the client cannot answer. A yes
// counts only with the requestState of a round that asked about these
// arguments: one given to other arguments (export a.csv confirmed, then
// sent with b.csv), or none, gets the question again.
func (t *Tool) confirmation(req *mcp.CallToolRequest, raw json.RawMessage) mcp.Result {
	args, _ := t.args(raw) // valid: the schema was checked
	state := t.confirmState(args)
	if r, ok := req.Params.InputResponses[confirmKey].(*mcp.ElicitResult); ok {
		if r.Action != "accept" || r.Content[confirmKey] != true {
			return complete(toolError(fmt.Sprintf("Not confirmed: %s did not run.", t.Name)))
		}
		if req.Params.RequestState == state {
			return nil
		}
	}
	caps := req.ClientCapabilities()
	// The question is a form: a client that declared URL mode alone
	// cannot answer it ({} declares form mode).
	if req.ProtocolVersion() < mrtrVersion || caps == nil || caps.Elicitation == nil ||
		caps.Elicitation.Form == nil && caps.Elicitation.URL != nil {
		return complete(toolError(fmt.Sprintf("%s asks for a confirmation before it runs, and this client cannot answer one: "+
			"that takes MCP %s and the elicitation capability.", t.Name, mrtrVersion)))
	}
	return mcpserver.InputRequired(mcp.InputRequestMap{confirmKey: &mcp.ElicitParams{
		Message:         t.c.confirm.expandOr(args),
		RequestedSchema: confirmSchema,
	}}, state)
}

// confirmStatePrefix starts the requestState of a confirmation round.
const confirmStatePrefix = "mcptasks.confirm."

// confirmState returns the requestState of the confirmation round of a
// call with args (defaults applied): a digest of the tool's name and the
// arguments as the command gets them (canonical: keys sorted, numbers as
// format writes them), so that 1 and 1.0 match and nothing that changes
// the command does. It is not signed: the confirmation is a safeguard for
// people, not an access control, and a client could as well answer yes
// itself. It ties the answer to the question for a client that echoes
// requestState, as MRTR asks, whatever its retry does to the arguments.
func (t *Tool) confirmState(args map[string]any) string {
	b, _ := json.Marshal(canonical(args)) // decoded from JSON: it encodes
	h := sha256.New()
	h.Write([]byte(t.Name))
	h.Write([]byte{0})
	h.Write(b)
	return confirmStatePrefix + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// confirmInline asks the confirmation of calls that run inline (task:
// never, or task: optional from a client that does not declare the Tasks
// extension), which mcpserver hands to the tool handler without a
// Prepare step. It runs before mcpserver's middleware; calls that may
// become a task are left to Prepare, after mcpserver's capability check.
func confirmInline(tools map[string]*Tool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			r, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok || r.Params == nil {
				return next(ctx, method, req)
			}
			t := tools[r.Params.Name]
			if t == nil || !t.inline(r) || t.validate(r.Params.Arguments) != nil {
				return next(ctx, method, req) // invalid arguments: mcpserver reports them
			}
			if round := t.confirmation(r, r.Params.Arguments); round != nil {
				return round, nil
			}
			return next(ctx, method, req)
		}
	}
}

// inline reports whether mcpserver runs the call inline rather than as a
// task.
func (t *Tool) inline(req *mcp.CallToolRequest) bool {
	switch t.Task {
	case mcpserver.TaskNever:
		return true
	case mcpserver.TaskOptional:
		return !declaresTasks(req)
	}
	return false
}

// declaresTasks mirrors mcpserver's rule: the request's own capabilities
// declare the Tasks extension, under a protocol version that has it.
func declaresTasks(req *mcp.CallToolRequest) bool {
	if req.ProtocolVersion() < mrtrVersion {
		return false
	}
	caps := req.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[task.ExtensionID]
	return ok
}

// validate checks raw against the tool's input schema as it is now.
func (t *Tool) validate(raw json.RawMessage) error {
	var v any = map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("invalid arguments: %w", err)
		}
	}
	if err := t.c.schema.Validate(v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

// complete returns r with resultType "complete", as a result returned from
// middleware (rather than from go-sdk's tool dispatch) must carry it.
func complete(r *mcp.CallToolResult) mcp.Result {
	b, err := json.Marshal(r)
	if err != nil {
		return r
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return r
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	var out mcp.CallToolResult
	if b, err = json.Marshal(m); err != nil || json.Unmarshal(b, &out) != nil {
		return r
	}
	return &out
}
