package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/term"
)

// console is the person at the terminal, when stdin is one: it answers
// questions, and its Ctrl-C asks whether to detach or cancel instead of
// ending the process.
type console struct {
	// ctx is the command's context. On a terminal Ctrl-C does not end
	// it (SIGTERM and SIGHUP do); elsewhere any of main's signals does.
	ctx context.Context
	// prompter asks questions; nil when stdin is not a terminal.
	prompter *term.Prompter
	// intr receives a value for each Ctrl-C that no watchInterrupt takes
	// (nil when not a terminal): the prompter's.
	intr chan struct{}
	stop func()

	mu sync.Mutex
	// onIntr is the Ctrl-C action of the current watchInterrupt (nil:
	// none); prompting counts the questions open, during which Ctrl-C
	// goes to the prompt instead.
	onIntr    func()
	prompting int
}

// newConsole sets up the console of streams s. Prompts go to stdout for a
// person, or to stderr when stdout carries JSON.
func newConsole(parent context.Context, s *streams, human bool) *console {
	c := &console{ctx: parent, stop: func() {}}
	if !s.inTTY {
		return c
	}
	w := s.out
	if !human {
		w = s.err
	}
	c.intr = make(chan struct{}, 1)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigc:
				c.mu.Lock()
				f := c.onIntr
				if c.prompting > 0 {
					f = nil
				}
				if f != nil {
					c.onIntr = nil
				}
				c.mu.Unlock()
				if f != nil {
					f()
					continue
				}
				select {
				case c.intr <- struct{}{}:
				default: // one pending Ctrl-C is enough
				}
			case <-done:
				return
			}
		}
	}()
	ctx, stopCtx := signal.NotifyContext(context.WithoutCancel(parent), syscall.SIGTERM, syscall.SIGHUP)
	c.ctx = ctx
	c.prompter = &term.Prompter{In: term.NewLines(s.in), Out: w, Interrupt: c.intr}
	c.stop = func() {
		signal.Stop(sigc)
		close(done)
		stopCtx()
	}
	return c
}

func (c *console) close() { c.stop() }

// watchInterrupt cancels a wait's context on Ctrl-C until the returned
// function is called; that function reports whether it did. A Ctrl-C
// while a question is open (see inputHandler) goes to the question.
func (c *console) watchInterrupt(cancel context.CancelFunc) func() bool {
	if c.intr == nil {
		return func() bool { return false }
	}
	var hit atomic.Bool
	c.mu.Lock()
	c.onIntr = func() {
		hit.Store(true)
		cancel()
	}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		c.onIntr = nil
		c.mu.Unlock()
		return hit.Load()
	}
}

// elicit asks the person for the answer to an elicitation/create request.
func (c *console) elicit(ctx context.Context, key string, req *client.InputRequest) (any, error) {
	if req.Method != client.MethodElicit {
		return nil, fmt.Errorf("input %q: cannot answer %s requests", key, req.Method)
	}
	e, err := term.ParseElicitation(req.Params)
	if err != nil {
		return nil, fmt.Errorf("input %q: %w", key, err)
	}
	return c.prompter.Elicit(ctx, e)
}

// inputHandler answers the questions of a call's input rounds (MRTR) and
// of its task with prompts, with the status line out of the way; nil when
// there is no terminal to ask on. A request that is not a form ends the
// wait with an *client.InputRequiredError, to be answered with "mcptasks
// answer --json".
func (c *console) inputHandler(out *output) client.InputHandler {
	if c.prompter == nil {
		return nil
	}
	return client.InputHandlerFunc(func(ctx context.Context, key string, req *client.InputRequest) (any, error) {
		if req.Method != client.MethodElicit {
			return nil, &client.InputRequiredError{TaskID: req.TaskID, Requests: map[string]*client.InputRequest{key: req}}
		}
		c.mu.Lock()
		c.prompting++
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.prompting--
			c.mu.Unlock()
		}()
		out.pause()
		defer out.resume()
		v, err := c.elicit(ctx, key, req)
		if errors.Is(context.Cause(ctx), client.ErrNotAsked) {
			fmt.Fprintf(c.prompter.Out, "%s: %v.\n", key, client.ErrNotAsked)
		}
		return v, err
	})
}

// interrupted reports whether err says a question was interrupted.
func interrupted(err error) bool { return errors.Is(err, term.ErrInterrupted) }
