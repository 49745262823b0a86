package store

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// The Apply functions hold the state-machine rules that every backend
// shares. A backend that stores whole records loads the record, calls the
// function and, if it returns nil and changed is true, writes the record
// back in the same transaction. They never mutate r on error.

// KeyHeld reports whether old, the principal's task with the
// idempotency key of a task being created at now, still holds the key, so
// that the create must return old instead ([DuplicateError]). A task holds
// its key until its TTL ends, whatever its status.
func KeyHeld(old *task.Record, now time.Time) bool {
	return !old.Expired(now)
}

// Suspended reports whether r is suspended: waiting for input
// (input_required) with no worker holding it, as a handler that gave up its
// lease to wait ([Store.Release]) leaves it. A suspended task is not
// claimable; the answer that leaves no key outstanding makes it working,
// and claimable, again.
func Suspended(r *task.Record) bool {
	return r.Status == task.InputRequired && r.LeaseOwner == ""
}

// Claimable reports whether a worker may claim r under p.
func Claimable(r *task.Record, p ClaimParams) bool {
	if r.Status.Terminal() || r.Expired(p.Now) || Suspended(r) {
		return false
	}
	if p.Tools != nil && !slices.Contains(p.Tools, r.Tool) {
		return false
	}
	return r.LeaseExpiresAt.IsZero() || !p.Now.Before(r.LeaseExpiresAt)
}

// ApplyClaim leases r to p.Owner. The caller has checked [Claimable]. A
// claim of a task whose lease expired while held is a loss: it increments
// r.Losses as well as r.Attempt.
func ApplyClaim(r *task.Record, p ClaimParams) Claimed {
	lost := r.LeaseOwner != ""
	r.Attempt++
	if lost {
		r.Losses++
	}
	r.LeaseOwner = p.Owner
	r.LeaseExpiresAt = p.LeaseExpiresAt
	r.AddHistory(task.HistoryEvent{At: p.Now, Kind: task.HistoryClaimed, Attempt: r.Attempt, Worker: p.Owner, Lost: lost})
	return Claimed{Record: r, Lost: lost}
}

// CheckFence returns ErrLeaseLost unless r is live and held at p.Attempt.
func CheckFence(r *task.Record, p FenceParams) error {
	if r.Status.Terminal() || r.Attempt != p.Attempt || r.LeaseOwner == "" || r.Expired(p.Now) {
		return ErrLeaseLost
	}
	return nil
}

// CancelledByRequest is the status message of a task that a release
// cancels (see [ApplyRelease]).
const CancelledByRequest = "Cancelled by request"

// ApplyHeartbeatState extends r's lease if l holds it (see [CheckFence]),
// and returns what the holder learns, for [Store.HeartbeatMany]. r is nil
// for a task that does not exist.
func ApplyHeartbeatState(r *task.Record, l Lease, p HeartbeatManyParams) LeaseState {
	if r == nil || CheckFence(r, FenceParams{ID: l.ID, Attempt: l.Attempt, Now: p.Now}) != nil {
		return LeaseState{Lost: true}
	}
	r.LeaseExpiresAt = p.LeaseExpiresAt
	return LeaseState{CancelRequested: r.CancelRequested, Answered: r.Status != task.InputRequired}
}

// ApplyRelease clears r's lease without ending the task. A task that
// waits for input is suspended so ([Suspended]), unless a cancel was
// requested: nobody would claim it to act on the request, so it is
// cancelled, with the message CancelledByRequest.
func ApplyRelease(r *task.Record, p FenceParams) error {
	if err := CheckFence(r, p); err != nil {
		return err
	}
	release(r, p.Now)
	return nil
}

// release clears r's lease, as [ApplyRelease] describes.
func release(r *task.Record, now time.Time) {
	r.AddHistory(task.HistoryEvent{At: now, Kind: task.HistoryReleased, Attempt: r.Attempt, Worker: r.LeaseOwner})
	r.LeaseOwner = ""
	r.LeaseExpiresAt = time.Time{}
	if r.CancelRequested && r.Status == task.InputRequired {
		finish(r, task.Cancelled, CancelledByRequest, now)
	}
}

// ApplyStatusMessage sets r's status message.
func ApplyStatusMessage(r *task.Record, p StatusMessageParams) (changed bool, err error) {
	if err := CheckFence(r, p.FenceParams); err != nil {
		return false, err
	}
	if r.StatusMessage == p.StatusMessage {
		return false, nil
	}
	r.StatusMessage = p.StatusMessage
	r.UpdatedAt = p.Now
	r.AddHistory(task.HistoryEvent{At: p.Now, Kind: task.HistoryStatus, Attempt: r.Attempt, Message: p.StatusMessage})
	return true, nil
}

// ApplyRequestInput withdraws the outstanding keys p.Withdraw names,
// records input requests on r and returns the stored answers for the
// requested keys that have them.
func ApplyRequestInput(r *task.Record, p RequestInputParams) (answers map[string]json.RawMessage, changed bool, err error) {
	if err := CheckFence(r, p.FenceParams); err != nil {
		return nil, false, err
	}
	changed = withdraw(r, p.Withdraw, p.Now)
	answers = map[string]json.RawMessage{}
	var asked []string
	requested := false // asked, or gone to input_required
	for k, req := range p.Requests {
		if a, ok := r.Answers[k]; ok {
			answers[k] = a
			continue
		}
		if _, ok := r.InputRequests[k]; ok {
			continue
		}
		if r.InputRequests == nil {
			r.InputRequests = map[string]json.RawMessage{}
		}
		r.InputRequests[k] = req
		asked = append(asked, k)
		requested = true
	}
	if len(r.InputRequests) > 0 && r.Status != task.InputRequired {
		r.Status = task.InputRequired
		requested = true
	}
	if requested {
		changed = true
		if p.StatusMessage != "" {
			r.StatusMessage = p.StatusMessage
		}
		r.UpdatedAt = p.Now
		r.AddHistory(task.HistoryEvent{At: p.Now, Kind: task.HistoryInputRequested, Attempt: r.Attempt, Message: p.StatusMessage, Keys: asked})
	}
	if p.Suspend && len(answers) < len(p.Requests) {
		release(r, p.Now)
		changed = true
	}
	return answers, changed, nil
}

// asksNoMore returns r to working once no input request is left
// outstanding (answered or withdrawn): its status message was the
// question's.
func asksNoMore(r *task.Record) {
	if len(r.InputRequests) > 0 {
		return
	}
	r.InputRequests = nil
	if r.Status == task.InputRequired {
		r.Status = task.Working
		r.StatusMessage = ""
	}
}

// withdraw removes the keys of r's input requests that keys names and
// reports whether there were any. A task left with none returns to
// working, as an answer to the last one leaves it (asksNoMore).
func withdraw(r *task.Record, keys []string, now time.Time) bool {
	var gone []string
	for _, k := range keys {
		if _, ok := r.InputRequests[k]; ok {
			delete(r.InputRequests, k)
			gone = append(gone, k)
		}
	}
	if gone == nil {
		return false
	}
	asksNoMore(r)
	slices.Sort(gone)
	r.UpdatedAt = now
	r.AddHistory(task.HistoryEvent{At: now, Kind: task.HistoryInputWithdrawn, Attempt: r.Attempt, Keys: gone})
	return true
}

// ApplyStep stores the result of the step p.Name on r, unless r has one
// already, and returns the result r keeps for it.
func ApplyStep(r *task.Record, p StepParams) (stored json.RawMessage, changed bool, err error) {
	if err := CheckFence(r, p.FenceParams); err != nil {
		return nil, false, err
	}
	if old, ok := r.Steps[p.Name]; ok {
		return old, false, nil
	}
	if err := task.CheckStep(p.Name, p.Result); err != nil {
		return nil, false, err
	}
	if n := task.StepsBytes(r.Steps) + len(p.Name) + len(p.Result); n > task.MaxStepsBytes {
		return nil, false, fmt.Errorf("%w: step %q would make the task's steps %d bytes, more than %d (task.MaxStepsBytes)",
			task.ErrStepTooLarge, p.Name, n, task.MaxStepsBytes)
	}
	if r.Steps == nil {
		r.Steps = map[string]json.RawMessage{}
	}
	r.Steps[p.Name] = slices.Clone(p.Result) // the caller keeps its own
	return p.Result, true, nil
}

// ApplyFinish ends r in a terminal status.
func ApplyFinish(r *task.Record, p FinishParams) error {
	if err := CheckFence(r, p.FenceParams); err != nil {
		return err
	}
	if err := r.Status.CheckTransition(p.Status); err != nil || !p.Status.Terminal() {
		return &task.TransitionError{From: r.Status, To: p.Status}
	}
	finish(r, p.Status, p.StatusMessage, p.Now)
	r.Result = p.Result
	r.Error = p.Error
	return nil
}

// finish ends r with status s and records it in r's history.
func finish(r *task.Record, s task.Status, msg string, now time.Time) {
	r.Status = s
	r.StatusMessage = msg // the working message no longer applies
	r.InputRequests = nil
	r.LeaseOwner = ""
	r.LeaseExpiresAt = time.Time{}
	r.UpdatedAt = now
	r.AddHistory(task.HistoryEvent{At: now, Kind: task.HistoryFinished, Attempt: r.Attempt, Status: s, Message: msg})
}

// visible reports whether principal may see r at now.
func visible(r *task.Record, principal string, now time.Time) bool {
	return r.Principal == principal && !r.Expired(now)
}

// ApplyAnswer stores the responses for r's outstanding keys. If
// p.Check refuses one, it changes nothing and returns an *AnswerError.
func ApplyAnswer(r *task.Record, p AnswerParams) (accepted []string, err error) {
	if !visible(r, p.Principal, p.Now) {
		return nil, ErrNotFound
	}
	if r.Status != task.InputRequired {
		return nil, nil
	}
	// The outstanding keys that the responses answer, in order: the
	// task's few, not the client's many.
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(r.InputRequests)) {
		if _, ok := p.Responses[k]; ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if p.Check != nil {
			if err := p.Check(k, r.InputRequests[k], p.Responses[k]); err != nil {
				return nil, &AnswerError{Key: k, Err: err}
			}
		}
	}
	for _, k := range keys {
		if r.Answers == nil {
			r.Answers = map[string]json.RawMessage{}
		}
		r.Answers[k] = p.Responses[k]
		delete(r.InputRequests, k)
		accepted = append(accepted, k)
	}
	if len(accepted) == 0 {
		return nil, nil
	}
	asksNoMore(r)
	r.UpdatedAt = p.Now
	r.AddHistory(task.HistoryEvent{At: p.Now, Kind: task.HistoryAnswered, Attempt: r.Attempt, Keys: accepted})
	return accepted, nil
}

// ApplyCancel requests the cancellation of r.
func ApplyCancel(r *task.Record, p CancelParams) (changed bool, err error) {
	if !visible(r, p.Principal, p.Now) {
		return false, ErrNotFound
	}
	if r.Status.Terminal() {
		return false, nil
	}
	if p.AtOnce || r.LeaseOwner == "" || !p.Now.Before(r.LeaseExpiresAt) {
		finish(r, task.Cancelled, p.StatusMessage, p.Now)
		return true, nil
	}
	if r.CancelRequested {
		return false, nil
	}
	r.CancelRequested = true
	r.AddHistory(task.HistoryEvent{At: p.Now, Kind: task.HistoryCancelRequested, Attempt: r.Attempt})
	return true, nil
}
