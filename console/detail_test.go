package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

func TestDetailPage(t *testing.T) {
	forEach(t, true, func(t *testing.T, b backend) {
		h := newHarness(t, b, Options{}, false)
		r := asking(newTask(0, "export_report", "bob"), "Overwrite report.csv with 5 rows?")
		r.Answers = map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}
		r.Steps = map[string]json.RawMessage{"query": json.RawMessage(`{"rows":5}`)}
		h.put(r)
		c := h.as(victorToken)

		res := c.get("/tasks/" + r.ID)
		wantPage(t, res, http.StatusOK,
			r.ID, "export_report", "bob", `<span class="status input_required">input required</span>`,
			// the question, and its request
			"Waiting for input", `<p class="ask">Overwrite report.csv with 5 rows?</p>`, "<code>confirm</code>", "elicitation/create",
			// the timeline
			"Created by bob, tool export_report", "Claimed by worker w1 (attempt 1)", "Status: Querying rows",
			"Asked for input: confirm — Overwrite report.csv with 5 rows?",
			// arguments, answers, steps, trace id, worker
			"secret-plans.txt", "Ada", "<h2>Steps</h2>", "<code>query</code>", "&#34;rows&#34;: 5",
			"4bf92f3577b34da6a3ce929d0e0e4736", "w1, lease until 2026-07-28 12:30:00.000Z",
			`data-live="/live/tasks/`+r.ID+`"`)
		// A viewer sees no cancel button.
		wantNot(t, res, "Cancel task")
		wantPage(t, h.as(aliceToken).get("/tasks/"+r.ID), http.StatusOK, "Cancel task")

		wantPage(t, c.get("/tasks/"+task.NewID()), http.StatusNotFound, "No task has that id")
		// An expired task is gone, as for a client, before the sweep
		// deletes it: no page, no cancel button that cannot cancel.
		expired := newTask(0, "render", "bob")
		expired.TTL = 30 * time.Minute // created an hour ago
		h.put(expired)
		wantPage(t, h.as(aliceToken).get("/tasks/"+expired.ID), http.StatusNotFound, "No task has that id")
	})
}

// TestDetailPage_Ended checks how a finished task shows its end, its lost
// workers and the events its history dropped.
func TestDetailPage_Ended(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{}, false)
	r := newTask(0, "render", "bob")
	r.Status, r.StatusMessage, r.Attempt, r.Losses = task.Failed, "lost 1 times; giving up", 2, 1
	r.Error = &task.Error{Code: -32603, Message: "The worker running this task was lost", Data: json.RawMessage(`{"attempt":2}`)}
	for _, e := range []task.HistoryEvent{
		{Kind: task.HistoryClaimed, Attempt: 1, Worker: "w1"},
		{Kind: task.HistoryStatus, Attempt: 1, Message: "frame 1"},
		{Kind: task.HistoryClaimed, Attempt: 2, Worker: "w2", Lost: true},
		{Kind: task.HistoryFinished, Attempt: 2, Status: task.Failed, Message: "lost 1 times; giving up"},
	} {
		e.At = t0.Add(time.Second)
		r.AddHistory(e)
	}
	r.History[2].Seq, r.History[3].Seq = 9, 10 // six events dropped between
	h.put(r)
	res := h.as(aliceToken).get("/tasks/" + r.ID)
	wantPage(t, res, http.StatusOK,
		"… 6 events not kept", "Worker w1 was lost: its lease of attempt 1 expired", "Claimed by worker w2 (attempt 2)",
		"Ended failed: lost 1 times; giving up", "-32603: The worker running this task was lost", "&#34;attempt&#34;: 2",
		"2 (1 lost with their worker)")
	wantNot(t, res, "Cancel task", "Waiting for input")
}

func TestDetailPage_Redacted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{Redact: true}, false)
	r := asking(newTask(0, "export_report", "bob"), "Overwrite?")
	r.Answers = map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}
	r.Steps = map[string]json.RawMessage{"query": json.RawMessage(`{"path":"the-secret-step"}`)}
	r.InputRequests["summary"] = json.RawMessage(`{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Summarise the-secret-prompt"}}],"maxTokens":100}}`)
	r.Status, r.Result = task.Completed, json.RawMessage(`{"content":[{"type":"text","text":"the secret result"}]}`)
	h.put(r)
	res := h.as(aliceToken).get("/tasks/" + r.ID)
	// Keys and shape stay; values go. The question's message, written for
	// a person, stays.
	wantPage(t, res, http.StatusOK, "&#34;filename&#34;: &#34;…&#34;", "&#34;rows&#34;: &#34;…&#34;", "&#34;name&#34;: &#34;…&#34;", "redacted",
		"Overwrite?", "sampling/createMessage")
	wantNot(t, res, "secret-plans.txt", "Ada", "the secret result", "the-secret-step", "the-secret-prompt")

	failed := newTask(0, "render", "bob")
	failed.Status = task.Failed
	failed.Error = &task.Error{Code: -32603, Message: "render failed", Data: json.RawMessage(`{"file":"the-secret-error"}`)}
	h.put(failed)
	res = h.as(aliceToken).get("/tasks/" + failed.ID)
	wantPage(t, res, http.StatusOK, "render failed", "&#34;file&#34;: &#34;…&#34;")
	wantNot(t, res, "the-secret-error")
}

func TestShowJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		redact bool
		want   string
	}{
		{``, false, ``},
		{`{"a":1}`, false, "{\n  \"a\": 1\n}"},
		{`not json`, false, `not json`},
		{`not json`, true, `…`},
		{`{"a":[1,"x",{"b":null}],"c":true}`, true, "{\n  \"a\": [\n    \"…\",\n    \"…\",\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": \"…\"\n}"},
	}
	for _, tt := range tests {
		if got := showJSON(json.RawMessage(tt.in), tt.redact); got != tt.want {
			t.Errorf("showJSON(%s, %v) = %q, want %q", tt.in, tt.redact, got, tt.want)
		}
	}
	big := json.RawMessage(`"` + strings.Repeat("é", maxShownJSON) + `"`)
	if got := showJSON(big, false); len(got) > maxShownJSON+100 {
		t.Errorf("showJSON of %d bytes gave %d bytes, want it cut near %d", len(big), len(got), maxShownJSON)
	}
}
