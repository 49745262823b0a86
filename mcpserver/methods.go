package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// TaskParams are the params of tasks/get and tasks/cancel. Fields are
// decoded by the handlers, after capability gating, so that a client
// without the extension gets -32021 whatever its params hold.
type TaskParams struct {
	mcp.ParamsBase
	TaskID json.RawMessage `json:"taskId"`
}

// UpdateParams are the params of tasks/update.
type UpdateParams struct {
	mcp.ParamsBase
	TaskID         json.RawMessage `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

// taskID decodes params.taskId.
func taskID(raw json.RawMessage) (string, error) {
	var id string
	if len(raw) == 0 || string(raw) == "null" {
		return "", invalidParams("params.taskId is required")
	}
	if decodeJSON(raw, &id) != nil {
		return "", invalidParams("params.taskId must be a string")
	}
	return id, nil
}

// inputResponses decodes params.inputResponses: an object whose values are
// objects.
func inputResponses(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalidParams("params.inputResponses is required (an object; {} is allowed)")
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, invalidParams("params.inputResponses must be an object mapping input keys to responses")
	}
	for k, v := range m {
		if !isJSONObject(v) {
			return nil, invalidParams("params.inputResponses[%q] must be an object", k)
		}
	}
	return m, nil
}

// GetTaskResult is the result of tasks/get: a DetailedTask with resultType
// "complete".
type GetTaskResult struct {
	mcp.ResultBase
	task.Detailed
}

// AckResult is the empty acknowledgement of tasks/update and tasks/cancel.
type AckResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

func ack() *AckResult { return &AckResult{ResultType: task.ResultTypeComplete} }

func (s *Server) addTaskMethods() {
	must(mcp.AddReceivingCustomMethod(s.mcp, methodGet, func(ctx context.Context, _ *mcp.ServerSession, p *TaskParams) (*GetTaskResult, error) {
		if p == nil {
			p = &TaskParams{}
		}
		id, err := taskID(p.TaskID)
		if err != nil {
			return nil, err
		}
		r, err := s.eng.Get(ctx, principalFrom(ctx), id)
		if err != nil {
			return nil, s.taskError(methodGet, err)
		}
		return &GetTaskResult{Detailed: r.Detailed()}, nil
	}))
	must(mcp.AddReceivingCustomMethod(s.mcp, methodUpdate, func(ctx context.Context, _ *mcp.ServerSession, p *UpdateParams) (*AckResult, error) {
		if p == nil {
			p = &UpdateParams{}
		}
		id, err := taskID(p.TaskID)
		if err != nil {
			return nil, err
		}
		responses, err := inputResponses(p.InputResponses)
		if err != nil {
			return nil, err
		}
		if _, err := s.eng.Update(ctx, principalFrom(ctx), id, responses); err != nil {
			return nil, s.taskError(methodUpdate, err)
		}
		return ack(), nil
	}))
	must(mcp.AddReceivingCustomMethod(s.mcp, methodCancel, func(ctx context.Context, _ *mcp.ServerSession, p *TaskParams) (*AckResult, error) {
		if p == nil {
			p = &TaskParams{}
		}
		id, err := taskID(p.TaskID)
		if err != nil {
			return nil, err
		}
		if err := s.eng.Cancel(ctx, principalFrom(ctx), id); err != nil {
			return nil, s.taskError(methodCancel, err)
		}
		return ack(), nil
	}))
}

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

func must(err error) {
	if err != nil {
		panic(err)
	}
}
