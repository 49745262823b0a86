// Package proxy serves the tools of an existing MCP server as durable tasks.
//
// [New] connects to the upstream server with go-sdk's client (a command
// that speaks MCP over stdio, or a Streamable HTTP endpoint, on any
// protocol version go-sdk's client speaks), lists its tools, every page,
// and disconnects. [Proxy.Register] then adds each tool to an
// [mcpserver.Server] under the upstream's name, title, description, input
// and output schema and annotations. [Options.Mode] chooses which tools
// may become tasks ([Select] builds it from name globs); the others are
// [mcpserver.TaskNever] and are proxied synchronously.
//
// # Calls
//
// Each call opens its own upstream session, on the worker that runs it
// (for a task, possibly another process, or the same one after a
// restart): for a stdio upstream that is one process per call. The
// session carries that call only, so whatever the upstream asks while it
// works reaches that call's task, and an upstream that crashes takes one
// call with it. The session is closed when the call ends; a cancelled
// call (tasks/cancel, a lost lease, the drain deadline) cancels the
// upstream request first (go-sdk sends notifications/cancelled).
//
// The upstream's result is the call's result, isError included: an
// upstream tool error completes the task with isError. A JSON-RPC error
// from the upstream, an upstream that cannot be reached, and one that dies
// or drops the connection mid-call fail the call with a -32603 error whose
// message names the upstream and says what happened (a task ends failed).
//
// An HTTP upstream that serves tasks of its own (a 2026-07-28 server that
// declares the Tasks extension, or a 2025-11-25 server that declares
// tasks.requests.tools.call) is called through mcptasks' client instead,
// in its era, with a session of its own per call, ended with the call: the
// client asks for the upstream's task where the tool allows one, the call
// follows that task to its end, its questions become this call's task's
// questions as below, and a call that ends before that task did (stopped,
// timed out, released to another worker) cancels it. A stdio upstream is
// always called plainly: a tool of it that requires tasks fails with the
// upstream's -32021 error.
//
// # Questions from the upstream
//
// The proxy declares the elicitation capability to the upstream. A
// question (an elicitation/create request on protocol versions before
// 2026-07-28, or an input_required round on 2026-07-28) becomes the
// task's input_required state, through [mcpserver.ElicitAll]; the answer
// given with tasks/update goes back to the upstream. The questions of one
// call are keyed "upstream-1", "upstream-2", ... in the order they are
// asked (within an input_required round, in the order of the upstream's
// request ids), so a call that is re-run after a lost worker gets the
// stored answers to the same questions and nobody is asked twice. All the
// questions of one round are asked at once. (Questions that an upstream
// before 2026-07-28 sends concurrently, as several elicitation/create
// requests in flight, are asked one at a time in the order they arrive,
// which a re-run need not repeat.)
//
// A call that runs inline (from a client that did not declare the Tasks
// extension, or a tool that is never a task) cannot forward questions: it
// declines them, as does a task whose client did not declare elicitation.
//
// Sampling and roots are not declared to the upstream: a sampling or
// roots request gets a -32601 error, and an input_required round that asks
// for either fails the call.
//
// # Limits
//
// [Options.UpstreamTimeout] bounds the time a call waits for the
// upstream; without it, a call whose upstream stops answering waits until
// its task is cancelled. The tool list is read once, by [New]: restart the proxy to pick up
// changed tools (tools/list_changed is not followed). Only tools are
// proxied, not prompts, resources or completions; progress and log
// notifications from the upstream are dropped.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
)

// Options configure a [Proxy]. The zero value is usable.
type Options struct {
	// Mode chooses the task mode of each upstream tool; nil makes every
	// tool [mcpserver.TaskOptional]. See [Select].
	Mode func(*mcp.Tool) mcpserver.TaskMode
	// Retry says what becomes of a task whose worker was lost. The zero
	// value fails it: an upstream call may not be safe to repeat.
	Retry engine.RetryPolicy
	// TTL and PollInterval are the task settings of every tool; see
	// engine.Tool.
	TTL          time.Duration
	PollInterval time.Duration
	// UpstreamTimeout bounds how long one call waits for the upstream in
	// all: to connect, and for its answers to tools/call (or the end of
	// the upstream's task, for an upstream that serves tasks). The time a
	// question of the upstream waits for its answer from the task's
	// client does not count. A call past it is cancelled upstream and
	// fails with a message naming the upstream and the timeout. Zero
	// means no limit.
	UpstreamTimeout time.Duration
	// ClientInfo is the implementation the proxy names itself to the
	// upstream (mcptasks-proxy if nil).
	ClientInfo *mcp.Implementation
	// Logger receives logs (discarded if nil).
	Logger *slog.Logger
}

// Proxy forwards tool calls to an upstream MCP server.
type Proxy struct {
	up           Upstream
	opts         Options
	log          *slog.Logger
	name         string
	tools        []*mcp.Tool
	instructions string
	// taskProtocol is the protocol of an HTTP upstream that serves tasks
	// of its own ("" when it does not): calls then go through callTask.
	taskProtocol string
	// honoursKeys: that upstream honours idempotency keys, so that a
	// re-run finds the upstream task an earlier run made (see callTask).
	honoursKeys bool
}

// New connects to the upstream, reads its instructions and lists all its
// tools, and disconnects.
func New(ctx context.Context, up *Upstream, opts *Options) (*Proxy, error) {
	p := &Proxy{up: *up}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.ClientInfo == nil {
		p.opts.ClientInfo = &mcp.Implementation{Name: "mcptasks-proxy", Version: "0"}
	}
	p.log = p.opts.Logger
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if err := p.up.check(); err != nil {
		return nil, err
	}
	p.name = p.up.name()
	p.log.Info("connecting to the upstream to list its tools", "upstream", p.name)
	s, err := p.connect(ctx, &mcp.ClientOptions{Logger: p.log, Capabilities: &mcp.ClientCapabilities{}})
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", p.name, p.up.redacted(err))
	}
	defer s.close()
	if r := s.cs.InitializeResult(); r != nil {
		p.instructions = r.Instructions
	}
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("upstream %s: tools/list: %w", p.name, p.up.redacted(err))
		}
		p.tools = append(p.tools, t)
	}
	p.log.Info("upstream tools listed", "upstream", p.name, "tools", len(p.tools),
		"protocolVersion", s.protocolVersion())
	p.probeTasks(ctx)
	return p, nil
}

// Name returns how messages name the upstream.
func (p *Proxy) Name() string { return p.name }

// Tools returns the upstream's tools, as listed by [New].
func (p *Proxy) Tools() []*mcp.Tool { return p.tools }

// Instructions returns the upstream's instructions, to serve as the
// proxy's own.
func (p *Proxy) Instructions() string { return p.instructions }

// Register adds every upstream tool to s. A tool that go-sdk's server
// would not accept (an input schema that is not an object schema, or that
// does not resolve) is left out with a warning. A name that s already has
// is an error.
func (p *Proxy) Register(s *mcpserver.Server) error {
	for _, t := range p.tools {
		err := p.register(s, t)
		switch {
		case errors.Is(err, mcpserver.ErrDuplicateTool):
			return fmt.Errorf("proxy: upstream tool %q: the server already has a tool with that name", t.Name)
		case err != nil:
			p.log.Warn("upstream tool left out", "upstream", p.name, "tool", t.Name, "err", err)
		}
	}
	return nil
}

func (p *Proxy) register(s *mcpserver.Server, t *mcp.Tool) error {
	tt := *t
	if err := acceptable(&tt); err != nil {
		return err
	}
	mode := mcpserver.TaskOptional
	if p.opts.Mode != nil {
		mode = p.opts.Mode(&tt)
	}
	// A proxied call holds its upstream session while it asks: it holds.
	opts := mcpserver.ToolOptions{Task: mode, TTL: p.opts.TTL, PollInterval: p.opts.PollInterval, Retry: p.opts.Retry, Hold: true}
	name := tt.Name
	err := mcpserver.AddTool(s, &tt, opts, func(ctx context.Context, req *mcp.CallToolRequest, args json.RawMessage) (*mcp.CallToolResult, any, error) {
		res, err := p.call(ctx, mcpserver.CallFrom(ctx).Run(), name, req.Params.Arguments)
		return res, nil, err
	})
	if err == nil {
		p.log.Debug("upstream tool registered", "tool", name, "task", mode)
	}
	return err
}

// acceptable reports why go-sdk's server would refuse t (it panics on a
// tool it refuses), by adding it to a throwaway server.
func acceptable(t *mcp.Tool) (err error) {
	var m map[string]any
	if b, err := json.Marshal(t.InputSchema); err != nil || json.Unmarshal(b, &m) != nil || m["type"] != "object" {
		return fmt.Errorf(`input schema is not a JSON Schema of type "object"`)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	c := *t
	mcp.NewServer(&mcp.Implementation{Name: "check"}, nil).AddTool(&c, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	return nil
}
