package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/task"
)

// upstreamCancelTimeout bounds the tasks/cancel sent to the upstream when
// a call that follows an upstream task is stopped.
const upstreamCancelTimeout = 5 * time.Second

// probeTasks finds out whether an HTTP upstream serves tasks of its own,
// in either era: then calls go through mcptasks' client (callTask), which
// asks for the upstream's task, follows it and forwards its questions.
func (p *Proxy) probeTasks(ctx context.Context) {
	if p.up.URL == "" {
		return
	}
	c := p.upstreamClient(nil)
	defer p.closeClient(ctx, c)
	serves, err := c.ServesTasks(ctx)
	if err != nil {
		p.log.Warn("could not learn whether the upstream serves tasks: calling it plainly until the proxy restarts (a tool that requires tasks upstream fails)", "upstream", p.name, "err", p.up.redacted(err))
		return
	}
	if serves {
		p.taskProtocol, _ = c.Protocol(ctx)
		if p.taskProtocol == client.ProtocolVersion {
			if d, err := c.Discover(ctx); err == nil && d.Capabilities != nil {
				_, p.honoursKeys = d.Capabilities.Experimental[task.MetaIdempotencyKey]
			}
		}
		p.log.Info("upstream serves tasks; following them", "upstream", p.name, "protocolVersion", p.taskProtocol, "idempotencyKeys", p.honoursKeys)
	}
}

// upstreamClient returns mcptasks' client of the HTTP upstream, answering
// questions with input.
func (p *Proxy) upstreamClient(input client.InputHandler) *client.Client {
	protocol := p.taskProtocol
	if protocol == "" && (p.up.ProtocolVersion == client.ProtocolVersion || p.up.ProtocolVersion == client.LegacyProtocolVersion) {
		protocol = p.up.ProtocolVersion
	}
	return client.New(p.up.URL, &client.Options{
		HTTPClient: p.up.HTTPClient, ClientInfo: p.opts.ClientInfo, Logger: p.log, ProtocolVersion: protocol,
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		InputHandler: input,
	})
}

// closeClient ends the upstream session of c, if it opened one (a
// 2025-11-25 upstream keeps one per call otherwise, until it expires).
func (p *Proxy) closeClient(ctx context.Context, c *client.Client) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), upstreamCancelTimeout)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		p.log.Debug("closing the upstream session", "upstream", p.name, "err", p.up.redacted(err))
	}
}

// callTask calls the upstream tool name through mcptasks' client, with a
// session of its own, for an upstream that serves tasks: if the upstream
// makes the call a task, the call follows it to its end, and the
// upstream's questions become this task's (as in call). The upstream
// timeout bounds the call as it bounds call, the waits for answers left
// out. The call's idempotency key is derived from this task's id: a re-run
// of the task (--rerun, after a crash or a graceful restart) gets the
// upstream's task that an earlier run made, from an upstream that honours
// keys (2026-07-28, such as mcptasks), and follows it, rather than running
// the work twice. A call that ends before the upstream's task did cancels
// that task, unless a re-run is to follow it (the run was left to another
// worker, the tool is re-run, and the upstream honours keys). A re-run
// that never comes (the task's attempts used up, or the task cancelled
// before another worker claimed it) leaves the upstream's task to end on
// its own.
func (p *Proxy) callTask(ctx context.Context, run *engine.Run, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	callCtx, endCall := context.WithCancelCause(ctx) // ctx's values: ElicitAll reads the task's call
	defer endCall(nil)
	clock := newUpstreamClock(p.opts.UpstreamTimeout, func() { endCall(errUpstreamTimeout) })
	defer clock.stop()
	a := &asker{ctx: callCtx, run: run, log: p.log, clock: clock}
	c := p.upstreamClient(client.InputHandlerFunc(func(hctx context.Context, _ string, req *client.InputRequest) (any, error) {
		if req.Elicit == nil {
			err := p.failure(nil, "upstream %s asked for %s in tools/call %q; mcptasks proxy forwards only elicitation", p.name, req.Method, name)
			a.fail(err)
			return nil, err
		}
		q := *req.Elicit
		q.Meta = nil // the upstream's related-task names a task this task's client does not know
		// hctx ends when the call does, or when the upstream no longer
		// asks (the client polls its task meanwhile): withdrawn.
		answers, err := a.ask(hctx, []*mcp.ElicitParams{&q})
		if err != nil {
			return nil, err
		}
		return answers[0], nil
	}))
	defer p.closeClient(ctx, c)
	p.setCalling(ctx, run, name)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	var cr *client.CallResult
	var err error
	if run.InTask() {
		cr, err = c.CallToolWithKey(callCtx, upstreamKeyPrefix+run.ID(), name, args)
	} else {
		cr, err = c.CallTool(callCtx, name, args)
	}
	if err != nil {
		return nil, p.taskCallError(ctx, callCtx, a, "calling", name, err)
	}
	if cr.Task == nil {
		return cr.Result, nil
	}
	p.log.Debug("following the upstream's task", "tool", name, "task", run.ID(), "upstream_task", cr.Task.ID)
	res, err := cr.Task.Wait(callCtx)
	var te *client.TaskError
	if err != nil && !errors.As(err, &te) && !p.leftForRerun(ctx, a) { // the upstream's task did not end
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), upstreamCancelTimeout)
		if cerr := cr.Task.Cancel(cctx); cerr != nil {
			p.log.Warn("cancelling the upstream's task", "upstream_task", cr.Task.ID, "err", p.up.redacted(cerr))
		}
		cancel()
	}
	if err != nil {
		return nil, p.taskCallError(ctx, callCtx, a, "following", name, err)
	}
	return res, nil
}

// upstreamKeyPrefix starts the idempotency key of a task's call to an
// upstream that serves tasks; the task's id follows.
const upstreamKeyPrefix = "mcptasks-proxy/"

// leftForRerun reports whether a call ended only because its run left the
// task to another worker (a shutdown, a lost lease, a release while a
// question waited) that runs it again: the re-run follows the same
// upstream task, found by the call's key, which must then go on.
func (p *Proxy) leftForRerun(ctx context.Context, a *asker) bool {
	if !p.opts.Retry.Rerun || !p.honoursKeys {
		return false // no re-run, or one that would not find the task
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, engine.ErrCancelRequested) {
		return false
	}
	return errors.Is(cause, engine.ErrShutdown) || errors.Is(cause, engine.ErrLeaseLost) || errors.Is(a.failure(), engine.ErrReleased)
}

// taskCallError turns an error of callTask into the error that fails the
// call: ctx is the call's, callCtx the one the upstream timeout ends, and
// doing says what the call was doing (calling, following).
func (p *Proxy) taskCallError(ctx, callCtx context.Context, a *asker, doing, name string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if ferr := a.failure(); ferr != nil {
		return ferr
	}
	if errors.Is(context.Cause(callCtx), errUpstreamTimeout) {
		return p.timedOut("%s tools/call %q", doing, name)
	}
	var te *client.TaskError
	var re *client.Error
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return p.failure(nil, "upstream %s: cannot connect: %v", p.name, err)
	case errors.As(err, &te) && te.Err != nil:
		up := &jsonrpc.Error{Code: te.Err.Code, Message: te.Err.Message, Data: te.Err.Data}
		return p.failure(up, "upstream %s: the task of tools/call %q failed with error %d: %s", p.name, name, te.Err.Code, te.Err.Message)
	case errors.As(err, &te):
		return p.failure(nil, "upstream %s: the task of tools/call %q ended %s", p.name, name, te.Status)
	case errors.As(err, &re):
		up := &jsonrpc.Error{Code: re.Code, Message: re.Message, Data: re.Data}
		return p.failure(up, "upstream %s returned error %d for tools/call %q: %s", p.name, re.Code, name, re.Message)
	}
	return p.failure(nil, "upstream %s: tools/call %q failed: %v", p.name, name, err)
}
