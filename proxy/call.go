package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
)

// Bounds on the input_required rounds of one call.
const (
	maxInputRounds = 32 // rounds with questions
	maxBusyRetries = 3  // rounds without questions (the upstream sheds load)
)

// busyBackoff is the wait before retrying an upstream that said it is busy
// (an input_required round without questions); it doubles each time.
var busyBackoff = 500 * time.Millisecond

// call calls the upstream tool name with args, in its own session, and
// returns its result. Inside a task it runs on a worker; otherwise inline.
func (p *Proxy) call(ctx context.Context, run *engine.Run, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if p.taskProtocol != "" {
		return p.callTask(ctx, run, name, args)
	}
	// The upstream session gets ctx's cancellation but none of its values:
	// an inline call's ctx is go-sdk's server's, whose values (the protocol
	// version of the proxy's client) go-sdk's client would take as its own.
	callCtx, endCall := context.WithCancelCause(context.Background())
	stop := context.AfterFunc(ctx, func() { endCall(context.Cause(ctx)) })
	defer stop()
	clock := newUpstreamClock(p.opts.UpstreamTimeout, func() { endCall(errUpstreamTimeout) })
	defer clock.stop()
	askCtx, stopAsk := withValuesOf(ctx, callCtx)
	defer stopAsk()
	a := &asker{ctx: askCtx, run: run, log: p.log, clock: clock, end: endCall}
	s, err := p.connect(callCtx, &mcp.ClientOptions{
		Logger:             p.log,
		ElicitationHandler: a.elicit,
		Capabilities:       &mcp.ClientCapabilities{}, // no roots; elicitation is inferred
		// input_required rounds are answered here, all questions of a round
		// at once, not one by one through ElicitationHandler.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	if err != nil {
		endCall(nil)
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if errors.Is(context.Cause(callCtx), errUpstreamTimeout) {
			return nil, p.timedOut("connecting for tools/call %q", name)
		}
		return nil, p.failure(nil, "upstream %s: cannot connect: %v", p.name, err)
	}
	closed := false
	closeSession := func() error {
		if closed {
			return nil
		}
		closed = true
		endCall(nil) // unblocks a question still waiting for its answer
		return s.close()
	}
	defer closeSession()
	log := p.log.With("tool", name, "task", run.ID())
	log.Debug("upstream call", "protocolVersion", s.protocolVersion())
	p.setCalling(ctx, run, name)

	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	rounds, busy := 0, 0
	for {
		res, err := s.cs.CallTool(callCtx, params)
		if ctx.Err() != nil {
			if err != nil {
				s.cancelled()
			}
			return nil, context.Cause(ctx)
		}
		if ferr := a.failure(); ferr != nil {
			// The task was released while a question waited, which ended
			// the upstream call (asker.end): the upstream hears of it.
			if err != nil {
				s.cancelled()
			}
			return nil, ferr
		}
		if errors.Is(context.Cause(callCtx), errUpstreamTimeout) {
			if err != nil {
				s.cancelled()
			}
			return nil, p.timedOut("answering tools/call %q", name)
		}
		if err != nil {
			return nil, p.callError(name, err, closeSession())
		}
		if !res.NeedsInput() {
			res.InputRequests, res.RequestState = nil, ""
			// serverInfo names the server of one hop: the proxy names itself.
			delete(res.Meta, mcp.MetaKeyServerInfo)
			if len(res.Meta) == 0 {
				res.Meta = nil
			}
			return res, nil
		}
		if len(res.InputRequests) == 0 {
			if busy++; busy > maxBusyRetries {
				return nil, p.failure(nil, "upstream %s stayed busy: tools/call %q asked to be retried %d times", p.name, name, busy)
			}
			log.Debug("upstream busy; retrying", "try", busy)
			select {
			case <-time.After(busyBackoff << (busy - 1)):
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			params = &mcp.CallToolParams{Name: name, Arguments: args, RequestState: res.RequestState}
			continue
		}
		if rounds++; rounds > maxInputRounds {
			return nil, p.failure(nil, "upstream %s asked for input more than %d times in tools/call %q", p.name, maxInputRounds, name)
		}
		responses, err := p.answer(a, name, res.InputRequests)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, err
		}
		params = &mcp.CallToolParams{Name: name, Arguments: args, InputResponses: responses, RequestState: res.RequestState}
	}
}

// answer asks the questions of an input_required round, in the order of
// their request ids, and returns the responses to send back.
func (p *Proxy) answer(a *asker, tool string, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ids := make([]string, 0, len(reqs))
	for id := range reqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ps := make([]*mcp.ElicitParams, len(ids))
	for i, id := range ids {
		switch r := reqs[id].(type) {
		case *mcp.ElicitParams:
			ps[i] = r
		default:
			return nil, p.failure(nil, "upstream %s asked for %s in tools/call %q; mcptasks proxy forwards only elicitation", p.name, methodOf(r), tool)
		}
	}
	answers, err := a.ask(context.Background(), ps)
	if err != nil {
		return nil, err
	}
	out := make(mcp.InputResponseMap, len(ids))
	for i, id := range ids {
		out[id] = answers[i]
	}
	return out, nil
}

// methodOf returns the method of an input request (sampling/createMessage
// or roots/list), as the wire says it.
func methodOf(r mcp.InputRequest) string {
	var m map[string]struct {
		Method string `json:"method"`
	}
	if b, err := json.Marshal(mcp.InputRequestMap{"r": r}); err == nil && json.Unmarshal(b, &m) == nil && m["r"].Method != "" {
		return m["r"].Method
	}
	return fmt.Sprintf("%T", r)
}

// callError turns the error of a tools/call into the error that fails the
// call. closeErr is how closing the session went: for a stdio upstream, an
// *exec.ExitError says how the process ended.
func (p *Proxy) callError(tool string, err, closeErr error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) && !errors.Is(err, mcp.ErrConnectionClosed) && !slices.Contains(localCodes, je.Code) {
		return p.failure(je, "upstream %s returned error %d for tools/call %q: %s", p.name, je.Code, tool, je.Message)
	}
	var ee *exec.ExitError
	if errors.As(closeErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return p.failure(nil, "upstream %s was killed by signal %d (%s) during tools/call %q", p.name, ws.Signal(), ws.Signal(), tool)
		}
		return p.failure(nil, "upstream %s exited with status %d during tools/call %q", p.name, ee.ExitCode(), tool)
	}
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return p.failure(nil, "upstream %s closed the connection during tools/call %q: %v", p.name, tool, err)
	}
	return p.failure(nil, "upstream %s: tools/call %q failed: %v", p.name, tool, err)
}

// localCodes are the codes of the errors that go-sdk's client makes itself,
// for a connection that is closing (-32003, -32004) or a request that the
// transport could not deliver (-32005): they come from no upstream.
var localCodes = []int64{-32003, -32004, -32005}

// errUpstreamTimeout ends a call that waited for the upstream longer
// than Options.UpstreamTimeout.
var errUpstreamTimeout = errors.New("upstream timeout")

// timedOut returns the error of a call past Options.UpstreamTimeout; doing
// says what the upstream was doing.
func (p *Proxy) timedOut(doing string, args ...any) *jsonrpc.Error {
	return p.failure(nil, "upstream %s did not finish %s within %s (the upstream timeout); the call was cancelled",
		p.name, fmt.Sprintf(doing, args...), p.opts.UpstreamTimeout)
}

// upstreamClock measures the time a call waits for its upstream, and ends
// the call when it passes the timeout. The waits for answers to the
// upstream's questions are left out: ask pauses it. A nil clock (no
// timeout) does nothing.
type upstreamClock struct {
	mu      sync.Mutex
	timer   *time.Timer
	left    time.Duration // before the timeout, as of started
	started time.Time     // zero while paused
}

func newUpstreamClock(timeout time.Duration, expire func()) *upstreamClock {
	if timeout <= 0 {
		return nil
	}
	return &upstreamClock{timer: time.AfterFunc(timeout, expire), left: timeout, started: time.Now()}
}

// pause stops the clock while the call waits for something else than the
// upstream.
func (c *upstreamClock) pause() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started.IsZero() && c.timer.Stop() {
		c.left -= time.Since(c.started)
		c.started = time.Time{}
	}
}

// resume starts the clock again after pause.
func (c *upstreamClock) resume() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started.IsZero() {
		c.started = time.Now()
		c.timer.Reset(max(c.left, 0))
	}
}

func (c *upstreamClock) stop() {
	if c != nil {
		c.timer.Stop()
	}
}

// failure returns the -32603 error that fails a call, and logs it. upstream,
// if set, is the upstream's own error, kept in the data. The upstream URL
// in an error among args is shown without its secrets (see redact).
func (p *Proxy) failure(upstream *jsonrpc.Error, format string, args ...any) *jsonrpc.Error {
	e := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.Message = p.up.redact(e.Message, err)
		}
	}
	if upstream != nil {
		e.Data, _ = json.Marshal(map[string]any{"upstreamError": upstream})
	}
	p.log.Warn("upstream call failed", "err", e.Message)
	return e
}

// setCalling says in the task's status which call it makes, and when it
// makes it again (a re-run, after a lost worker or a release): the
// upstream then runs the call a second time.
func (p *Proxy) setCalling(ctx context.Context, run *engine.Run, name string) {
	if !run.InTask() {
		return
	}
	msg := fmt.Sprintf("Calling %s on %s", name, p.name)
	if n := run.Attempt(); n > 1 {
		msg += fmt.Sprintf(" again (attempt %d)", n)
	}
	_ = run.SetStatus(ctx, msg)
}
