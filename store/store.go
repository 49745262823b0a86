// Package store defines the durable storage seam of the task engine: one
// small interface that every backend (memory, sqlite, postgres) implements
// and that store/storetest checks.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// Errors returned by every Store.
var (
	// ErrNotFound means no task has the id (for the given principal, where
	// the call takes one). It deliberately does not say which.
	ErrNotFound = errors.New("store: task not found")
	// ErrExists means a task with the id already exists.
	ErrExists = errors.New("store: task already exists")
	// ErrLeaseLost means the write was fenced off: the task is terminal,
	// gone, or claimed again by a newer attempt than the caller's.
	ErrLeaseLost = errors.New("store: lease lost")
)

// DuplicateError is returned by [Store.Create] for a record whose
// IdempotencyKey the principal already used for a live task.
type DuplicateError struct {
	// Task is the task created with the key, as stored.
	Task *task.Record
}

func (e *DuplicateError) Error() string {
	return "store: idempotency key already used by task " + e.Task.ID
}

// Store is the durable home of task records. Every method is safe for
// concurrent use. A write that returns nil is durable: it survives a crash of
// the process (and, for the sqlite backend, of the machine).
//
// Writes made by a worker are fenced: they name the Attempt the worker
// claimed and fail with ErrLeaseLost when the task has moved on. The
// Attempt is the fencing token: a worker whose lease ran out may still write
// until another worker has claimed the task.
//
// Stores keep times to the millisecond; callers pass UTC times truncated to
// milliseconds. Get does not hide tasks whose TTL elapsed (it takes no
// time): the engine does, until DeleteExpired removes them.
type Store interface {
	// Create inserts a new task. It returns only after the record is
	// durable. If r has an IdempotencyKey that a task of r.Principal
	// already has, and that task has not expired at r.CreatedAt, Create
	// writes nothing and returns a *DuplicateError naming that task;
	// concurrent creates with one key make one task. An expired task
	// gives its key up to the new one.
	Create(ctx context.Context, r *task.Record) error
	// Get returns the task with the id, or ErrNotFound.
	Get(ctx context.Context, id string) (*task.Record, error)
	// GetFor returns the principal's task with the id, or ErrNotFound:
	// for an unknown id and for another principal's task alike. The
	// principal is part of the lookup, so that another principal's task
	// is never read and costs what an unknown id costs: tasks/get must
	// not tell them apart by its timing either.
	GetFor(ctx context.Context, id, principal string) (*task.Record, error)
	// Claim leases up to p.Limit claimable tasks to p.Owner: tasks that are
	// not terminal nor suspended ([Suspended]), whose tool is in p.Tools
	// (all tools if nil), and whose lease is unset or expired at p.Now. Each claim increments Attempt;
	// a claim whose previous lease expired while held (Claimed.Lost) also
	// increments Losses.
	// Oldest tasks are claimed first.
	Claim(ctx context.Context, p ClaimParams) ([]Claimed, error)
	// HeartbeatMany extends the leases of p.Leases in one round trip: each
	// one still held (see [CheckFence]: the task live and held at the
	// lease's Attempt at p.Now) to p.LeaseExpiresAt. It returns one
	// LeaseState per lease, in order, which tells whether a cancel was
	// requested. A lease that is not held is reported Lost and
	// changes nothing. An error is the whole call's (the store was
	// unreachable): the caller cannot know which leases were extended.
	HeartbeatMany(ctx context.Context, p HeartbeatManyParams) ([]LeaseState, error)
	// Release gives up the lease held at p.Attempt without ending the task,
	// so that another worker may claim it at once (graceful shutdown). A
	// task that waits for input (input_required) is suspended instead: no
	// worker claims it until an Answer leaves no key outstanding.
	Release(ctx context.Context, p FenceParams) error
	// SetStatusMessage sets the status message of a task held at p.Attempt.
	SetStatusMessage(ctx context.Context, p StatusMessageParams) error
	// RequestInput records input requests for a task held at p.Attempt.
	// Keys already answered are not asked again: their stored answers are
	// returned. Other keys become outstanding and the task input_required.
	// It also withdraws the outstanding keys p.Withdraw names.
	RequestInput(ctx context.Context, p RequestInputParams) (answers map[string]json.RawMessage, err error)
	// SaveStep stores the result of the durable step p.Name of a task held
	// at p.Attempt, in one write, and returns the result as stored. A step
	// is stored once: if the task has a result for p.Name already, that
	// one stays and is returned. It fails with an error wrapping
	// task.ErrStepTooLarge when the task's steps would pass
	// task.MaxStepsBytes, and ErrLeaseLost when the lease is not held.
	SaveStep(ctx context.Context, p StepParams) (json.RawMessage, error)
	// Finish ends a task held at p.Attempt in a terminal status and clears
	// its lease. The first terminal write wins: ErrLeaseLost if the task is
	// already terminal or held by a newer attempt.
	Finish(ctx context.Context, p FinishParams) error
	// Answer stores the responses for keys that are outstanding on the
	// principal's task and ignores the rest. When no key is left outstanding
	// the task returns to working (and a suspended task becomes claimable). It returns the keys it accepted, or
	// ErrNotFound when the principal has no task with that id.
	Answer(ctx context.Context, p AnswerParams) (accepted []string, err error)
	// RequestCancel asks for the principal's task to be cancelled. A
	// terminal task is left as it is. A task no worker holds is cancelled at
	// once; a held one gets CancelRequested for its worker to act on, or,
	// with p.AtOnce, is cancelled at once as well. It returns the record
	// after the change, or ErrNotFound.
	RequestCancel(ctx context.Context, p CancelParams) (*task.Record, error)
	// DeleteExpired deletes up to limit tasks whose TTL has elapsed at now
	// (all of them if limit is zero or less) and returns how many it
	// deleted.
	DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error)
	// Close releases the store's resources.
	Close() error
}

// Claimed is a task leased by [Store.Claim].
type Claimed struct {
	*task.Record
	// Lost reports that the task's previous lease expired while held: the
	// worker that held it died or hung. The claim counted it in Losses. The
	// engine applies the tool's retry policy to such tasks. A task released
	// by [Store.Release] is not lost.
	Lost bool
}

// ClaimParams are the parameters of [Store.Claim].
type ClaimParams struct {
	Owner string
	// Tools limits the claim to tasks of these tools; nil means any tool,
	// an empty non-nil slice none.
	Tools          []string
	Now            time.Time
	LeaseExpiresAt time.Time
	// Limit is the most tasks to claim; zero or less means no limit.
	Limit int
}

// FenceParams name a task and the attempt whose lease the caller holds.
type FenceParams struct {
	ID      string
	Attempt int
	Now     time.Time
}

// HeartbeatManyParams are the parameters of [Store.HeartbeatMany].
type HeartbeatManyParams struct {
	Leases         []Lease
	Now            time.Time
	LeaseExpiresAt time.Time
}

// Lease names a task and the attempt whose lease the caller holds.
type Lease struct {
	ID      string
	Attempt int
}

// LeaseState is what [Store.HeartbeatMany] reports of one lease.
type LeaseState struct {
	// Lost reports that the lease is not held any more (the task is
	// terminal, gone, expired, released or claimed again): it was not
	// extended, and the holder must stop.
	Lost bool
	// CancelRequested reports that a cancel of the task was requested.
	CancelRequested bool
	// Answered reports that the task waits for no input (it is not
	// input_required): a handler waiting for answers may read them.
	Answered bool
}

// StatusMessageParams are the parameters of [Store.SetStatusMessage].
type StatusMessageParams struct {
	FenceParams
	StatusMessage string
}

// RequestInputParams are the parameters of [Store.RequestInput].
type RequestInputParams struct {
	FenceParams
	// Requests maps input keys to InputRequest JSON.
	Requests map[string]json.RawMessage
	// StatusMessage, if set, replaces the status message when the task
	// goes to input_required.
	StatusMessage string
	// Suspend, if set, also releases the lease as [Store.Release] does
	// when some requested key has no answer yet: the task is then
	// suspended ([Suspended]) by the same write.
	Suspend bool
	// Withdraw names keys that the run no longer asks for (its handler
	// stopped waiting for them): each one still outstanding is removed,
	// before Requests are recorded, and a task left with none returns to
	// working. A key answered first keeps its answer.
	Withdraw []string
}

// StepParams are the parameters of [Store.SaveStep].
type StepParams struct {
	FenceParams
	// Name names the step; Result is its result JSON. The caller has
	// checked both with [task.CheckStep].
	Name   string
	Result json.RawMessage
}

// FinishParams are the parameters of [Store.Finish].
type FinishParams struct {
	FenceParams
	Status        task.Status // Completed, Failed or Cancelled.
	StatusMessage string
	Result        json.RawMessage // for Completed
	Error         *task.Error     // for Failed
}

// AnswerParams are the parameters of [Store.Answer].
type AnswerParams struct {
	ID        string
	Principal string
	Now       time.Time
	Responses map[string]json.RawMessage
	// Check, if set, is called for each response to an outstanding key,
	// with the request it answers, before anything is stored (in the
	// store's transaction, so keep it fast). If it refuses one, Answer
	// stores nothing and returns an *AnswerError.
	Check AnswerCheck
}

// AnswerCheck checks response, the answer to the outstanding input key,
// against request, the input request it answers. It returns an error that
// says what is wrong, or nil to accept it.
type AnswerCheck func(key string, request, response json.RawMessage) error

// AnswerError is the error of [Store.Answer] when AnswerParams.Check
// refused the response to Key; nothing was stored and Key stays
// outstanding.
type AnswerError struct {
	Key string
	Err error
}

func (e *AnswerError) Error() string { return fmt.Sprintf("store: answer to %q: %v", e.Key, e.Err) }

// Unwrap returns the error of the check.
func (e *AnswerError) Unwrap() error { return e.Err }

// CancelParams are the parameters of [Store.RequestCancel].
type CancelParams struct {
	ID            string
	Principal     string
	Now           time.Time
	StatusMessage string // set when the task is cancelled at once
	// AtOnce cancels a task that a worker holds at once too, instead of
	// asking its worker to: the worker's later writes are refused
	// (ErrLeaseLost), as they are for any terminal task.
	AtOnce bool
}

// Listener is implemented by stores that tell about changes: Postgres
// tells every process about the changes of any process (LISTEN/NOTIFY);
// memory and sqlite tell the changes made through the store value
// ([Broadcast]). Engines use it to wake the right worker at once, and
// changefeed to tell subscribers which tasks changed; without it they poll.
type Listener interface {
	// Listen delivers events until ctx is done. Events may be lost or
	// coalesced: they are a fast path in front of polling, never the only
	// path. The channel is closed when ctx is done (or when the
	// subscription ends for good; the caller may then Listen again).
	Listen(ctx context.Context) (<-chan Event, error)
}

// EventKind says what changed.
type EventKind string

// Kinds of [Event].
const (
	EventCreated   EventKind = "created"   // a task was created: claim it
	EventAnswered  EventKind = "answered"  // input arrived for a task
	EventCancelled EventKind = "cancelled" // a cancel was requested
	// EventUpdated: anything else a poll could see changed: the status
	// message, input requested, the task finished.
	EventUpdated EventKind = "updated"
	// EventDown: the store stopped announcing changes (its LISTEN
	// connection dropped); until the next EventResync nothing is
	// announced. It has no TaskID.
	EventDown EventKind = "down"
	// EventResync: events were lost (a full buffer, a dropped LISTEN
	// connection, now back): any task may have changed. It has no TaskID.
	EventResync EventKind = "resync"
)

// Event is a change to one task.
type Event struct {
	Kind   EventKind
	TaskID string
}

// Pinger is implemented by stores that can tell whether their database is
// reachable; /readyz uses it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Counter is implemented by stores that can count their live tasks cheaply
// (from an index); metrics use it.
type Counter interface {
	CountActive(ctx context.Context, now time.Time) (ActiveCounts, error)
}

// ActiveCounts counts the tasks that are not terminal.
type ActiveCounts struct {
	Working       int // working, including queued ones
	InputRequired int // waiting for input
	Queued        int // claimable: not held by any worker (new, released or lease expired), not suspended
}
