package task

import "fmt"

// Status is the status of a task.
//
//	working ──► input_required ──► working
//	   │               │
//	   └──────┬────────┘
//	          ▼
//	completed | failed | cancelled   (terminal: no way out)
type Status string

// The five statuses of the Tasks extension.
const (
	// Working: the request is being processed. Every task starts here.
	Working Status = "working"
	// InputRequired: the task waits for answers to its inputRequests,
	// delivered by tasks/update.
	InputRequired Status = "input_required"
	// Completed: the tool returned a result, which may have isError set.
	Completed Status = "completed"
	// Failed: the request ended in a JSON-RPC error, or the worker was
	// lost past the tool's retry policy. (A task whose TTL elapses is not
	// failed: it is no longer found, and the sweeper deletes it.)
	Failed Status = "failed"
	// Cancelled: the task was cancelled before it completed.
	Cancelled Status = "cancelled"
)

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool {
	switch s {
	case Working, InputRequired, Completed, Failed, Cancelled:
		return true
	}
	return false
}

// Terminal reports whether s is final: completed, failed or cancelled.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// CanTransition reports whether a task may go from status s to status to.
// Terminal statuses are final. Staying in a non-terminal status is allowed
// (a new status message, or another round of input).
func (s Status) CanTransition(to Status) bool {
	if !s.Valid() || !to.Valid() || s.Terminal() {
		return false
	}
	return true
}

// TransitionError reports a transition the state machine forbids.
type TransitionError struct {
	From, To Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("task: cannot go from %s to %s", e.From, e.To)
}

// CheckTransition returns a *TransitionError if s may not go to to.
func (s Status) CheckTransition(to Status) error {
	if !s.CanTransition(to) {
		return &TransitionError{From: s, To: to}
	}
	return nil
}
