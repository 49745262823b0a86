package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// Values of resultType.
const (
	resultComplete      = task.ResultTypeComplete
	resultInputRequired = "input_required"
	resultTask          = task.ResultTypeTask
)

// CallResult is the outcome of a tools/call: exactly one of Result (the
// server answered at once) and Task (the server made the call a task)
// is set.
type CallResult struct {
	Result *mcp.CallToolResult
	Task   *Task
}

// CallTool calls the tool name with args (anything that marshals to a
// JSON object; nil for none). MRTR rounds (input_required) are answered
// through the InputHandler and retried, up to Options.MaxInputRounds.
//
// If the server makes the call a task, the task is recorded in the
// Journal before CallTool returns its handle. If the journal fails, the
// handle is returned together with an error wrapping [ErrJournal]: the
// task exists and runs on the server either way.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*CallResult, error) {
	p := map[string]any{"name": name}
	var argsJSON json.RawMessage
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("tools/call %s: encode arguments: %w", name, err)
		}
		if string(b) != "null" {
			argsJSON = b
			p["arguments"] = argsJSON
		}
	}
	k, err := newCall("tools/call", p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	bindings := c.tools[name]
	c.mu.Unlock()
	k.extra = paramHeaderValues(bindings, argsJSON)

	raw, rt, err := c.roundTrip(ctx, k, name)
	if err != nil {
		return nil, err
	}
	if rt == resultTask {
		var cr task.CreateResult
		if err := json.Unmarshal(raw, &cr); err != nil {
			return nil, invalidResult(k.method, "CreateTaskResult: %v", err)
		}
		if cr.TaskID == "" {
			return nil, invalidResult(k.method, "a task result without a taskId: %s", snippet(raw))
		}
		st := statusFromInfo(&cr.Info)
		t := c.newTask(cr.TaskID, name, st)
		entry := &Entry{
			TaskID: cr.TaskID, ServerURL: c.url, Tool: name, Args: argsJSON, ArgsDigest: digest(argsJSON),
			Status: st.Status, StatusMessage: st.StatusMessage, CreatedAt: st.CreatedAt, SeenAt: st.seenAt,
		}
		t.entry = entry
		if c.opts.Journal != nil {
			if err := c.opts.Journal.Save(ctx, *entry); err != nil {
				return &CallResult{Task: t}, fmt.Errorf("tools/call %s: task %s: %w: %w", name, cr.TaskID, ErrJournal, err)
			}
		}
		c.log.Debug("task created", "task", cr.TaskID, "tool", name)
		return &CallResult{Task: t}, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, invalidResult(k.method, "%v", err)
	}
	return &CallResult{Result: &res}, nil
}

// roundTrip sends k and answers its MRTR rounds. It returns the final
// result and its resultType: "complete", or "task" for tools/call. tool
// names the tool for the InputHandler.
func (c *Client) roundTrip(ctx context.Context, k *call, tool string) (json.RawMessage, string, error) {
	base := k.params
	for round := 0; ; round++ {
		raw, err := c.do(ctx, k)
		if err != nil {
			return nil, "", err
		}
		var env struct {
			ResultType    *string                    `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  *string                    `json:"requestState"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			return nil, "", invalidResult(k.method, "%v", err)
		}
		rt := resultComplete // a result without resultType is complete
		if env.ResultType != nil {
			rt = *env.ResultType
		}
		switch rt {
		case resultComplete:
			return raw, rt, nil
		case resultTask:
			if k.method != "tools/call" {
				return nil, "", invalidResult(k.method, "resultType \"task\" is allowed only on tools/call")
			}
			return raw, rt, nil
		case resultInputRequired:
		default:
			return nil, "", invalidResult(k.method, "unknown resultType %q", rt)
		}
		if round+1 >= c.opts.MaxInputRounds {
			return nil, "", fmt.Errorf("%s: %w (%d)", k.method, ErrTooManyRounds, round+1)
		}
		if env.InputRequests == nil && env.RequestState == nil {
			return nil, "", invalidResult(k.method, "input_required without inputRequests or requestState")
		}
		reqs, err := decodeInputRequests(env.InputRequests, tool, "")
		if err != nil {
			return nil, "", invalidResult(k.method, "%v", err)
		}
		answers := map[string]json.RawMessage{}
		if len(reqs) > 0 {
			if c.opts.InputHandler == nil {
				return nil, "", &InputRequiredError{Requests: reqs}
			}
			for _, key := range sortedKeys(reqs) {
				a, err := c.answer(ctx, key, reqs[key])
				if err != nil {
					return nil, "", fmt.Errorf("%s: %w", k.method, err)
				}
				answers[key] = a
			}
		}
		// The retry: the same params, a new id (send draws one), this
		// round's answers and the echoed requestState; nothing of an
		// earlier round.
		next := &call{method: k.method, params: make(map[string]json.RawMessage, len(base)+2), extra: k.extra}
		for key, v := range base {
			next.params[key] = v
		}
		delete(next.params, "inputResponses")
		delete(next.params, "requestState")
		if len(answers) > 0 {
			next.params["inputResponses"], _ = json.Marshal(answers)
		}
		if env.RequestState != nil {
			next.params["requestState"], _ = json.Marshal(*env.RequestState)
		}
		k = next
	}
}

// digest returns the hex SHA-256 of the arguments JSON ("" for none).
func digest(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// now is time.Now, truncated to milliseconds for stable journal output.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
