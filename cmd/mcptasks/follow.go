package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/term"
	"github.com/mcptasks/mcptasks/task"
)

// maxPollFailures is how many transient polling errors in a row end a
// wait.
const maxPollFailures = client.DefaultMaxConsecutiveFails

// requestTimeout bounds one tasks/* request (a poll, an answer, a
// cancel), so that a server that stops answering cannot hang a command; a
// poll that times out is retried like any transient failure.
const requestTimeout = 30 * time.Second

// follower follows one task to its end for call and wait: it polls
// tasks/get as the server's pollIntervalMs says, reports each status
// change, asks the person for input (or stops with exit 7 when it cannot),
// and on Ctrl-C asks whether to detach or cancel.
//
// It polls itself rather than calling Task.Wait so that every status
// change is seen and a question can be interrupted.
type follower struct {
	t   *client.Task
	out *output
	con *console
	// answered are the input keys answered before (journal) or here.
	answered map[string]bool
	// waitHint is the command that comes back to the task; answerExtra
	// the flags an "mcptasks answer" line needs.
	waitHint, answerExtra string

	cancelling bool // tasks/cancel was sent: ask nothing more
}

func (f *follower) run() error {
	ctx := f.con.ctx
	var delay time.Duration
	if last := f.t.Last(); last != nil {
		f.out.status(f.t, last)
		delay = pollInterval(last)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	fails := 0
	for {
		select {
		case <-ctx.Done():
			return f.out.detached(f.t, f.waitHint)
		case <-f.con.intr:
			if err := f.interrupted(ctx); err != nil {
				return err
			}
			if f.cancelling {
				timer.Reset(0)
			}
			continue
		case <-timer.C:
		}
		gctx, cancel := context.WithTimeout(ctx, requestTimeout)
		st, err := f.t.Get(gctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return f.out.detached(f.t, f.waitHint)
			}
			if fails++; transient(err) && fails < maxPollFailures {
				f.out.warn("polling task %s failed, retrying: %v", f.t.ID, err)
				timer.Reset(pollInterval(f.t.Last()))
				continue
			}
			return explainTaskError(f.t.ID, err)
		}
		fails = 0
		f.out.status(f.t, st)
		switch st.Status {
		case task.Completed:
			return f.out.result(f.t, st.Result, st.RawResult)
		case task.Failed, task.Cancelled:
			return f.out.ended(f.t, st)
		case task.InputRequired:
			if err := f.input(ctx, st); err != nil {
				return err
			}
		}
		timer.Reset(pollInterval(st))
	}
}

// input answers the requests of st not answered before: with prompts on a
// terminal, or else by printing them and ending with exit 7.
func (f *follower) input(ctx context.Context, st *client.TaskStatus) error {
	if f.cancelling {
		return nil
	}
	pending := map[string]*client.InputRequest{}
	askable := true
	for k, r := range st.InputRequests {
		if !f.answered[k] {
			pending[k] = r
			askable = askable && r.Method == client.MethodElicit
		}
	}
	if len(pending) == 0 {
		return nil
	}
	if f.con.prompter == nil || !askable {
		f.out.inputRequired(f.t, pending, "mcptasks: task "+f.t.ID+" needs input and cannot ask it here. Answer with:\n"+
			answerHint(f.t.ID, pending, f.answerExtra)+"then follow the task with: "+f.waitHint+"\n")
		return exitWith(exitInputRequired)
	}
	f.out.pause()
	defer f.out.resume()
	answers := map[string]any{}
	keys := sortedKeys(pending)
	for _, k := range keys {
		a, err := f.con.elicit(ctx, k, pending[k])
		if interrupted(err) {
			return f.choose(ctx)
		}
		if err != nil {
			return err
		}
		answers[k] = a
	}
	uctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := f.t.Update(uctx, answers); err != nil {
		// The task may have ended meanwhile, or the server refused the
		// answers: the next poll tells, and asks again if need be.
		f.out.warn("sending the answers failed: %v", err)
		return nil
	}
	for _, k := range keys {
		f.answered[k] = true
	}
	f.out.note("answer sent")
	return nil
}

// interrupted handles a Ctrl-C while no question is open.
func (f *follower) interrupted(ctx context.Context) error {
	f.out.pause()
	defer f.out.resume()
	return f.choose(ctx)
}

var interruptChoices = []term.Choice{{Key: "d", Label: "detach"}, {Key: "c", Label: "cancel"}, {Key: "w", Label: "wait"}}

// choose asks what a Ctrl-C meant: detach (returns the detached outcome),
// cancel (sends tasks/cancel and keeps waiting for the end) or keep
// waiting. A second Ctrl-C, or the end of input, detaches.
func (f *follower) choose(ctx context.Context) error {
	k, err := f.con.prompter.Choose(ctx, "\nTask "+f.t.ID+" is still running. Detach (it keeps running), cancel it, or wait?", interruptChoices, "w")
	switch {
	case interrupted(err), errors.Is(err, io.EOF):
		k = "d"
	case err != nil:
		return err
	}
	switch k {
	case "d":
		return f.out.detached(f.t, f.waitHint)
	case "c":
		cctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		if err := f.t.Cancel(cctx); err != nil {
			f.out.warn("cancel: %v", err)
			return nil
		}
		f.cancelling = true
		f.out.note("cancelling…")
	}
	return nil
}

// pollInterval is the wait before the next poll after st: its
// pollIntervalMs, clamped as the client package does.
func pollInterval(st *client.TaskStatus) time.Duration {
	d := client.DefaultPollInterval
	if st != nil && st.PollIntervalMs != nil && *st.PollIntervalMs > 0 {
		d = time.Duration(*st.PollIntervalMs) * time.Millisecond
	}
	return min(max(d, client.DefaultMinPollInterval), client.DefaultMaxPollInterval)
}

// transient reports whether a polling error is worth retrying:
// transport failures, HTTP 5xx and 429, and -32603.
func transient(err error) bool {
	var he *client.HTTPError
	var re *client.Error
	var te *client.TransportError
	switch {
	case errors.As(err, &he):
		return he.StatusCode >= 500 || he.StatusCode == http.StatusTooManyRequests
	case errors.As(err, &re):
		return re.Code == client.CodeInternalError || re.HTTPStatus == http.StatusTooManyRequests
	case errors.As(err, &te):
		return !errors.Is(err, client.ErrReplyTooLarge)
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// explainTaskError adds what an invalid-params error of a tasks/* request
// means: the server does not know the task (for this principal).
func explainTaskError(id string, err error) error {
	if errors.Is(err, client.ErrInvalidParams) {
		return fmt.Errorf("task %s is unknown to the server, expired, or another principal's (check --url and --token): %w", id, err)
	}
	return err
}
