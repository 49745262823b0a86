package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
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
	// intr receives a value for each Ctrl-C (nil when not a terminal).
	intr chan struct{}
	stop func()
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

// watchInterrupt cancels a request's context on Ctrl-C until the returned
// function is called; that function reports whether it did.
func (c *console) watchInterrupt(cancel context.CancelFunc) func() bool {
	if c.intr == nil {
		return func() bool { return false }
	}
	done := make(chan struct{})
	hit := make(chan bool, 1)
	go func() {
		select {
		case <-c.intr:
			cancel()
			hit <- true
		case <-done:
			hit <- false
		}
	}()
	return func() bool {
		close(done)
		return <-hit
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

// mrtrHandler answers the input rounds of a tools/call (MRTR) with
// prompts, with the status line out of the way.
func (c *console) mrtrHandler(out *output) client.InputHandler {
	return client.InputHandlerFunc(func(ctx context.Context, key string, req *client.InputRequest) (any, error) {
		out.pause()
		defer out.resume()
		return c.elicit(ctx, key, req)
	})
}

// interrupted reports whether err says a question was interrupted.
func interrupted(err error) bool { return errors.Is(err, term.ErrInterrupted) }
