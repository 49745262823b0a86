package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// detailBody is the data of a task's page.
type detailBody struct {
	T         *task.Record
	ExpiresAt time.Time
	TraceID   string
	Args      string
	Questions []question
	Answers   []answer
	Steps     []answer // the stored results of durable steps, by name
	Result    string
	ErrorData string
	Timeline  []event
	// CanCancel is set when the operator may cancel the task: it is
	// live, and no cancel is pending, or one is but the worker that
	// should act on it has lost its lease (a cancel then ends the task
	// at once).
	CanCancel bool
}

// question is an outstanding input request.
type question struct {
	Key, Method, Message, Params string
}

// answer is a stored answer.
type answer struct {
	Key, JSON string
}

// event is a line of the timeline.
type event struct {
	At      time.Time
	Kind    string // a CSS class
	Text    string
	Attempt int
}

// detail reads the task of r's path, or returns nil if there is none.
func (c *Console) detail(r *http.Request, se *session) (*detailBody, error) {
	id := r.PathValue("id")
	if !task.ValidID(id) {
		return nil, nil // not a task id: none is stored under it
	}
	rec, err := c.st.Get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rec.Expired(c.opts.Now()) {
		return nil, nil // gone for everyone else, as for the list (the sweep deletes it)
	}
	redact := c.opts.Redact
	b := &detailBody{
		T: rec, TraceID: traceID(rec.TraceParent), Args: showJSON(rec.Args, redact),
		Result: showJSON(rec.Result, redact), Timeline: timeline(rec),
	}
	held := rec.LeaseOwner != "" && c.opts.Now().Before(rec.LeaseExpiresAt)
	b.CanCancel = se.account.CanAct() && !rec.Status.Terminal() && (!rec.CancelRequested || !held)
	b.ExpiresAt, _ = rec.ExpiresAt()
	if rec.Error != nil {
		b.ErrorData = showJSON(rec.Error.Data, redact)
	}
	for _, k := range slices.Sorted(maps.Keys(rec.InputRequests)) {
		b.Questions = append(b.Questions, parseQuestion(k, rec.InputRequests[k], redact))
	}
	for _, k := range slices.Sorted(maps.Keys(rec.Answers)) {
		b.Answers = append(b.Answers, answer{Key: k, JSON: showJSON(rec.Answers[k], redact)})
	}
	for _, k := range slices.Sorted(maps.Keys(rec.Steps)) {
		b.Steps = append(b.Steps, answer{Key: k, JSON: showJSON(rec.Steps[k], redact)})
	}
	return b, nil
}

// parseQuestion reads an InputRequest ({"method": …, "params": …}): the
// message of an elicitation is its question. redact hides the values of
// the request (a sampling request quotes the task's data), not its message,
// which the tool wrote for a person.
func parseQuestion(key string, raw json.RawMessage, redact bool) question {
	q := question{Key: key, Params: showJSON(raw, redact)}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) == nil {
		q.Method, q.Message = req.Method, req.Params.Message
	}
	return q
}

// traceID returns the trace id of a W3C traceparent
// (version-traceid-spanid-flags), or "".
func traceID(traceparent string) string {
	parts := strings.Split(traceparent, "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		return ""
	}
	return parts[1]
}

// detailPage shows a task.
func (c *Console) detailPage(w http.ResponseWriter, r *http.Request, se *session) {
	b, err := c.detail(r, se)
	if err != nil {
		c.storeError(w, se, "get task", err)
		return
	}
	if b == nil {
		c.errorPage(w, se, http.StatusNotFound, "No task has that id: it may have expired and been deleted.")
		return
	}
	d := c.data(se, "Task "+b.T.ID, "tasks", b)
	d.Live = "/live/tasks/" + b.T.ID
	c.render(w, "detail", http.StatusOK, d)
}

// timeline returns the lines of r's timeline: its creation, then its
// history, with a line where events were dropped.
func timeline(r *task.Record) []event {
	evs := []event{{At: r.CreatedAt, Kind: "created", Text: fmt.Sprintf("Created by %s, tool %s", r.Principal, r.Tool)}}
	workers := map[int]string{} // attempt → worker, from the claims kept
	prevSeq := 0
	for _, h := range r.History {
		if n := h.Seq - prevSeq - 1; n > 0 {
			evs = append(evs, event{Kind: "gap", Text: fmt.Sprintf("… %d %s not kept", n, plural(n, "event", "events"))})
		}
		prevSeq = h.Seq
		e := event{At: h.At, Kind: string(h.Kind), Attempt: h.Attempt}
		switch h.Kind {
		case task.HistoryClaimed:
			if h.Lost {
				lost := "The previous worker"
				if w, ok := workers[h.Attempt-1]; ok {
					lost = "Worker " + w
				}
				evs = append(evs, event{At: h.At, Kind: "lost", Attempt: h.Attempt - 1,
					Text: fmt.Sprintf("%s was lost: its lease of attempt %d expired", lost, h.Attempt-1)})
			}
			workers[h.Attempt] = h.Worker
			e.Text = fmt.Sprintf("Claimed by worker %s (attempt %d)", h.Worker, h.Attempt)
		case task.HistoryReleased:
			e.Text = fmt.Sprintf("Released by worker %s, for another to claim", h.Worker)
		case task.HistoryStatus:
			e.Text = "Status: " + h.Message
		case task.HistoryInputRequested:
			e.Text = "Asked for input: " + strings.Join(h.Keys, ", ")
			if h.Message != "" {
				e.Text += " — " + h.Message
			}
		case task.HistoryAnswered:
			e.Text = "Answered: " + strings.Join(h.Keys, ", ")
		case task.HistoryInputWithdrawn:
			e.Text = "No longer asks for: " + strings.Join(h.Keys, ", ")
		case task.HistoryCancelRequested:
			e.Text = "Cancel requested; the worker stops the task"
		case task.HistoryFinished:
			e.Kind = string(h.Status)
			e.Text = "Ended " + strings.ReplaceAll(string(h.Status), "_", " ")
			if h.Message != "" {
				e.Text += ": " + h.Message
			}
		default:
			e.Text = string(h.Kind)
		}
		evs = append(evs, e)
	}
	return evs
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
