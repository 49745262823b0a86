package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
		if r, ok := ctx.Value(requestKey{}).(context.Context); ok { // a 2025-11-25 request: see requestKey
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(r, cancel)()
		}
		switch method {
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				principal := s.opts.Principal(r.GetExtra())
				ctx, done, err := s.inline.start(ctx, principal)
				if err != nil {
					return nil, err
				}
				defer done()
				res, err := s.callTool(ctx, r, principal, next)
				var je *jsonrpc.Error
				if err != nil && !errors.As(err, &je) && errors.Is(context.Cause(ctx), ErrShutdown) {
					// Not go-sdk's code 0 for a plain error: the call may be
					// sent again, to this server's successor.
					err = &jsonrpc.Error{Code: codeInternalError, Message: "the server shut down before the call ended; send it again"}
				}
				return res, err
			}
		case "prompts/get":
			if r, ok := req.(*mcp.GetPromptRequest); ok && r.Params != nil {
				res, err := next(ctx, method, req)
				return checkRound(r.ProtocolVersion(), rawClientCapabilities(sdkMeta(req)), "prompt "+r.Params.Name, res, err)
			}
		case "resources/read":
			if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil {
				res, err := next(ctx, method, req)
				return checkRound(r.ProtocolVersion(), rawClientCapabilities(sdkMeta(req)), "resource "+r.Params.URI, res, err)
			}
		case methodListen:
			if c, ok := ctx.Value(listenKey{}).(*listenCall); ok {
				if v, _ := req.(versioned); v == nil || !DeclaresTasks(v.ProtocolVersion(), rawClientCapabilities(sdkMeta(req))) {
					return nil, listenUndeclared()
				}
				return s.serveListenSDK(ctx, c, s.opts.Principal(req.GetExtra()))
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
				held:      heldFrom(ctx),
			}
			return next(context.WithValue(ctx, sdkTaskCallKey{}, c), method, req)
		}
		return next(ctx, method, req)
	}
}

// callTool serves a tools/call of principal: synchronously through next,
// as an MRTR round, or as a new task.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest, principal string, next mcp.MethodHandler) (mcp.Result, error) {
	meta := sdkMeta(req)
	caps := rawClientCapabilities(meta)
	t := s.tools[req.Params.Name]
	if t == nil { // a plain go-sdk tool, or unknown
		return runInline(ctx, req, caps, next)
	}
	args := req.Params.Arguments
	asTask, err := s.admit(ctx, t, req.ProtocolVersion(), parseCaps(caps).has(), args)
	if err != nil {
		return nil, err
	}
	if !asTask {
		return runInline(ctx, req, caps, next)
	}
	key, err := sdkIdempotencyKey(meta)
	if err != nil {
		return nil, err
	}
	if t.opts.Prepare != nil {
		a, round, err := t.opts.Prepare(ctx, req, args)
		if err != nil || round != nil {
			return checkRound(req.ProtocolVersion(), caps, "tool "+t.tool.Name, round, err)
		}
		args = a
	}
	raw, err := json.Marshal(map[string]any(meta)) // decoded from JSON: it encodes
	if err != nil {
		return nil, internalError("params._meta: %v", err)
	}
	return s.createTask(ctx, t, &taskRequest{args: args, caps: caps, meta: raw, key: key,
		principal: principal, header: requestHeader(req), trace: meta})
}

// runInline runs the tool of req in the request, through next. The request
// holds its body for as long as the tool runs: it counts as one that stays
// (see budget), and is refused with -32603 when their half of the in-flight
// budget is full.
func runInline(ctx context.Context, req *mcp.CallToolRequest, caps json.RawMessage, next mcp.MethodHandler) (mcp.Result, error) {
	if !heldFrom(ctx).stay() {
		return nil, errStayBusy
	}
	res, err := next(ctx, "tools/call", req)
	return checkRound(req.ProtocolVersion(), caps, "tool "+req.Params.Name, res, err)
}

// admit is the one gate of a tools/call of t, for both routes: capability
// gating first (the Tasks extension for a task-only call, and the tool's
// Requires), then the arguments (TASKS-SPEC §7.14): their size and depth,
// then, unless the client has gone, the tool's input schema. has is what
// the request's clientCapabilities declare (parseCaps, decoded once per
// call). It reports whether the call runs as a task, or the error to
// answer with.
func (s *Server) admit(ctx context.Context, t *toolEntry, version string, has needs, args json.RawMessage) (asTask bool, err error) {
	declared := has.declaresTasks(version)
	mode := t.mode(ctx, args)
	missing := t.requires.minus(has)
	if mode == TaskRequired && !declared {
		missing = missing.union(needs{extensions: []string{task.ExtensionID}})
	}
	if !missing.empty() {
		return false, missingCapabilities("tool "+t.tool.Name, missing)
	}
	if err := s.limits.checkArguments(t.tool.Name, args); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err // the client has gone: validate nothing for it
	}
	if err := t.validate(args); err != nil {
		return false, err
	}
	return mode != TaskNever && declared, nil
}

// checkRound passes on res and err, unless res is an MRTR round (an
// input_required result) asking for input of a kind that the request,
// of what, did not declare: a server must not send such a request
// (TASKS-SPEC §2.9), so the answer is -32021 naming what is missing.
func checkRound(version string, caps json.RawMessage, what string, res mcp.Result, err error) (mcp.Result, error) {
	if err != nil || res == nil || version < task.ProtocolVersion {
		return res, err
	}
	var reqs mcp.InputRequestMap
	switch r := res.(type) {
	case *InputRequiredResult:
		reqs = r.InputRequests
	case *mcp.CallToolResult:
		reqs = r.InputRequests
	case *mcp.GetPromptResult:
		reqs = r.InputRequests
	case *mcp.ReadResourceResult:
		reqs = r.InputRequests
	}
	if missing := inputRequestsNeeds(reqs).minus(parseCaps(caps).has()); !missing.empty() {
		return nil, missingCapabilities(what, missing)
	}
	return res, nil
}

// taskRequest is what a create takes from its tools/call, whichever route
// read it.
type taskRequest struct {
	args, caps json.RawMessage
	meta       json.RawMessage // params._meta, whole (nil if none); see taskMeta
	key        string          // the idempotency key, if any
	principal  string
	header     http.Header
	trace      propagation.TextMapCarrier // the trace context in _meta, if any
}

// createTask creates a task of tool t and returns its CreateTaskResult;
// with an idempotency key that the principal's live task holds, that
// task's (see idempotency.go).
func (s *Server) createTask(ctx context.Context, t *toolEntry, tr *taskRequest) (*CreateTaskResult, error) {
	r, err := s.createTaskRecord(ctx, t, tr)
	if err != nil {
		return nil, err
	}
	return &CreateTaskResult{CreateResult: r.CreateResult()}, nil
}

// createTaskRecord creates a task of tool t as createTask does, and
// returns it. With tracing, it does so in a server span whose parent is
// the trace context of the request's headers or params._meta, and the
// task keeps that span's traceparent.
func (s *Server) createTaskRecord(ctx context.Context, t *toolEntry, tr *taskRequest) (*task.Record, error) {
	meta, err := taskMeta(tr.meta)
	if err != nil {
		return nil, err
	}
	if bytes.ContainsAny(tr.caps, " \t\r\n") {
		// As the request sent them (the fast path): measured and kept
		// without their spaces, as go-sdk's route re-encodes them.
		var buf bytes.Buffer
		if err := json.Compact(&buf, tr.caps); err == nil {
			tr.caps = buf.Bytes()
		}
	}
	if len(tr.caps) > MaxTaskMetaBytes { // kept with the task, and read at every tasks/get
		return nil, invalidParams("params._meta[%q] holds %d bytes; a task keeps at most %d (MaxTaskMetaBytes)", metaClientCapabilities, len(tr.caps), MaxTaskMetaBytes)
	}
	ctx, span := s.startSpan(ctx, "tools/call", t.tool.Name, tr.header, tr.trace)
	defer span.End()
	r, err := s.eng.Load().Create(ctx, engine.CreateParams{
		Tool: t.tool.Name, Args: tr.args, ClientCapabilities: tr.caps, Meta: meta, Principal: tr.principal,
		TraceParent: s.traceParent(ctx), IdempotencyKey: tr.key,
	})
	if err != nil {
		je := createError(err, tr.key)
		level := slog.LevelError
		if ctx.Err() != nil || je.Code == codeInvalidParams {
			level = slog.LevelDebug // the client went away before the write, or sent a bad key
		}
		s.log.Log(ctx, level, "create task", "tool", t.tool.Name, "err", err)
		spanError(span, je)
		return nil, je
	}
	if span.IsRecording() {
		span.SetAttributes(attrTaskID.String(r.ID))
	}
	s.log.Info("task created", "task", r.ID, "tool", r.Tool)
	return r, nil
}
