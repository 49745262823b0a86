package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
)

// withValuesOf returns a context with the values of values (a handler's
// ctx: its mcpserver.Call) that is done when done is, with its cause.
func withValuesOf(values, done context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(values))
	stop := context.AfterFunc(done, func() { cancel(context.Cause(done)) })
	return ctx, func() { stop(); cancel(nil) }
}

// asker forwards the questions the upstream asks during one call to the
// client of the call's task.
type asker struct {
	ctx context.Context // the call's: done when the call ends
	run *engine.Run
	log *slog.Logger
	// clock is paused while a question waits for its answer.
	clock *upstreamClock
	// end, if set, ends the upstream call with its cause: once the task
	// cannot take answers any more (left to another worker), the call
	// must not go on beside its next run.
	end context.CancelCauseFunc

	mu sync.Mutex // one question round at a time (RequestInput's rule)
	n  int        // questions asked so far in this run: the keys' numbers

	errMu sync.Mutex // apart from mu: the call reads it while a question waits
	err   error      // the first error that must end the call
}

// errWithdrawn ends the wait for an answer to an elicitation/create request
// that the upstream gave up on (it cancelled it, or went away).
var errWithdrawn = errors.New("the upstream withdrew its question")

// ask asks the questions at once, numbering them in order, and returns
// their answers in the same order. Outside a task, or when the task's
// client did not declare elicitation, every question is declined. The wait
// ends when the call does, or when withdrawn is done (the request that
// asked, for questions that can be withdrawn; else context.Background()):
// the upstream gave up on the question, which does not end the call.
func (a *asker) ask(withdrawn context.Context, ps []*mcp.ElicitParams) ([]*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.failure(); err != nil {
		return nil, err
	}
	if withdrawn.Err() != nil { // while an earlier question waited
		return nil, errWithdrawn
	}
	keys := make([]string, len(ps))
	qs := make(map[string]*mcp.ElicitParams, len(ps))
	for i, p := range ps {
		a.n++
		keys[i] = fmt.Sprintf("upstream-%d", a.n)
		qs[keys[i]] = p
	}
	declineAll := func(why string) []*mcp.ElicitResult {
		a.log.Info("declining the upstream's questions", "task", a.run.ID(), "keys", keys, "why", why)
		out := make([]*mcp.ElicitResult, len(ps))
		for i := range out {
			out[i] = &mcp.ElicitResult{Action: "decline"}
		}
		return out
	}
	if !a.run.InTask() {
		return declineAll("the call runs inline, outside a task"), nil
	}
	ctx, cancel := context.WithCancelCause(a.ctx)
	defer cancel(nil)
	defer context.AfterFunc(withdrawn, func() { cancel(errWithdrawn) })()
	a.clock.pause()
	answers, err := mcpserver.ElicitAll(ctx, qs)
	a.clock.resume()
	if errors.Is(err, mcpserver.ErrElicitationNotDeclared) {
		return declineAll(err.Error()), nil
	}
	if err != nil && a.ctx.Err() == nil && errors.Is(context.Cause(ctx), errWithdrawn) {
		a.log.Info("the upstream withdrew its questions", "task", a.run.ID(), "keys", keys)
		return nil, errWithdrawn
	}
	if err != nil {
		a.fail(err)
		if a.end != nil {
			a.end(err)
		}
		return nil, err
	}
	out := make([]*mcp.ElicitResult, len(ps))
	for i, k := range keys {
		if out[i] = answers[k]; out[i] == nil {
			out[i] = &mcp.ElicitResult{Action: "decline"}
		}
	}
	return out, nil
}

// elicit is the client's ElicitationHandler: it answers an
// elicitation/create request of the upstream (protocol versions before
// 2026-07-28).
func (a *asker) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	res, err := a.ask(ctx, []*mcp.ElicitParams{req.Params})
	if err != nil {
		// The call is ending (cancelled, or its task left to another
		// worker); call reports a.err, not what the upstream makes of this.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the question could not be forwarded: the call is ending"}
	}
	return res[0], nil
}

// fail records err as the error that ends the call, unless one is.
func (a *asker) fail(err error) {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

// failure returns the error that must end the call, if any.
func (a *asker) failure() error {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	return a.err
}
