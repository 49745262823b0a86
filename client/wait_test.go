package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

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

// refusingTransport serves requests with h (through handlerTransport, no
// network, so in a synctest bubble), but refuses the connection of those
// whose method refuse reports true for, as a server that restarts does.
type refusingTransport struct {
	refuse func(method string) bool
	h      http.HandlerFunc
}

func (t refusingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.refuse(req.Header.Get("Mcp-Method")) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return handlerTransport{t.h}.RoundTrip(req)
}

// outageServer is a task server whose connections are refused while it is
// down, as while it restarts. Its one task, t-1, works until done is set.
type outageServer struct {
	down, done atomic.Bool
	refused    atomic.Int32 // requests refused while down
}

func (s *outageServer) transport() http.RoundTripper {
	return refusingTransport{h: s.serve, refuse: func(string) bool {
		if s.down.Load() {
			s.refused.Add(1)
			return true
		}
		return false
	}}
}

func (s *outageServer) serve(w http.ResponseWriter, r *http.Request) {
	var m rpcMessage
	_ = json.NewDecoder(r.Body).Decode(&m)
	status := `"status":"working"`
	if s.done.Load() {
		status = `"status":"completed","result":{"content":[{"type":"text","text":"done"}]}`
	}
	resultType := "complete"
	if m.Method == "tools/call" {
		resultType, status = "task", `"status":"working"`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":%q,"taskId":"t-1",%s,"createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":null,"pollIntervalMs":1000}}`, m.ID, resultType, status)
}

// TestWait_ServerRestart: a wait rides out a server that refuses
// connections (a restart: it drains with its listener closed, then the
// next process starts) for longer than the five failures a wait used to
// allow (about 5 s at a poll a second), retrying with growing pauses, and
// CallAndWait (what "mcptasks call" runs) does the same; a server down
// past Options.RetryBudget (2 minutes by default) ends the wait, exactly
// then, with an *UnavailableError that carries the task's handle, which
// waits again once the server is back. The deprecated
// MaxConsecutiveFailures still ends a wait after that many failures. In a
// synctest bubble: the times are the fake clock's. Before, every one of
// these waits ended after 5 failures with "5 failures in a row".
func TestWait_ServerRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts client.Options
		call bool // CallAndWait rather than Task.Wait
		// The server goes down 2.5 s after the wait starts (after its
		// polls at 0, 1 and 2 s), for downFor.
		downFor time.Duration
		// giveUpAt, if not zero, is when the wait ends with an
		// *UnavailableError, after about failures failed requests
		// (within ±20% for the jitter, when the budget ends the wait).
		giveUpAt time.Duration
		failures int
	}{
		{name: "Restart", downFor: 20 * time.Second},
		{name: "RestartDuringCall", call: true, downFor: 20 * time.Second},
		{name: "DeployOf100s", downFor: 100 * time.Second},
		// First failure at 3 s, the budget ends at 3 s + 2 min; pauses of
		// 1, 2, 4 s, then 5 s: about 26 failures.
		{name: "PastBudget", downFor: 10 * time.Minute, giveUpAt: 123 * time.Second, failures: 26},
		{name: "ShortBudget", opts: client.Options{RetryBudget: 10 * time.Second}, downFor: 20 * time.Second, giveUpAt: 13 * time.Second, failures: 5},
		{name: "NoRetries", opts: client.Options{RetryBudget: -1}, downFor: 20 * time.Second, giveUpAt: 3 * time.Second, failures: 1},
		// Failures at 3 s, then after pauses of about 1 and 2 s.
		{name: "MaxConsecutiveFailures", opts: client.Options{MaxConsecutiveFailures: 3}, downFor: 20 * time.Second, giveUpAt: 6 * time.Second, failures: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &outageServer{}
				opts := tc.opts
				opts.ProtocolVersion = client.ProtocolVersion
				opts.HTTPClient = &http.Client{Transport: srv.transport()}
				var logs bytes.Buffer
				opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
				c := client.New("http://mcp.test/mcp", &opts)
				start := time.Now()
				wait := c.Task("t-1").Wait
				if tc.call {
					wait = func(ctx context.Context, opts ...client.WaitOption) (*mcp.CallToolResult, error) {
						return c.CallAndWait(ctx, "slow_compute", nil, opts...)
					}
				}
				upAt := 2500*time.Millisecond + tc.downFor
				var outage sync.WaitGroup
				defer outage.Wait() // whatever the wait did: no goroutine outlives the bubble
				outage.Go(func() {
					time.Sleep(2500 * time.Millisecond)
					srv.down.Store(true)
					time.Sleep(tc.downFor)
					srv.done.Store(true) // the task ended while the server was down
					srv.down.Store(false)
				})
				res, err := wait(t.Context(), client.PollOnly())
				took := time.Since(start)
				if tc.giveUpAt == 0 {
					if err != nil || text(res) != "done" {
						t.Fatalf("wait through %s of refused connections: %v, %v; want the result", tc.downFor, res, err)
					}
					// The retries back off to at most 5 s (+20%): the
					// wait sees the server back within 6 s, without a
					// request every second meanwhile.
					if took < upAt || took > upAt+6*time.Second {
						t.Errorf("the wait ended %s after it began; want within 6 s of the server's return at %s", took, upAt)
					}
					if max := int32(tc.downFor/(4*time.Second)) + 4; srv.refused.Load() > max {
						t.Errorf("%d requests refused in %s; want at most %d (pauses of up to 5 s)", srv.refused.Load(), tc.downFor, max)
					}
					// One warning when the failures begin, one line when
					// they end; the retries between log at debug level.
					if got := logs.String(); strings.Count(got, "level=WARN") != 1 || strings.Count(got, "level=INFO") != 1 || !strings.Contains(got, "answers again") {
						t.Errorf("logs at info level and above:\n%s\nwant one warning and one line saying the server answers again", got)
					}
					return
				}
				var ue *client.UnavailableError
				if !errors.As(err, &ue) {
					t.Fatalf("wait through %s of refused connections: %v, %v; want an *UnavailableError", tc.downFor, res, err)
				}
				if tc.failures > 1 {
					// The jitter moves each retry by up to ±20%.
					if took < tc.giveUpAt-tc.giveUpAt/5 || took > tc.giveUpAt+tc.giveUpAt/5 {
						t.Errorf("the wait gave up %s after it began; want about %s", took, tc.giveUpAt)
					}
				}
				if tc.opts.MaxConsecutiveFailures == 0 && took != tc.giveUpAt {
					t.Errorf("the wait gave up %s after it began; want %s, when the budget ends", took, tc.giveUpAt)
				}
				if lo, hi := tc.failures-tc.failures/5, tc.failures+tc.failures/5; ue.Failures < lo || ue.Failures > hi || int32(ue.Failures) != srv.refused.Load() {
					t.Errorf("UnavailableError.Failures = %d (%d refused); want %d to %d", ue.Failures, srv.refused.Load(), lo, hi)
				}
				if ue.TaskID != "t-1" || ue.Task == nil || ue.Task.ID != "t-1" {
					t.Errorf("UnavailableError names task %q (handle %v); want t-1 and its handle", ue.TaskID, ue.Task)
				}
				if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "the task may still be running") {
					t.Errorf("error %q: want it to wrap the refusal and say the task may still be running", err)
				}
				// The handle waits again once the server is back.
				outage.Wait()
				if res, err := ue.Task.Wait(t.Context(), client.PollOnly()); err != nil || text(res) != "done" {
					t.Errorf("waiting again after the server's return: %v, %v; want the result", res, err)
				}
			})
		})
	}
}

// askingServer serves task t-1, which asks the question "q" until it is
// answered and then completes.
type askingServer struct{ answered atomic.Bool }

func (s *askingServer) serve(w http.ResponseWriter, r *http.Request) {
	var m rpcMessage
	_ = json.NewDecoder(r.Body).Decode(&m)
	result := `"resultType":"complete"`
	switch {
	case m.Method == "tasks/update":
		s.answered.Store(true)
	case s.answered.Load():
		result += `,"taskId":"t-1","status":"completed","result":{"content":[{"type":"text","text":"done"}]}`
	default:
		result += `,"taskId":"t-1","status":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{}}}}}`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{%s,"createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":null,"pollIntervalMs":1000}}`, m.ID, result)
}

// TestWait_FailuresBeforeSlowAnswer: a failure before the server answered
// again does not count against a failure after it. Here a poll is
// refused, the next one asks a question, a person takes three minutes
// (past Options.RetryBudget) to answer it, and sending the answer is
// refused once: the wait retries and ends with the result. It gave up at
// once, counting the budget from the first refusal.
func TestWait_FailuresBeforeSlowAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gets, updates atomic.Int32
		srv := &askingServer{}
		refuse := func(method string) bool { // the first poll and the first answer
			switch method {
			case "tasks/get":
				return gets.Add(1) == 1
			case "tasks/update":
				return updates.Add(1) == 1
			}
			return false
		}
		c := client.New("http://mcp.test/mcp", &client.Options{
			ProtocolVersion: client.ProtocolVersion,
			HTTPClient:      &http.Client{Transport: refusingTransport{refuse: refuse, h: srv.serve}},
			Logger:          slog.New(slog.DiscardHandler),
			InputHandler: client.InputHandlerFunc(func(context.Context, string, *client.InputRequest) (any, error) {
				time.Sleep(3 * time.Minute) // a person
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			}),
		})
		res, err := c.Task("t-1").Wait(t.Context(), client.PollOnly())
		if err != nil || text(res) != "done" {
			t.Fatalf("wait: %v, %v; want the result", res, err)
		}
		if gets.Load() < 2 || updates.Load() != 2 {
			t.Errorf("%d polls and %d answers sent; want a refused poll, then more, and the answer sent twice", gets.Load(), updates.Load())
		}
	})
}
