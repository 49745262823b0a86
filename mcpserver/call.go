package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/task"
)

// CreateTaskResult is the result of a tools/call that became a task:
// resultType "task" and the Task fields, flat.
type CreateTaskResult struct {
	mcp.ResultBase
	task.CreateResult
}

// InputRequiredResult is an MRTR round: the server needs input before it
// can go on with the request. Return it from [ToolOptions.Prepare].
type InputRequiredResult struct {
	mcp.ResultBase
	ResultType    string              `json:"resultType"`
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitempty"`
	RequestState  string              `json:"requestState,omitempty"`
}

// InputRequired returns an MRTR round asking for the given input.
func InputRequired(requests mcp.InputRequestMap, requestState string) *InputRequiredResult {
	return &InputRequiredResult{ResultType: "input_required", InputRequests: requests, RequestState: requestState}
}

// versioned is what the middleware reads of every go-sdk request.
type versioned interface {
	ProtocolVersion() string
}

// middleware routes tools/call of task-capable tools, and hands tasks/*
// requests what their handlers cannot see: the principal, whether the
// request declares the extension, and its headers.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return s.callTool(ctx, r, next)
			}
		case methodGet, methodUpdate, methodCancel:
			meta := sdkMeta(req)
			v, _ := req.(versioned)
			c := &taskCall{
				method:    method,
				declared:  v != nil && DeclaresTasks(v.ProtocolVersion(), rawClientCapabilities(meta)),
				principal: s.opts.Principal(req.GetExtra()),
				header:    requestHeader(req),
				meta:      meta,
			}
			return next(context.WithValue(ctx, sdkTaskCallKey{}, c), method, req)
		}
		return next(ctx, method, req)
	}
}

// callTool serves a tools/call: synchronously through next, as an MRTR
// round, or as a new task.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	t := s.tools[req.Params.Name]
	if t == nil {
		return next(ctx, "tools/call", req) // a plain go-sdk tool, or unknown
	}
	// Capability gating comes before argument validation (TASKS-SPEC §7.14).
	args := req.Params.Arguments
	meta := sdkMeta(req)
	caps := rawClientCapabilities(meta)
	declared := DeclaresTasks(req.ProtocolVersion(), caps)
	mode := t.mode(ctx, args)
	if mode == TaskRequired && !declared {
		return nil, missingTasksCapability("tool " + t.tool.Name)
	}
	if err := t.validate(args); err != nil {
		return nil, err
	}
	if mode == TaskNever || !declared {
		return next(ctx, "tools/call", req)
	}
	if t.opts.Prepare != nil {
		a, round, err := t.opts.Prepare(ctx, req, args)
		if err != nil || round != nil {
			return round, err
		}
		args = a
	}
	return s.createTask(ctx, t, args, caps, s.opts.Principal(req.GetExtra()), requestHeader(req), meta)
}

// createTask creates a task of tool t and returns its CreateTaskResult.
// With tracing, it does so in a server span whose parent is the trace
// context of the request's headers h or params._meta, and the task keeps
// that span's traceparent.
func (s *Server) createTask(ctx context.Context, t *toolEntry, args, caps json.RawMessage, principal string, h http.Header, meta propagation.TextMapCarrier) (*CreateTaskResult, error) {
	ctx, span := s.startSpan(ctx, "tools/call", t.tool.Name, h, meta)
	defer span.End()
	r, err := s.eng.Create(ctx, engine.CreateParams{
		Tool: t.tool.Name, Args: args, ClientCapabilities: caps, Principal: principal,
		TraceParent: s.traceParent(ctx),
	})
	if err != nil {
		level := slog.LevelError
		if ctx.Err() != nil {
			level = slog.LevelDebug // the client went away before the write
		}
		s.log.Log(ctx, level, "create task", "tool", t.tool.Name, "err", err)
		err := &jsonrpc.Error{Code: codeInternalError, Message: "The task could not be stored; try again"}
		spanError(span, err)
		return nil, err
	}
	if span.IsRecording() {
		span.SetAttributes(attrTaskID.String(r.ID))
	}
	s.log.Info("task created", "task", r.ID, "tool", r.Tool)
	return &CreateTaskResult{CreateResult: r.CreateResult()}, nil
}
