package engine

import "errors"

// Causes of a handler's ctx cancellation: context.Cause(ctx) wraps one of
// them once the engine stops a run, so that a handler can tell a user's
// cancel from a draining server (errors.Is).
var (
	// ErrCancelRequested: the task was cancelled (tasks/cancel, or an
	// operator). The task ends cancelled whatever the handler returns.
	ErrCancelRequested = errors.New("task cancelled by request")
	// ErrLeaseLost: this worker lost its claim on the task (a missed
	// heartbeat); another worker may run it.
	ErrLeaseLost = errors.New("task lease lost")
	// ErrShutdown: the engine is draining ([Engine.Shutdown]) and its
	// deadline passed. Nothing is written: the task is re-run or failed
	// elsewhere under its tool's retry policy once its lease expires.
	ErrShutdown = errors.New("engine shutting down")
)
