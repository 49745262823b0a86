package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/term"
	"github.com/mcptasks/mcptasks/task"
)

// event is one line of the JSON-lines output of call and wait: a status
// change, input required, the final result, or detached. Fields are only
// ever added.
type event struct {
	// Type is "status", "input_required", "result" or "detached".
	Type          string      `json:"type"`
	TaskID        string      `json:"taskId,omitempty"`
	ServerURL     string      `json:"serverUrl,omitempty"`
	Tool          string      `json:"tool,omitempty"`
	Status        task.Status `json:"status,omitempty"`
	StatusMessage string      `json:"statusMessage,omitempty"`
	// InputRequests are the unanswered requests, by input key.
	InputRequests map[string]*client.InputRequest `json:"inputRequests,omitempty"`
	// Result is the CallToolResult of a completed call.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the JSON-RPC error of a failed task.
	Error *errorJSON `json:"error,omitempty"`
}

type errorJSON struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func newErrorJSON(e *client.Error) *errorJSON {
	if e == nil {
		return nil
	}
	return &errorJSON{Code: e.Code, Message: e.Message, Data: e.Data}
}

// output is what call and wait show: for a person (a live status line and
// text) or for a program (JSON lines).
type output struct {
	s     *streams
	human bool
	start time.Time

	line     *term.StatusLine // human only
	stopTick context.CancelFunc
	ticking  sync.WaitGroup
	header   bool // the task's header line is printed
	// canAsk says whether Ctrl-C asks (stdin is a terminal) or just
	// detaches.
	canAsk bool
	last   *client.TaskStatus
}

func newOutput(s *streams, human bool) *output {
	o := &output{s: s, human: human, start: time.Now(), canAsk: s.inTTY}
	if human {
		o.line = term.NewStatusLine(s.out, s.width, o.start)
		ctx, cancel := context.WithCancel(context.Background())
		o.stopTick = cancel
		o.ticking.Go(func() { o.line.Run(ctx, term.DefaultTick) })
	}
	return o
}

// close stops the status line.
func (o *output) close() {
	if o.human {
		o.stopTick()
		o.ticking.Wait()
		o.line.Stop()
	}
}

func (o *output) emit(e event) {
	b, _ := json.Marshal(e)
	fmt.Fprintf(o.s.out, "%s\n", b)
}

// calling shows that a tools/call is on its way.
func (o *output) calling(tool string) {
	if o.human {
		o.line.Set("calling "+tool, "")
	}
}

// status reports a status of t when it differs from the last one shown.
func (o *output) status(t *client.Task, st *client.TaskStatus) {
	if o.last != nil && o.last.Status == st.Status && o.last.StatusMessage == st.StatusMessage {
		return
	}
	o.last = st
	if !o.human {
		o.emit(event{Type: "status", TaskID: t.ID, ServerURL: t.ServerURL, Tool: t.Tool, Status: st.Status, StatusMessage: st.StatusMessage})
		return
	}
	if !o.header {
		o.header = true
		if !st.CreatedAt.IsZero() && st.CreatedAt.Before(o.start) {
			o.line.SetStart(st.CreatedAt)
		}
		tool := ""
		if t.Tool != "" {
			tool = " (" + t.Tool + ")"
		}
		ctrlC := "Ctrl-C to detach."
		if o.canAsk {
			ctrlC = "Ctrl-C to detach or cancel."
		}
		o.line.Println(fmt.Sprintf("Task %s%s on %s. %s", t.ID, tool, t.ServerURL, ctrlC))
	}
	o.line.Set(string(st.Status), st.StatusMessage)
}

// note shows msg as the status line's message, until the next status
// change (for a person only).
func (o *output) note(msg string) {
	if o.human && o.last != nil {
		o.line.Set(string(o.last.Status), msg)
	}
}

// pause frees the terminal for a prompt; resume takes it back.
func (o *output) pause() {
	if o.human {
		o.line.Pause()
	}
}

func (o *output) resume() {
	if o.human {
		o.line.Resume()
	}
}

// inputRequired prints input requests that cannot be asked here, as JSON,
// and a hint on stderr of how to answer them. taskID is "" for an MRTR
// round of a call.
func (o *output) inputRequired(t *client.Task, reqs map[string]*client.InputRequest, hint string) {
	if o.human {
		o.line.Stop()
	}
	e := event{Type: "input_required", InputRequests: reqs}
	if t != nil {
		e.TaskID, e.ServerURL, e.Tool, e.Status = t.ID, t.ServerURL, t.Tool, task.InputRequired
	}
	o.emit(e)
	fmt.Fprint(o.s.err, hint)
}

// result reports the final result of a call or task (t nil for a result
// the server gave at once) and returns the command's outcome.
func (o *output) result(t *client.Task, res *mcp.CallToolResult, raw json.RawMessage) error {
	code := exitOK
	if res != nil && res.IsError {
		code = exitToolError
	}
	if len(raw) == 0 {
		raw, _ = json.Marshal(res)
	}
	if !o.human {
		e := event{Type: "result", Status: task.Completed, Result: raw}
		if t != nil {
			e.TaskID, e.ServerURL, e.Tool = t.ID, t.ServerURL, t.Tool
		}
		o.emit(e)
		return exitWith(code)
	}
	o.line.Stop()
	if t != nil || code == exitToolError {
		verdict := "✓ completed"
		if code == exitToolError {
			verdict = "✗ completed with a tool error"
		}
		fmt.Fprintf(o.s.out, "%s in %s\n", verdict, term.Elapsed(time.Since(o.start)))
	}
	writeContent(o.s.out, res)
	return exitWith(code)
}

// ended reports a task that failed or was cancelled and returns the
// command's outcome.
func (o *output) ended(t *client.Task, st *client.TaskStatus) error {
	te := &client.TaskError{TaskID: t.ID, Status: st.Status, StatusMessage: st.StatusMessage, Err: st.Error}
	code := exitTaskFailed
	if st.Status == task.Cancelled {
		code = exitTaskCancelled
	}
	if !o.human {
		o.emit(event{Type: "result", TaskID: t.ID, ServerURL: t.ServerURL, Tool: t.Tool, Status: st.Status,
			StatusMessage: st.StatusMessage, Error: newErrorJSON(st.Error)})
		return &exitError{code: code, err: te}
	}
	o.line.Stop()
	msg := ""
	switch {
	case st.Error != nil:
		msg = ": " + st.Error.Error()
	case st.StatusMessage != "":
		msg = ": " + st.StatusMessage
	}
	fmt.Fprintf(o.s.out, "✗ %s after %s%s\n", st.Status, term.Elapsed(time.Since(o.start)), msg)
	return exitWith(code)
}

// detached reports that the command leaves t running.
func (o *output) detached(t *client.Task, hint string) error {
	status := task.Working
	if o.last != nil {
		status = o.last.Status
	}
	if !o.human {
		o.emit(event{Type: "detached", TaskID: t.ID, ServerURL: t.ServerURL, Tool: t.Tool, Status: status})
		fmt.Fprintf(o.s.err, "mcptasks: detached; task %s keeps running. Come back with: %s\n", t.ID, hint)
		return exitWith(exitDetached)
	}
	o.line.Stop()
	fmt.Fprintf(o.s.out, "Detached: task %s keeps running (%s). Come back with:\n  %s\n", t.ID, status, hint)
	return exitWith(exitDetached)
}

// warn prints a one-line warning on stderr, above the status line.
func (o *output) warn(format string, args ...any) {
	msg := "mcptasks: " + fmt.Sprintf(format, args...)
	if o.human && o.s.err == o.s.out {
		o.line.Println(msg)
		return
	}
	if o.human {
		o.line.Pause()
		defer o.line.Resume()
	}
	fmt.Fprintln(o.s.err, msg)
}

// writeContent writes a tool result for a person: text as text, other
// content as a one-line summary, structured content as JSON when there is
// nothing else.
func writeContent(w io.Writer, res *mcp.CallToolResult) {
	if res == nil {
		return
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprint(w, c.Text)
			if !strings.HasSuffix(c.Text, "\n") {
				fmt.Fprintln(w)
			}
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource %s %s]\n", c.URI, c.Name)
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil && r.Text != "" {
				fmt.Fprintf(w, "[resource %s]\n%s\n", r.URI, strings.TrimSuffix(r.Text, "\n"))
			} else if r != nil {
				fmt.Fprintf(w, "[resource %s, %d bytes]\n", r.URI, len(r.Blob))
			}
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "%s\n", b)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, err := json.MarshalIndent(res.StructuredContent, "", "  ")
		if err == nil {
			fmt.Fprintf(w, "%s\n", b)
		}
	}
}

// answerHint is how to answer reqs of task id from a shell: one
// "mcptasks answer" line per request, with the form's required fields.
func answerHint(id string, reqs map[string]*client.InputRequest, extra string) string {
	var b strings.Builder
	for _, k := range sortedKeys(reqs) {
		r := reqs[k]
		fields := ""
		if r.Method == client.MethodElicit {
			if e, err := term.ParseElicitation(r.Params); err == nil {
				if form, err := term.ParseSchema(e.Schema); err == nil {
					for _, f := range form.Fields {
						if f.Required {
							fields += " " + f.Name + "=" + f.Placeholder()
						}
					}
				}
			}
		}
		keyArg := " " + shellQuote(k)
		if len(reqs) == 1 {
			keyArg = "" // the only question needs no key
		}
		fmt.Fprintf(&b, "  mcptasks answer%s %s%s%s\n", extra, idArg(id), keyArg, fields)
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell if it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
