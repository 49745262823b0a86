package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
	// TaskOptional, the zero value, runs a call as a task when the request
	// declares the Tasks extension, and synchronously otherwise.
	TaskOptional TaskMode = iota
	// TaskRequired runs every call as a task; a request that does not
	// declare the extension gets -32021.
	TaskRequired
	// TaskNever runs every call synchronously.
	TaskNever
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

// RetryPolicy says what happens to a task whose worker was lost; it is
// [engine.RetryPolicy], named here so that a server needs no engine import.
type RetryPolicy = engine.RetryPolicy

// ToolOptions configure how a tool added with [AddTool] runs. The zero
// value is a [TaskOptional] tool with the engine's default TTL, poll
// interval and retry policy (a lost worker fails the task).
type ToolOptions struct {
	// Task is the tool's task mode; the zero value is TaskOptional.
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
	// extension without naming it here. In MCP 2025-11-25 a tool whose
	// Requires names what it asks the client for (elicitation, sampling,
	// roots) runs only as a task, where its questions travel: it is
	// listed taskSupport "required", unless it is TaskNever, and then
	// that era cannot call it.
	Requires *mcp.ClientCapabilities
	// TTL, PollInterval, Retry and Hold are the task settings; see
	// engine.Tool. A tool with Retry.Rerun set is suspended while it waits
	// for input longer than the engine's SuspendAfter (at once past its
	// MaxHeld), and run again once answered, unless Hold is set.
	TTL          time.Duration
	PollInterval time.Duration
	Retry        RetryPolicy
	Hold         bool
}

// Errors of [AddTool].
var (
	// ErrDuplicateTool: a tool of that name was added to the server before.
	ErrDuplicateTool = errors.New("mcpserver: a tool of this name was added before")
	// ErrStarted: the server has started; tools are added before
	// [Server.Start], since every worker must know them all.
	ErrStarted = errors.New("mcpserver: the server has started")
)

type toolEntry struct {
	tool     *mcp.Tool
	opts     ToolOptions
	requires needs // opts.Requires
	schema   *jsonschema.Resolved
	// handler runs go-sdk's handler with typed input and output (see
	// typedHandler); call wraps it for both routes.
	handler mcp.ToolHandler
	engine  *engine.Tool
	// paramHeaders reports whether the input schema maps arguments to
	// Mcp-Param-* headers (x-mcp-header), which go-sdk validates.
	paramHeaders bool
}

// AddTool adds a tool to s whose calls may run as durable tasks, with a
// handler of go-sdk's shape ([mcp.ToolHandlerFor]). As [mcp.AddTool] does,
// it infers the input schema from In if t.InputSchema is nil (an In of
// type any takes any object), and the output schema from Out if
// t.OutputSchema is nil and Out is not any; it applies the input schema's
// defaults before decoding In, validates the output against the output
// schema (a mismatch is a JSON-RPC internal error, or a failed task), sets
// structuredContent from Out, and fills content with its JSON when the
// handler gives none. Arguments are validated against the input schema
// before any task is created (-32602).
//
// The handler runs inline (a synchronous call) or inside a task, on
// whichever process claims it. Either way, [Elicit] asks the client a
// question, [SetStatus] reports progress and [CallFrom] tells which it is.
// Inside a task, req.Session is nil and req.Params.Meta holds the _meta of
// the call that created the task, with its protocol version and client
// capabilities but without its progress token (see [MaxTaskMetaBytes]);
// ctx is cancelled by tasks/cancel, with a cause that tells why (see
// [ErrCancelRequested]).
//
// A plain error from the handler becomes a result with isError set, while
// a *jsonrpc.Error or *task.Error becomes a protocol error (a failed task).
//
// AddTool returns an error, and adds nothing, for a name added before
// ([ErrDuplicateTool]), after [Server.Start] ([ErrStarted]), or for a tool
// that go-sdk refuses (an input schema that is not an object schema).
func AddTool[In, Out any](s *Server, t *mcp.Tool, opts ToolOptions, h mcp.ToolHandlerFor[In, Out]) error {
	tt := *t
	if tt.InputSchema == nil {
		if reflect.TypeFor[In]() == reflect.TypeFor[any]() {
			tt.InputSchema = &jsonschema.Schema{Type: "object"}
		} else {
			sch, err := jsonschema.For[In](nil)
			if err != nil {
				return fmt.Errorf("mcpserver: tool %q: input schema: %w", t.Name, err)
			}
			tt.InputSchema = sch
		}
	}
	resolved, err := resolveSchema(tt.InputSchema)
	if err != nil {
		return fmt.Errorf("mcpserver: tool %q: input schema: %w", t.Name, err)
	}
	handler, err := typedHandler(&tt, resolved, h)
	if err != nil {
		return fmt.Errorf("mcpserver: tool %q: %w", t.Name, err)
	}
	return s.addTool(&tt, opts, resolved, handler)
}

// addTool registers a tool whose schemas are set: with the engine's tools,
// and with go-sdk for its inline calls.
func (s *Server) addTool(tt *mcp.Tool, opts ToolOptions, resolved *jsonschema.Resolved, handler mcp.ToolHandler) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.eng.Load() != nil:
		return fmt.Errorf("%w: add tool %q before Start", ErrStarted, tt.Name)
	case s.tools[tt.Name] != nil:
		return fmt.Errorf("%w: %q", ErrDuplicateTool, tt.Name)
	}
	e := &toolEntry{tool: tt, opts: opts, requires: needsOf(opts.Requires), schema: resolved, handler: handler, paramHeaders: hasParamHeaders(tt.InputSchema)}
	e.engine = &engine.Tool{
		Name: tt.Name, TTL: opts.TTL, PollInterval: opts.PollInterval, Retry: opts.Retry, Hold: opts.Hold,
		Handler: func(ctx context.Context, r *engine.Run) (json.RawMessage, error) {
			res, err := e.call(ctx, s.taskCall(e, r))
			if err != nil {
				return nil, toTaskError(err)
			}
			return marshalComplete(res)
		},
	}
	defer func() { // go-sdk panics on a tool it refuses
		if p := recover(); p != nil {
			err = fmt.Errorf("mcpserver: tool %q: %v", tt.Name, p)
		}
	}()
	s.mcp.AddTool(tt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return e.call(ctx, s.inlineCall(e, req))
	})
	s.tools[tt.Name] = e
	return nil
}

// call runs the tool's handler for c, on either route, and maps what it
// returns: an MRTR round if an inline Elicit found no answer, a tool
// error result for a plain error (unless the engine stopped the run:
// cancel, lost lease, shutdown, where the engine decides), and content
// filled in.
func (e *toolEntry) call(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
	res, err := e.handler(context.WithValue(ctx, callKey{}, c), c.req)
	if round, rerr := c.round(); round != nil || rerr != nil {
		return round, rerr
	}
	if err != nil && !c.InTask() && !c.missing.empty() && notDeclaredError(err) {
		// The call needs input of a kind the request did not declare, and
		// the handler did not go on without it: -32021, as for a tool
		// whose Requires the request lacks.
		return nil, missingCapabilities("tool "+e.tool.Name, c.missing)
	}
	if err != nil && !isProtocolError(err) && ctx.Err() == nil && !errors.Is(err, engine.ErrReleased) && !errors.Is(err, engine.ErrSuspended) {
		res = &mcp.CallToolResult{}
		res.SetError(err)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	if res.Content == nil && res.InputRequests == nil {
		res.Content = []mcp.Content{}
		if res.StructuredContent != nil {
			b, err := json.Marshal(res.StructuredContent)
			if err != nil {
				return nil, internalError("tool %q: marshal structuredContent: %v", e.tool.Name, err)
			}
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
	}
	return res, nil
}

// typedHandler returns the go-sdk handler of h, as mcp.AddTool would make
// it (setting t.OutputSchema from Out as it does), minus the input
// validation that the server has done before the call was admitted.
func typedHandler[In, Out any](t *mcp.Tool, in *jsonschema.Resolved, h mcp.ToolHandlerFor[In, Out]) (mcp.ToolHandler, error) {
	var (
		out      *jsonschema.Resolved
		elemZero any // the zero of Out's element type, for a nil *T output
	)
	if t.OutputSchema != nil || reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		rt := reflect.TypeFor[Out]()
		if t.OutputSchema == nil {
			if rt.Kind() == reflect.Pointer {
				rt = rt.Elem()
				elemZero = reflect.Zero(rt).Interface()
			}
			sch, err := jsonschema.ForType(rt, &jsonschema.ForOptions{})
			if err != nil {
				return nil, fmt.Errorf("output schema: %w", err)
			}
			t.OutputSchema = sch
		}
		var err error
		if out, err = resolveSchema(t.OutputSchema); err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
	}
	defaults := hasDefaults(in.Schema())
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var (
			input In
			args  = req.Params.Arguments
			err   error
		)
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}") // as go-sdk: a map input is never nil
		}
		if defaults {
			args, err = withDefaults(in, args)
		}
		if err == nil {
			err = json.Unmarshal(args, &input)
		}
		if err != nil {
			return nil, invalidParams("invalid arguments for tool %q: %v", req.Params.Name, err)
		}
		res, output, err := h(ctx, req, input)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		var v any = output
		if out == nil || res.InputRequests != nil || v == nil {
			// As go-sdk's: an output of type any left nil is no output
			// (the handler sets res.StructuredContent itself, if at all).
			return res, nil
		}
		if elemZero != nil && reflect.ValueOf(v).IsNil() {
			v = elemZero // a nil *T is T's zero, not null
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, internalError("tool %q: marshal output: %v", req.Params.Name, err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, internalError("tool %q: output: %v", req.Params.Name, err)
		}
		if err := out.Validate(doc); err != nil {
			return nil, internalError("tool %q: the output does not match the tool's output schema: %v", req.Params.Name, err)
		}
		res.StructuredContent = json.RawMessage(b)
		return res, nil
	}, nil
}

// resolveSchema resolves a schema given as a *jsonschema.Schema or as any
// value that encodes as one.
func resolveSchema(schema any) (*jsonschema.Resolved, error) {
	sch, ok := schema.(*jsonschema.Schema)
	if !ok || sch == nil {
		sch = &jsonschema.Schema{}
		if err := remarshal(schema, sch); err != nil {
			return nil, err
		}
	}
	return sch.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
}

// withDefaults returns args with the schema's defaults applied to the
// properties they leave out.
func withDefaults(schema *jsonschema.Resolved, args json.RawMessage) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return args, nil
	}
	if err := schema.ApplyDefaults(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// hasDefaults reports whether withDefaults can change arguments of schema:
// whether a property has a default, at any depth of properties, which is
// where ApplyDefaults looks.
func hasDefaults(schema *jsonschema.Schema) bool {
	if schema == nil {
		return false
	}
	for _, p := range schema.Properties {
		if p.Default != nil || hasDefaults(p) {
			return true
		}
	}
	return false
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
