package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// TaskParams are the params of tasks/get and tasks/cancel.
type TaskParams struct {
	mcp.ParamsBase
	TaskID *string `json:"taskId"`
}

// UpdateParams are the params of tasks/update.
type UpdateParams struct {
	mcp.ParamsBase
	TaskID         *string                    `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
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
		if p == nil || p.TaskID == nil {
			return nil, invalidParams("params.taskId is required")
		}
		r, err := s.eng.Get(ctx, principalFrom(ctx), *p.TaskID)
		if err != nil {
			return nil, s.taskError(methodGet, err)
		}
		return &GetTaskResult{Detailed: r.Detailed()}, nil
	}))
	must(mcp.AddReceivingCustomMethod(s.mcp, methodUpdate, func(ctx context.Context, _ *mcp.ServerSession, p *UpdateParams) (*AckResult, error) {
		if p == nil || p.TaskID == nil {
			return nil, invalidParams("params.taskId is required")
		}
		if p.InputResponses == nil {
			return nil, invalidParams("params.inputResponses is required (an object; {} is allowed)")
		}
		for k, v := range p.InputResponses {
			if !isJSONObject(v) {
				return nil, invalidParams("params.inputResponses[%q] must be an object", k)
			}
		}
		if _, err := s.eng.Update(ctx, principalFrom(ctx), *p.TaskID, p.InputResponses); err != nil {
			return nil, s.taskError(methodUpdate, err)
		}
		return ack(), nil
	}))
	must(mcp.AddReceivingCustomMethod(s.mcp, methodCancel, func(ctx context.Context, _ *mcp.ServerSession, p *TaskParams) (*AckResult, error) {
		if p == nil || p.TaskID == nil {
			return nil, invalidParams("params.taskId is required")
		}
		if err := s.eng.Cancel(ctx, principalFrom(ctx), *p.TaskID); err != nil {
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
