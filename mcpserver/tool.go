package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/task"
)

// TaskMode says whether a call of a tool runs as a task.
type TaskMode int

const (
	// TaskNever runs every call synchronously.
	TaskNever TaskMode = iota
	// TaskOptional runs a call as a task when the request declares the
	// Tasks extension, and synchronously otherwise.
	TaskOptional
	// TaskRequired runs every call as a task; a request that does not
	// declare the extension gets -32021.
	TaskRequired
)

// String returns the mode's name.
func (m TaskMode) String() string {
	switch m {
	case TaskNever:
		return "never"
	case TaskOptional:
		return "optional"
	case TaskRequired:
		return "required"
	}
	return fmt.Sprintf("TaskMode(%d)", int(m))
}

// ToolOptions configure how a tool added with [AddTool] runs.
type ToolOptions struct {
	// Task is the tool's task mode.
	Task TaskMode
	// Decide, if set, chooses the mode per call from the arguments,
	// instead of Task: for example small inputs inline, large ones as a
	// task. The arguments are not yet validated (a required task is gated
	// on the client's capability first), so Decide must tolerate bad ones.
	Decide func(ctx context.Context, args json.RawMessage) TaskMode
	// Prepare, if set, runs synchronously on a call that will become a
	// task, before the task is created. It may return an input_required
	// result (an MRTR round, see [InputRequired]) to ask the client
	// something first; the client retries with the answers. Otherwise it
	// returns the arguments the task is created with.
	Prepare func(ctx context.Context, req *mcp.CallToolRequest, args json.RawMessage) (json.RawMessage, mcp.Result, error)
	// Requires names the client capabilities every call needs, such as
	// elicitation for a tool that asks the user something (an elicitation
	// capability that names no mode means form mode, as on the wire). A
	// request that does not declare them all gets -32021 naming what is
	// missing, before any task exists. A TaskRequired tool needs the Tasks
	// extension without naming it here.
	Requires *mcp.ClientCapabilities
	// TTL, PollInterval, Retry and Hold are the task settings; see
	// engine.Tool. A tool with Retry.Rerun set is suspended while it waits
	// for input longer than the engine's SuspendAfter, and run again once
	// answered, unless Hold is set.
	TTL          time.Duration
	PollInterval time.Duration
	Retry        engine.RetryPolicy
	Hold         bool
}

// Handler is the function of a task-capable tool. It runs inside a task
// (run.InTask() is true) or, for a synchronous call, inline. It returns a
// tool result; a plain error becomes a result with isError set, while a
// *jsonrpc.Error or *task.Error becomes a protocol error (a failed task).
// Inside a task, run carries the task's durable tools: run.SetStatus,
// the input helpers ([Elicit]…), and durable steps (run.Step, or the
// typed engine.Step), whose results a re-run of the task gets back
// instead of doing their work again.
type Handler[In any] func(ctx context.Context, run *engine.Run, in In) (*mcp.CallToolResult, error)

type toolEntry struct {
	tool     *mcp.Tool
	opts     ToolOptions
	requires needs // opts.Requires
	schema   *jsonschema.Resolved
	engine   *engine.Tool
	// paramHeaders reports whether the input schema maps arguments to
	// Mcp-Param-* headers (x-mcp-header), which go-sdk validates.
	paramHeaders bool
}

// AddTool adds a task-capable tool to s. If t.InputSchema is nil it is
// inferred from In. Arguments are validated against the schema before any
// task is created.
func AddTool[In any](s *Server, t *mcp.Tool, opts ToolOptions, h Handler[In]) error {
	tt := *t
	if tt.InputSchema == nil {
		sch, err := jsonschema.For[In](nil)
		if err != nil {
			return fmt.Errorf("mcpserver: tool %q: input schema: %w", t.Name, err)
		}
		tt.InputSchema = sch
	}
	var sch jsonschema.Schema
	if err := remarshal(tt.InputSchema, &sch); err != nil {
		return fmt.Errorf("mcpserver: tool %q: input schema: %w", t.Name, err)
	}
	resolved, err := sch.Resolve(nil)
	if err != nil {
		return fmt.Errorf("mcpserver: tool %q: input schema: %w", t.Name, err)
	}
	run := func(ctx context.Context, r *engine.Run) (*mcp.CallToolResult, error) {
		var in In
		if len(r.Args()) > 0 {
			if err := json.Unmarshal(r.Args(), &in); err != nil {
				return nil, invalidParams("invalid arguments for tool %q: %v", t.Name, err)
			}
		}
		res, err := h(ctx, r, in)
		// A plain error is a tool error, except when the engine stopped
		// the run (cancel, lost lease, shutdown) or set it aside (released,
		// suspended): the engine decides then.
		if err != nil && !isProtocolError(err) && ctx.Err() == nil && !errors.Is(err, engine.ErrReleased) && !errors.Is(err, engine.ErrSuspended) {
			res = &mcp.CallToolResult{}
			res.SetError(err)
			err = nil
		}
		if err == nil && res == nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{}}
		}
		return res, err
	}
	e := &toolEntry{tool: &tt, opts: opts, requires: needsOf(opts.Requires), schema: resolved, paramHeaders: hasParamHeaders(tt.InputSchema)}
	e.engine = &engine.Tool{
		Name: tt.Name, TTL: opts.TTL, PollInterval: opts.PollInterval, Retry: opts.Retry, Hold: opts.Hold,
		Handler: func(ctx context.Context, r *engine.Run) (json.RawMessage, error) {
			res, err := run(ctx, r)
			if err != nil {
				return nil, toTaskError(err)
			}
			return marshalComplete(res)
		},
	}
	s.tools[tt.Name] = e
	s.mcp.AddTool(&tt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return run(ctx, engine.NewInlineRun(tt.Name, req.Params.Arguments, rawClientCapabilities(sdkMeta(req))))
	})
	return nil
}

// hasParamHeaders reports whether an input schema has properties annotated
// with x-mcp-header (SEP-2243), at any depth.
func hasParamHeaders(schema any) bool {
	var walk func(props map[string]paramSchema) bool
	walk = func(props map[string]paramSchema) bool {
		for _, p := range props {
			if p.XMCPHeader != nil || walk(p.Properties) {
				return true
			}
		}
		return false
	}
	var root paramSchema
	return remarshal(schema, &root) == nil && walk(root.Properties)
}

// paramSchema is what hasParamHeaders reads of a schema.
type paramSchema struct {
	XMCPHeader json.RawMessage        `json:"x-mcp-header"`
	Properties map[string]paramSchema `json:"properties"`
}

func (e *toolEntry) mode(ctx context.Context, args json.RawMessage) TaskMode {
	if e.opts.Decide != nil {
		return e.opts.Decide(ctx, args)
	}
	return e.opts.Task
}

// validate checks args against the tool's input schema. The caller has
// bounded their size and depth (limits.go). They are decoded with
// encoding/json, in time linear in their size.
func (e *toolEntry) validate(args json.RawMessage) error {
	var v any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &v); err != nil {
			return invalidParams("invalid arguments for tool %q: %v", e.tool.Name, err)
		}
	}
	if err := e.schema.Validate(v); err != nil {
		return invalidParams("invalid arguments for tool %q: %v", e.tool.Name, err)
	}
	return nil
}

func isProtocolError(err error) bool {
	var je *jsonrpc.Error
	var te *task.Error
	return errors.As(err, &je) || errors.As(err, &te)
}

// toTaskError converts a protocol error to the error a failed task carries.
func toTaskError(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &task.Error{Code: je.Code, Message: je.Message, Data: je.Data}
	}
	return err
}

// marshalComplete returns the JSON of res with resultType "complete", as a
// completed task inlines it.
func marshalComplete(res mcp.Result) (json.RawMessage, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: marshal result: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("mcpserver: marshal result: %w", err)
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	return json.Marshal(m)
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
