package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/term"
)

// requestTimeout bounds one request (a poll, an answer, a cancel), so that
// a server that stops answering cannot hang a command; a poll that times
// out is retried like any transient failure (client.Options.RequestTimeout).
// A tools/call is not bounded: it may run its tool inline for as long as
// the tool takes.
const requestTimeout = 30 * time.Second

// waitFunc is a wait of the client package: Client.CallAndWait bound to
// its call, or Task.Wait.
type waitFunc func(ctx context.Context, opts ...client.WaitOption) (*mcp.CallToolResult, error)

// follower follows one call or task to its end for call and wait, through
// the client's waits: each status change is shown as it happens (pushed by
// the server's notifications/tasks, or polled), questions are asked on the
// terminal (or end the command with exit 7 when they cannot be), and a
// Ctrl-C asks whether to detach, cancel or keep waiting.
type follower struct {
	t   *client.Task // nil until the call is a task
	out *output
	con *console
	// hints builds the command that comes back to the task and the
	// flags an "mcptasks answer" line needs, once the task is known.
	hints func(t *client.Task, journaled bool) (waitHint, answerExtra string)

	waitHint, answerExtra string
	cancelling            bool // tasks/cancel was sent: ask nothing more

	answers map[string]json.RawMessage // --answers, given instead of asking
	input   client.InputHandler        // see handler
}

// handler answers the questions of the call and its task: with the
// responses of --answers, each once, then with the terminal's prompts.
func (f *follower) handler() client.InputHandler {
	if f.input == nil {
		f.input = preparedInput(f.answers, f.con.inputHandler(f.out))
	}
	return f.input
}

// onTask takes the task a call became.
func (f *follower) onTask(t *client.Task, journalErr error) {
	f.t = t
	if journalErr != nil {
		f.out.warn("%v; the task runs anyway", journalErr)
	}
	f.waitHint, f.answerExtra = f.hints(t, journalErr == nil)
}

// run waits with wait until the end, and again after each Ctrl-C that
// does not detach.
func (f *follower) run(wait waitFunc) error {
	for {
		opts := []client.WaitOption{
			client.OnStatus(func(st *client.TaskStatus) {
				if f.t != nil {
					f.out.status(f.t, st)
				}
			}),
			client.WithInputHandler(f.handler()),
		}
		if f.t == nil {
			opts = append(opts, client.OnTask(f.onTask))
		}
		if f.cancelling {
			opts = append(opts, client.ManualInput())
		}
		ctx, cancel := context.WithCancel(f.con.ctx)
		stopWatch := f.con.watchInterrupt(cancel)
		res, err := wait(ctx, opts...)
		hit := stopWatch()
		cancel()
		if f.t != nil {
			wait = f.t.Wait
		}
		done, err := f.outcome(res, err, hit || interrupted(err))
		if done {
			return err
		}
	}
}

// outcome turns what a wait returned into the command's end (done), or
// into waiting again after a Ctrl-C (interrupted) that did not detach.
func (f *follower) outcome(res *mcp.CallToolResult, err error, interrupt bool) (done bool, _ error) {
	var ire *client.InputRequiredError
	var te *client.TaskError
	var ue *client.UnavailableError
	switch {
	case err == nil:
		var raw []byte
		if f.t != nil {
			if last := f.t.Last(); last != nil {
				raw = last.RawResult
			}
		}
		return true, f.out.result(f.t, res, raw)
	case f.t == nil && (interrupt || f.con.ctx.Err() != nil):
		// The call may have reached the server, which may have made a
		// task whose id never came back: it is in no journal.
		return true, &exitError{code: exitTaskCancelled, err: errors.New("interrupted before the server answered the call: if it reached the server, a task may have been made that is not in the journal (the server's operator console lists it)")}
	case f.t == nil && errors.As(err, &ire):
		f.out.inputRequired(nil, ire.Requests, "mcptasks: the server asks for input before it starts the call, and cannot ask it here; run the call on a terminal\n")
		return true, exitWith(exitInputRequired)
	case f.t == nil:
		return true, err
	case errors.As(err, &te):
		return true, f.out.ended(f.t, f.t.Last())
	case errors.As(err, &ire):
		f.out.inputRequired(f.t, ire.Requests, "mcptasks: task "+f.t.ID+" needs input and cannot ask it here. Answer with:\n"+
			answerHint(f.t.ID, ire.Requests, f.answerExtra)+"then follow the task with: "+f.waitHint+"\n")
		return true, exitWith(exitInputRequired)
	case interrupt && f.con.ctx.Err() == nil:
		return f.choose(f.con.ctx)
	case f.con.ctx.Err() != nil:
		return true, f.out.detached(f.t, f.waitHint)
	case errors.As(err, &ue):
		// The server failed for client.DefaultRetryBudget (it is down,
		// not restarting): the task may still be running there.
		return true, fmt.Errorf("%w\nFollow it again once the server is back: %s", err, f.waitHint)
	}
	return true, explainTaskError(f.t.ID, err)
}

var interruptChoices = []term.Choice{{Key: "d", Label: "detach"}, {Key: "c", Label: "cancel"}, {Key: "w", Label: "wait"}}

// choose asks what a Ctrl-C meant: detach (the command ends, the task
// keeps running), cancel (sends tasks/cancel and keeps waiting for the
// end) or keep waiting. A second Ctrl-C, or the end of input, detaches.
func (f *follower) choose(ctx context.Context) (done bool, _ error) {
	f.out.pause()
	defer f.out.resume()
	k, err := f.con.prompter.Choose(ctx, "\nTask "+f.t.ID+" is still running. Detach (it keeps running), cancel it, or wait?", interruptChoices, "w")
	switch {
	case interrupted(err), errors.Is(err, io.EOF):
		k = "d"
	case err != nil:
		return true, err
	}
	switch k {
	case "d":
		return true, f.out.detached(f.t, f.waitHint)
	case "c":
		cctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		if err := f.t.Cancel(cctx); err != nil {
			f.out.warn("cancel: %v", err)
			return false, nil
		}
		f.cancelling = true
		f.out.note("cancelling…")
	}
	return false, nil
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
// means: the server does not know the task (for this principal). An error
// about the answers of a tasks/update (naming params.inputResponses) is
// the server's own explanation, and is left as it is.
func explainTaskError(id string, err error) error {
	var re *client.Error
	if errors.As(err, &re) && strings.Contains(re.Message, "inputResponses") {
		return err
	}
	if errors.Is(err, client.ErrInvalidParams) {
		return fmt.Errorf("task %s is unknown to the server, expired, or another principal's (check --url and --token): %w", id, err)
	}
	return err
}
