package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/metrics"
)

// ErrMinPollInterval is the error of [Server.Start] when
// Options.MinPollInterval is longer than the poll interval a task tool
// suggests.
var ErrMinPollInterval = errors.New("mcpserver: poll limit above a suggested poll interval")

// Start builds the engine on [Options.Store] with every tool added so far,
// and starts its workers and sweeper, which run until ctx is done or
// [Server.Shutdown]: pass a ctx that outlives serving (such as
// context.WithoutCancel of a signal's ctx) and drain with Shutdown. From
// Start on, [Server.Handler] serves, and [AddTool] returns [ErrStarted].
// A process that only runs tasks (workers beside HTTP replicas on a shared
// store) calls Start and serves nothing.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.eng.Load() != nil {
		return fmt.Errorf("%w: Start was called before", ErrStarted)
	}
	if s.opts.Store == nil {
		return errors.New("mcpserver: Options.Store is nil: give the server a store (sqlite.Open for a durable file, postgres.Open for replicas, memory.New for tests)")
	}
	var eo engine.Options
	if s.opts.Engine != nil {
		eo = *s.opts.Engine
	}
	if eo.Logger == nil {
		eo.Logger = s.opts.Logger
	}
	if eo.TracerProvider == nil {
		eo.TracerProvider = s.opts.TracerProvider
	}
	if eo.Observer == nil {
		m, err := metrics.New(s.reg, s.opts.Store)
		if err != nil {
			return fmt.Errorf("mcpserver: metrics: %w", err)
		}
		eo.Observer = m
	}
	tools := make([]*engine.Tool, 0, len(s.tools))
	for _, t := range s.tools {
		tools = append(tools, t.engine)
		// A client that polls as told must not be refused.
		suggested := cmp.Or(t.engine.PollInterval, eo.DefaultPollInterval, engine.DefaultPollInterval)
		if s.opts.MinPollInterval > suggested {
			return fmt.Errorf("%w: Options.MinPollInterval %s is longer than the poll interval %s suggested for the tasks of tool %q: clients that poll as told would get HTTP 429; lower it, or raise the tool's poll interval", ErrMinPollInterval, s.opts.MinPollInterval, suggested, t.engine.Name)
		}
	}
	eng, err := engine.New(s.opts.Store, tools, &eo)
	if err != nil {
		return fmt.Errorf("mcpserver: %w", err)
	}
	eng.Start(ctx)
	if f := s.opts.ChangeFeed; f != nil {
		fctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.Run(fctx) }()
		s.stopFeed = func() { cancel(); <-done }
	}
	s.eng.Store(eng)
	return nil
}

// Engine returns the engine that [Server.Start] built, or nil before
// Start: for an operator's tools (the console cancels through it).
func (s *Server) Engine() *engine.Engine { return s.eng.Load() }

// Shutdown drains the server and closes its store: [Server.ReadyHandler]
// says not ready from then on, open task subscriptions end, the engine stops claiming tasks, tasks
// waiting for input are released for another process to resume (tools
// whose RetryPolicy re-runs them), and running handlers, of tasks and of
// calls that run inline, get until ctx is done to finish. Handlers still
// running then are cancelled with cause [ErrShutdown] (a task's is left to
// be reclaimed after its lease), and Shutdown waits for them to return.
// Stop the HTTP server first (http.Server.Shutdown), so that no request
// arrives after the store is closed; its own deadline does not cancel the
// inline calls, this one does. Shutdown returns ctx's error if handlers
// were cut short, and the store's if it does not close.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	var err, ierr error
	var wg sync.WaitGroup
	wg.Go(func() { ierr = s.inline.drain(ctx) })
	if eng := s.eng.Load(); eng != nil {
		if err = eng.Shutdown(ctx); err != nil {
			err = fmt.Errorf("mcpserver: tasks still running at the drain deadline resume elsewhere after their lease: %w", err)
		}
	}
	wg.Wait()
	if ierr != nil {
		err = errors.Join(err, fmt.Errorf("mcpserver: tool calls running inline at the drain deadline were cancelled: %w", ierr))
	}
	s.EndSubscriptions()
	s.mu.Lock()
	stopFeed := s.stopFeed
	s.mu.Unlock()
	if stopFeed != nil {
		stopFeed() // before the store closes under it
	}
	if s.opts.Store != nil {
		if cerr := s.opts.Store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("mcpserver: close store: %w", cerr))
		}
	}
	return err
}
