package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

// statusLog is an OnStatus that keeps what it is given.
type statusLog struct {
	mu  sync.Mutex
	all []*client.TaskStatus
}

func (l *statusLog) option() client.WaitOption {
	return client.OnStatus(func(st *client.TaskStatus) {
		l.mu.Lock()
		l.all = append(l.all, st)
		l.mu.Unlock()
	})
}

func (l *statusLog) statuses() []task.Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []task.Status
	for _, st := range l.all {
		out = append(out, st.Status)
	}
	return out
}

// TestCallAndWait: one call returns the final result whether the server
// answers at once, after an MRTR round, or with a task; OnTask and OnStatus
// see the task.
func TestCallAndWait(t *testing.T) {
	s := startServer(t, serverConfig{})
	h := newAccept(func(key string) map[string]any {
		if key == "user_name" {
			return map[string]any{"name": "Ada"}
		}
		return map[string]any{"overwrite": true}
	})
	c := newClient(s, &client.Options{InputHandler: h})
	ctx := testContext(t)
	for _, tc := range []struct {
		name, tool string
		args       any
		want       string
		task       bool
	}{
		{"inline", "greet", map[string]any{"name": "Ada"}, "Hello, Ada!", false},
		{"mrtr then task", "test_tool_with_task", nil, "Hello, Ada! Your task is done.", true},
		{"task with a question", "export_report", map[string]any{"rows": 3}, "Wrote 3 rows to report.csv", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log statusLog
			var created *client.Task
			res, err := c.CallAndWait(ctx, tc.tool, tc.args, log.option(), client.OnTask(func(tk *client.Task, jerr error) {
				if jerr != nil {
					t.Errorf("OnTask: journal error %v without a journal", jerr)
				}
				created = tk
			}))
			if err != nil {
				t.Fatal(err)
			}
			if got := text(res); got != tc.want {
				t.Errorf("result %q, want %q", got, tc.want)
			}
			if (created != nil) != tc.task {
				t.Fatalf("OnTask called: %v, want %v", created != nil, tc.task)
			}
			got := log.statuses()
			if !tc.task {
				if len(got) != 0 {
					t.Errorf("OnStatus saw %v for a call answered at once", got)
				}
				return
			}
			if len(got) < 2 || got[0] != task.Working || got[len(got)-1] != task.Completed {
				t.Errorf("OnStatus saw %v, want working first and completed last", got)
			}
			for i := 1; i < len(log.all); i++ {
				if a, b := log.all[i-1], log.all[i]; a.Status == b.Status && a.StatusMessage == b.StatusMessage && len(a.InputRequests) == len(b.InputRequests) {
					t.Errorf("OnStatus saw the same status twice in a row: %s %q", b.Status, b.StatusMessage)
				}
			}
			if tc.tool == "export_report" && !slices.Contains(got, task.InputRequired) {
				t.Errorf("OnStatus saw %v, want input_required among them", got)
			}
		})
	}
}

// TestDefaultCapabilities: a client made with no options declares form
// elicitation, so a task that asks is created (export_report requires the
// capability) and its question reaches the caller.
func TestDefaultCapabilities(t *testing.T) {
	rec := newRecorder()
	s := startServer(t, serverConfig{wrap: rec.wrap})
	c := client.New(s.url, nil)
	ctx := testContext(t)
	res, err := c.CallTool(ctx, "export_report", map[string]any{"rows": 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil {
		t.Fatal("export_report did not become a task")
	}
	_ = res.Task.Cancel(ctx)
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(rec.requests("tools/call")[0].req.Params, &p)
	var caps mcp.ClientCapabilities
	if err := json.Unmarshal(p.Meta[client.MetaClientCapabilities], &caps); err != nil {
		t.Fatal(err)
	}
	if caps.Elicitation == nil || caps.Elicitation.Form == nil || caps.Elicitation.URL != nil {
		t.Errorf("declared %s, want form elicitation only", p.Meta[client.MetaClientCapabilities])
	}
}

// TestManualAnswer: without an InputHandler, CallAndWait returns the
// question as an *InputRequiredError with the task's handle; the caller
// answers it with Update and waits again, and the answered key is not
// reported again.
func TestManualAnswer(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, nil)
	ctx := testContext(t)
	_, err := c.CallAndWait(ctx, "export_report", map[string]any{"rows": 4})
	var ire *client.InputRequiredError
	if !errors.As(err, &ire) || !errors.Is(err, client.ErrInputRequired) {
		t.Fatalf("CallAndWait: %v, want an *InputRequiredError", err)
	}
	if ire.Task == nil || ire.TaskID != ire.Task.ID {
		t.Fatalf("InputRequiredError without its task: %+v", ire)
	}
	req := ire.Requests["confirm-overwrite"]
	if req == nil || req.Elicit == nil || !strings.Contains(req.Elicit.Message, "4 rows") {
		t.Fatalf("requests %v, want confirm-overwrite asking about 4 rows", ire.Requests)
	}
	if err := ire.Task.Update(ctx, map[string]any{"confirm-overwrite": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"overwrite": true}}}); err != nil {
		t.Fatal(err)
	}
	res, err := ire.Task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "Wrote 4 rows to report.csv" {
		t.Errorf("result %q", got)
	}
}

// TestWait_QuestionGone: an InputHandler that waits (for a person, or for
// the answer of another task it forwards the question to) sees its context
// end once the server no longer asks (here the task is cancelled
// meanwhile), and the wait reports the task's end. Before, the wait stayed
// in the handler until it answered.
func TestWait_QuestionGone(t *testing.T) {
	s := startServer(t, serverConfig{})
	ctx := testContext(t)
	asked := make(chan struct{}, 1)
	handlerErr := make(chan error, 1)
	c := newClient(s, &client.Options{InputHandler: client.InputHandlerFunc(func(hctx context.Context, _ string, _ *client.InputRequest) (any, error) {
		asked <- struct{}{}
		<-hctx.Done()
		handlerErr <- context.Cause(hctx)
		return nil, hctx.Err()
	})})
	cr, err := c.CallTool(ctx, "confirm_delete", map[string]any{"filename": "a.txt"})
	if err != nil || cr.Task == nil {
		t.Fatalf("CallTool: %+v, %v", cr, err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := cr.Task.Wait(ctx)
		waited <- err
	}()
	<-asked
	if err := c.Task(cr.Task.ID).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	var te *client.TaskError
	if err := <-waited; !errors.As(err, &te) || te.Status != task.Cancelled {
		t.Errorf("Wait = %v, want the task's cancellation", err)
	}
	if err := <-handlerErr; !errors.Is(err, client.ErrNotAsked) {
		t.Errorf("the handler's context ended with %v, want ErrNotAsked", err)
	}
}

// TestManualInputMode: with ManualInput the wait reports the question
// through OnStatus and keeps waiting while the caller answers it from
// another goroutine.
func TestManualInputMode(t *testing.T) {
	s := startServer(t, serverConfig{})
	c := newClient(s, nil)
	ctx := testContext(t)
	var once sync.Once
	var tk *client.Task
	var wg sync.WaitGroup
	res, err := c.CallAndWait(ctx, "confirm_delete", map[string]any{"filename": "a.txt"},
		client.ManualInput(),
		client.OnTask(func(t *client.Task, _ error) { tk = t }),
		client.OnStatus(func(st *client.TaskStatus) {
			if st.InputRequests["confirm-delete"] == nil {
				return
			}
			once.Do(func() {
				wg.Go(func() {
					if err := tk.Update(ctx, map[string]any{"confirm-delete": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}); err != nil {
						t.Error(err)
					}
				})
			})
		}))
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "Deleted a.txt" {
		t.Errorf("result %q, want Deleted a.txt", got)
	}
}

// TestWaitSkipsJournalAnswers: a key the Journal records as answered (by
// "mcptasks answer", or before a restart) is not passed to the
// InputHandler by a later wait.
func TestWaitSkipsJournalAnswers(t *testing.T) {
	s := startServer(t, serverConfig{})
	j := client.MemoryJournal()
	ctx := testContext(t)
	first := newClient(s, &client.Options{Journal: j})
	res, err := first.CallTool(ctx, "confirm_delete", map[string]any{"filename": "b.txt"})
	if err != nil || res.Task == nil {
		t.Fatalf("call: %v %v", res, err)
	}
	if _, err := res.Task.Wait(ctx); !errors.Is(err, client.ErrInputRequired) {
		t.Fatalf("wait: %v, want input required", err)
	}
	// Another program answers, through its own handle of the task.
	other := newClient(s, &client.Options{Journal: j}).Task(res.Task.ID)
	if err := other.Update(ctx, map[string]any{"confirm-delete": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}); err != nil {
		t.Fatal(err)
	}
	h := newAccept(func(string) map[string]any { return map[string]any{"confirm": false} })
	out, err := newClient(s, &client.Options{Journal: j, InputHandler: h}).Task(res.Task.ID).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if text(out) != "Deleted b.txt" || h.count("confirm-delete") != 0 {
		t.Errorf("result %q, handler asked %d times; want Deleted b.txt and no question", text(out), h.count("confirm-delete"))
	}
}

// TestNoPushRemembered: a server without subscriptions/listen (-32601)
// is asked once per client; later waits poll at once.
func TestNoPushRemembered(t *testing.T) {
	rec := newRecorder()
	noListen := func(next http.Handler) http.Handler {
		return rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
				writeJSON(w, http.StatusNotFound, rpcErr(json.RawMessage("null"), -32601, "Method not found", nil))
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
	s := startServer(t, serverConfig{wrap: noListen})
	c := newClient(s, nil)
	ctx := testContext(t)
	for range 3 {
		res, err := c.CallAndWait(ctx, "slow_compute", map[string]any{"seconds": 0.05})
		if err != nil || text(res) == "" {
			t.Fatalf("CallAndWait: %v %v", res, err)
		}
	}
	if n := len(rec.requests("subscriptions/listen")); n != 1 {
		t.Errorf("%d subscriptions/listen for three waits, want 1", n)
	}
}
