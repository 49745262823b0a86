package mcpserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// inlineCalls are the tools/call requests running on this server: those
// that run their tool inline, in the request, above all. Shutdown waits for
// them as for task handlers, and cancels those still running at its
// deadline (cause ErrShutdown), so that none outlives the process: an
// inline command tool's process group, say, which only its handler kills.
// One principal may run at most half of max calls (see shares), so that
// its slow calls leave room for the others'. The zero value is ready, and
// bounds nothing.
type inlineCalls struct {
	max  int // most calls running at once; 0: no bound
	mu   sync.Mutex
	n    int           // calls running
	of   shares        // calls running, by principal; guarded by mu
	idle chan struct{} // closed when n drops to 0 while a drain waits
	// stop ends every call at the drain's deadline, and any call that
	// starts after it.
	stop   context.Context
	cancel context.CancelFunc
}

// init makes stop; c.mu is held.
func (c *inlineCalls) init() {
	if c.stop == nil {
		c.stop, c.cancel = context.WithCancel(context.Background())
	}
}

// DefaultMaxInlineCalls is the default of Options.MaxInlineCalls.
const DefaultMaxInlineCalls = 256

// setMax bounds the calls running at once to n, and those of one
// principal to half of it.
func (c *inlineCalls) setMax(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = n
	c.of.each = halfOf(int64(n))
}

// start tracks a call of principal until done, and returns its context,
// which the drain's deadline ends. With max calls running, or the
// principal's share of them, it returns a -32603 error that says so (try
// again) and tracks nothing.
func (c *inlineCalls) start(ctx context.Context, principal string) (_ context.Context, done func(), _ error) {
	c.mu.Lock()
	if c.max > 0 && c.n >= c.max {
		c.mu.Unlock()
		return ctx, nil, &jsonrpc.Error{Code: codeInternalError, Message: fmt.Sprintf("too many tool calls running on this server (at most %d); try again", c.max)}
	}
	if !c.of.fits(principal, 1) {
		c.mu.Unlock()
		return ctx, nil, &jsonrpc.Error{Code: codeInternalError, Message: fmt.Sprintf("too many tool calls running for this principal (at most %d of the server's %d); try again once one ends", c.of.each, c.max)}
	}
	c.init()
	c.n++
	c.of.add(principal, 1)
	stop := c.stop
	c.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(stop, func() { cancel(ErrShutdown) })
	return ctx, func() {
		unhook()
		cancel(nil)
		c.mu.Lock()
		c.of.add(principal, -1)
		if c.n--; c.n == 0 && c.idle != nil {
			close(c.idle)
			c.idle = nil
		}
		c.mu.Unlock()
	}, nil
}

// drain waits until no call runs or ctx is done; then it cancels the calls
// still running and waits for them to return. It returns ctx's error if
// it cancelled some.
func (c *inlineCalls) drain(ctx context.Context) error {
	c.mu.Lock()
	c.init()
	if c.n == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle, cancel := c.idle, c.cancel
	c.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	cancel()
	<-idle
	return ctx.Err()
}
