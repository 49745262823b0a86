package mcpserver

import (
	"context"
	"sync"
)

// inlineCalls are the tools/call requests running on this server: those
// that run their tool inline, in the request, above all. Shutdown waits for
// them as for task handlers, and cancels those still running at its
// deadline (cause ErrShutdown), so that none outlives the process: an
// inline command tool's process group, say, which only its handler kills.
// The zero value is ready, and bounds nothing.
type inlineCalls struct {
	max  int // most calls running at once; 0: no bound
	mu   sync.Mutex
	n    int           // calls running
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

// start tracks a call until done, and returns its context, which the
// drain's deadline ends. With max calls running, it returns ok false and
// tracks nothing.
func (c *inlineCalls) start(ctx context.Context) (_ context.Context, done func(), ok bool) {
	c.mu.Lock()
	if c.max > 0 && c.n >= c.max {
		c.mu.Unlock()
		return ctx, nil, false
	}
	c.init()
	c.n++
	stop := c.stop
	c.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(stop, func() { cancel(ErrShutdown) })
	return ctx, func() {
		unhook()
		cancel(nil)
		c.mu.Lock()
		if c.n--; c.n == 0 && c.idle != nil {
			close(c.idle)
			c.idle = nil
		}
		c.mu.Unlock()
	}, true
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
