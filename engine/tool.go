package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// A Handler does the work of a task. It returns the result JSON that the
// task completes with, or an error: a *task.Error fails the task with that
// JSON-RPC error, any other error fails it with an internal error.
//
// ctx is cancelled when the task is cancelled, when its lease is lost, or
// when the engine shuts down. A handler may be run again after a crash (see
// [RetryPolicy]); input it asked for before is then replayed from the store.
//
// Handlers of successive tasks may run on the same goroutine: a handler
// that locks it to its thread (runtime.LockOSThread) must unlock it before
// it returns.
type Handler func(ctx context.Context, run *Run) (json.RawMessage, error)

// Tool is a named handler with its task settings.
type Tool struct {
	// Name is the tool name tasks are created with.
	Name string
	// Handler runs the task.
	Handler Handler
	// TTL is how long tasks of this tool are kept after creation; zero
	// takes the engine's default and a negative value means no limit.
	TTL time.Duration
	// PollInterval is the pollIntervalMs suggested to clients; zero takes
	// the engine's default.
	PollInterval time.Duration
	// Retry says what happens when a worker running this tool is lost.
	Retry RetryPolicy
	// Hold keeps a handler that waits for input running, with its lease
	// and heartbeat, instead of suspending it after Options.SuspendAfter
	// (or at once past Options.MaxHeld, which such handlers do not count
	// against; Options.MaxHolding bounds them instead): for handlers that
	// must not be run again from the start
	// while a person answers, such as a command tool's running process or
	// a proxied call that holds an upstream session. A tool whose
	// Retry.Rerun is false always holds.
	Hold bool
}

// suspends reports whether the tool's handlers are suspended while they
// wait for input.
func (t *Tool) suspends() bool { return t.Retry.Rerun && !t.Hold }

// RetryPolicy says what happens to a task whose worker was lost (crashed or
// hung past its lease).
type RetryPolicy struct {
	// Rerun runs the handler again on another worker. Only for handlers
	// that are safe to repeat. If false, the task fails with a message
	// saying the worker was lost.
	Rerun bool
	// MaxAttempts bounds the runs of one task when Rerun is set (3 if
	// zero): once MaxAttempts runs have ended with a lost worker, the task
	// fails instead of running again. Only runs ended by a lost worker
	// count (task.Record.Losses): a task released gracefully, as a parked
	// handler is at Shutdown, and claimed again by another worker has not
	// used up an attempt. A handler that Shutdown cancels at its deadline
	// is not released, so its run counts.
	MaxAttempts int
}

func (t *Tool) validate() error {
	switch {
	case t == nil || t.Name == "":
		return errors.New("engine: tool without a name")
	case t.Handler == nil:
		return errors.New("engine: tool " + t.Name + " has no handler")
	}
	return nil
}

func (p RetryPolicy) maxAttempts() int { return or(p.MaxAttempts, 3) }
