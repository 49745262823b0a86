package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/mcptasks/mcptasks/task"
)

// Method names of the Tasks extension.
const (
	methodGet    = "tasks/get"
	methodUpdate = "tasks/update"
	methodCancel = "tasks/cancel"
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

// taskCall is one tasks/get, tasks/update or tasks/cancel request, as both
// routes hand it to [Server.serveTask]: go-sdk's handlers and the fast path.
type taskCall struct {
	method string
	// declared reports whether the request's own _meta declares the Tasks
	// extension.
	declared  bool
	principal string
	// The params, undecoded.
	taskID, inputResponses json.RawMessage
	// The request's HTTP headers and params._meta, for tracing.
	header http.Header
	meta   propagation.TextMapCarrier
	// held is the request's share of the in-flight budget.
	held *held
}

// serveTask answers a tasks/* request: the one implementation of
// tasks/get, tasks/update and tasks/cancel. It gates on the extension,
// decodes the params, calls the engine for the request's principal (which
// answers for that principal's tasks only) and maps its errors. The result
// is a *GetTaskResult or an *AckResult.
func (s *Server) serveTask(ctx context.Context, c *taskCall) (_ mcp.Result, err error) {
	ctx, span := s.startSpan(ctx, c.method, "", c.header, c.meta)
	spanTaskID(span, c.taskID)
	defer func() {
		spanError(span, err)
		span.End() // before the reply: a client that got it finds the span ended
	}()
	if !c.declared {
		return nil, missingTasksCapability(c.method)
	}
	id, err := taskID(c.taskID)
	if err != nil {
		return nil, err
	}
	// A task is served to the era that created it (design/eras.md).
	r, err := s.eraTask(ctx, c.method, c.principal, id, false)
	if err != nil {
		return nil, err
	}
	switch c.method {
	case methodGet:
		if !c.held.take(r.Size()) { // held until the reply is written
			return nil, errBusy
		}
		return &GetTaskResult{Detailed: r.Detailed()}, nil
	case methodUpdate:
		responses, err := inputResponses(c.inputResponses)
		if err != nil {
			return nil, err
		}
		if _, err := s.eng.Load().Update(ctx, c.principal, id, responses, checkAnswer); err != nil {
			return nil, s.taskError(c.method, err)
		}
	case methodCancel:
		if err := s.eng.Load().Cancel(ctx, c.principal, id); err != nil {
			return nil, s.taskError(c.method, err)
		}
	}
	return &AckResult{ResultType: task.ResultTypeComplete}, nil
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
	if jsonMembersOver(raw, maxInputResponses) {
		return nil, invalidParams("params.inputResponses holds more than %d responses; answer the task's questions (at most %d at once)", maxInputResponses, maxInputResponses)
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

// sdkTaskCallKey is the context key of the taskCall that the middleware
// starts for go-sdk's route and the handlers complete.
type sdkTaskCallKey struct{}

// addTaskMethods registers tasks/get, tasks/update and tasks/cancel with
// go-sdk, which then routes them and decodes their params. The middleware
// has put the rest of the request (principal, capabilities, headers) in
// the context.
func (s *Server) addTaskMethods() {
	call := func(ctx context.Context, method string, taskID, inputResponses json.RawMessage) (mcp.Result, error) {
		c, ok := ctx.Value(sdkTaskCallKey{}).(*taskCall)
		if !ok { // never: the middleware sees every request; nothing is declared then
			c = &taskCall{method: method}
		}
		c.taskID, c.inputResponses = taskID, inputResponses
		return s.serveTask(ctx, c)
	}
	ack := func(ctx context.Context, method string, taskID, inputResponses json.RawMessage) (*AckResult, error) {
		res, err := call(ctx, method, taskID, inputResponses)
		r, _ := res.(*AckResult)
		return r, err
	}
	must(mcp.AddReceivingCustomMethod(s.mcp, methodGet, func(ctx context.Context, _ *mcp.ServerSession, p *TaskParams) (*GetTaskResult, error) {
		if p == nil {
			p = &TaskParams{}
		}
		res, err := call(ctx, methodGet, p.TaskID, nil)
		r, _ := res.(*GetTaskResult)
		return r, err
	}))
	must(mcp.AddReceivingCustomMethod(s.mcp, methodUpdate, func(ctx context.Context, _ *mcp.ServerSession, p *UpdateParams) (*AckResult, error) {
		if p == nil {
			p = &UpdateParams{}
		}
		return ack(ctx, methodUpdate, p.TaskID, p.InputResponses)
	}))
	must(mcp.AddReceivingCustomMethod(s.mcp, methodCancel, func(ctx context.Context, _ *mcp.ServerSession, p *TaskParams) (*AckResult, error) {
		if p == nil {
			p = &TaskParams{}
		}
		return ack(ctx, methodCancel, p.TaskID, nil)
	}))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
