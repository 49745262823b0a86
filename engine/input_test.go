package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// askAB asks for keys a and b at once and completes with the answers.
func askAB(ctx context.Context, run *Run) (json.RawMessage, error) {
	answers, err := run.RequestInput(ctx, asks("a", "b"), "Need a and b")
	if err != nil {
		return nil, err
	}
	return json.Marshal(answers)
}

func TestRequestInput(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		e := startEngine(t, st, []*Tool{{Name: "ask", Handler: askAB}}, Options{Workers: 1})
		r := create(t, e, "ask")
		synctest.Wait()

		before := wantStatus(t, st, r.ID, task.InputRequired)
		if keys := slices.Sorted(maps.Keys(before.InputRequests)); !slices.Equal(keys, []string{"a", "b"}) {
			t.Fatalf("inputRequests keys = %v, want [a b]", keys)
		}
		if before.StatusMessage != "Need a and b" {
			t.Errorf("status message = %q", before.StatusMessage)
		}
		if len(e.slots) != 0 {
			t.Errorf("a parked handler holds a worker slot (%d taken)", len(e.slots))
		}
		if d := before.Detailed(); len(d.InputRequests) != 2 || d.Result != nil || d.Error != nil {
			t.Errorf("Detailed() = %+v", d)
		}

		// Keys that are not outstanding are ignored, and nothing changes.
		time.Sleep(time.Second)
		if acc := update(t, e, r.ID, map[string]string{"z": accept("?")}); len(acc) != 0 {
			t.Errorf("Update(z) accepted %v, want nothing", acc)
		}
		synctest.Wait()
		if after := get(t, st, r.ID); !reflect.DeepEqual(after, before) {
			t.Errorf("Update with unknown keys changed the task:\nbefore %+v\nafter  %+v", before, after)
		}

		// A partial answer keeps the task input_required with the rest.
		if acc := update(t, e, r.ID, map[string]string{"a": accept("A"), "z": accept("?")}); !slices.Equal(acc, []string{"a"}) {
			t.Errorf("Update(a, z) accepted %v, want [a]", acc)
		}
		synctest.Wait()
		partial := wantStatus(t, st, r.ID, task.InputRequired)
		if keys := slices.Sorted(maps.Keys(partial.InputRequests)); !slices.Equal(keys, []string{"b"}) {
			t.Errorf("after answering a: inputRequests keys = %v, want [b]", keys)
		}
		if !partial.UpdatedAt.After(before.UpdatedAt) {
			t.Errorf("UpdatedAt did not move: %v", partial.UpdatedAt)
		}

		// a is no longer outstanding: a second answer to it is ignored.
		if acc := update(t, e, r.ID, map[string]string{"a": accept("other"), "b": accept("B")}); !slices.Equal(acc, []string{"b"}) {
			t.Errorf("Update(a, b) accepted %v, want [b]", acc)
		}
		synctest.Wait()
		done := wantStatus(t, st, r.ID, task.Completed)
		var got map[string]json.RawMessage
		if err := json.Unmarshal(done.Result, &got); err != nil {
			t.Fatal(err)
		}
		if string(got["a"]) != accept("A") || string(got["b"]) != accept("B") || len(got) != 2 {
			t.Errorf("handler got answers %s", done.Result)
		}

		// Updates to a finished task are accepted and ignored.
		if acc := update(t, e, r.ID, map[string]string{"b": accept("late")}); len(acc) != 0 {
			t.Errorf("Update after completion accepted %v", acc)
		}
		if after := get(t, st, r.ID); !reflect.DeepEqual(after, done) {
			t.Errorf("Update after completion changed the task")
		}
	})
}

// TestRequestInput_Withdrawn: a handler that stops waiting while its run
// goes on (the context it asked in ended: a deadline of its own, a proxied
// server that took its question back) takes back what is not answered, so
// that clients are not asked what nobody waits for; an answer that came
// first stays. Before, the question stayed, and the task input_required.
func TestRequestInput_Withdrawn(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		stopped := make(chan error, 1)
		goOn := make(chan struct{})
		letGoOn := sync.OnceFunc(func() { close(goOn) })
		defer letGoOn() // also when the test fails first
		ask := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			qctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err := run.RequestInput(qctx, asks("a", "b"), "Need a and b")
			stopped <- err
			<-goOn
			return json.RawMessage(`"went on"`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "ask", Handler: ask}}, Options{Workers: 1})
		r := create(t, e, "ask")
		synctest.Wait()
		wantStatus(t, st, r.ID, task.InputRequired)
		if acc := update(t, e, r.ID, map[string]string{"a": accept("A")}); !slices.Equal(acc, []string{"a"}) {
			t.Fatalf("Update(a) accepted %v", acc)
		}

		time.Sleep(time.Minute)
		synctest.Wait()
		if err := <-stopped; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("RequestInput = %v, want its context's deadline", err)
		}
		got := wantStatus(t, st, r.ID, task.Working)
		if len(got.InputRequests) != 0 || got.StatusMessage != "" || string(got.Answers["a"]) != accept("A") {
			t.Errorf("after the handler stopped waiting: inputRequests %v, status message %q, answers %v; want none, none, a's",
				slices.Sorted(maps.Keys(got.InputRequests)), got.StatusMessage, got.Answers)
		}
		if last := got.History[len(got.History)-1]; last.Kind != task.HistoryInputWithdrawn || !slices.Equal(last.Keys, []string{"b"}) {
			t.Errorf("last history event %+v, want b withdrawn", last)
		}

		letGoOn()
		synctest.Wait()
		wantStatus(t, st, r.ID, task.Completed)
	})
}

// TestRequestInput_SlotBack: a handler of a tool that suspends gives its
// worker slot up while it waits, and takes one back before it runs on, so
// that Workers still bounds the handlers that run, for as long as its run
// lasts: when its question is taken back (before, it ran on without one),
// and when it was answered but its question's own deadline passes while
// it waits for a slot (before, it then ran on without one).
func TestRequestInput_SlotBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // of the question
		answer   bool          // at 1 s, while another handler holds the slot
	}{
		{name: "taken back", deadline: time.Second},
		{name: "answered, its deadline passed while it waits", deadline: 10 * time.Second, answer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				var running, most atomic.Int32
				goOn := make(chan struct{})
				letGoOn := sync.OnceFunc(func() { close(goOn) })
				defer letGoOn()
				runOn := func() json.RawMessage {
					n := running.Add(1)
					defer running.Add(-1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					<-goOn
					return json.RawMessage(`"went on"`)
				}
				ask := func(ctx context.Context, run *Run) (json.RawMessage, error) {
					qctx, cancel := context.WithTimeout(ctx, tc.deadline)
					defer cancel()
					if _, err := run.RequestInput(qctx, asks("a"), ""); err != nil && !errors.Is(err, context.DeadlineExceeded) {
						return nil, err
					}
					return runOn(), nil
				}
				block := func(context.Context, *Run) (json.RawMessage, error) { return runOn(), nil }
				e := startEngine(t, st, []*Tool{{Name: "ask", Handler: ask, Retry: RetryPolicy{Rerun: true}}, {Name: "block", Handler: block}},
					Options{Workers: 1, SuspendAfter: time.Hour})
				asking := create(t, e, "ask")
				synctest.Wait() // it asks, and gives its slot up
				create(t, e, "block")
				time.Sleep(time.Second)
				synctest.Wait()
				if tc.answer {
					update(t, e, asking.ID, map[string]string{"a": accept("A")})
				}
				time.Sleep(20 * time.Second)
				synctest.Wait()
				if n := most.Load(); n != 1 {
					t.Errorf("%d handlers ran on at once, with Workers 1", n)
				}
				letGoOn()
				synctest.Wait()
				time.Sleep(2 * time.Second)
				synctest.Wait()
				wantStatus(t, st, asking.ID, task.Completed)
			})
		})
	}
}

func TestUpdateWhileWorkingIsIgnored(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		e := startEngine(t, st, []*Tool{{Name: "busy", Handler: blockUntilCancelled}}, Options{})
		r := create(t, e, "busy")
		synctest.Wait()
		before := get(t, st, r.ID)
		if acc := update(t, e, r.ID, map[string]string{"k": accept("x")}); len(acc) != 0 {
			t.Errorf("Update of a working task accepted %v", acc)
		}
		if after := get(t, st, r.ID); !reflect.DeepEqual(after, before) {
			t.Errorf("Update of a working task changed it")
		}
	})
}

// TestNotFoundIsUniform checks that a foreign task, an unknown id and a
// malformed id give the very same error on Get, Update and Cancel, and that
// the foreign calls change nothing.
func TestNotFoundIsUniform(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		e := startEngine(t, st, []*Tool{{Name: "ask", Handler: askAB}}, Options{})
		r := create(t, e, "ask")
		synctest.Wait()
		before := wantStatus(t, st, r.ID, task.InputRequired)

		tests := []struct {
			name, principal, id string
		}{
			{"wrong principal", "mallory", r.ID},
			{"empty principal", "", r.ID},
			{"unknown id", principal, task.NewID()},
			{"malformed id", principal, "not-a-task-id"},
			{"empty id", principal, ""},
			{"id with a bad character", principal, r.ID[:len(r.ID)-1] + "="},
			{"id too long", principal, r.ID + "A"},
		}
		answer := map[string]json.RawMessage{"a": json.RawMessage(accept("A"))}
		calls := []struct {
			name string
			call func(principal, id string) error
		}{
			{"Get", func(p, id string) error { _, err := e.Get(bg, p, id); return err }},
			{"Update", func(p, id string) error { _, err := e.Update(bg, p, id, answer, nil); return err }},
			{"Cancel", func(p, id string) error { return e.Cancel(bg, p, id) }},
		}
		for _, tt := range tests {
			for _, c := range calls {
				err := c.call(tt.principal, tt.id)
				if err != ErrNotFound {
					t.Errorf("%s: %s = %v, want exactly ErrNotFound", tt.name, c.name, err)
				}
			}
		}
		synctest.Wait()
		if after := get(t, st, r.ID); !reflect.DeepEqual(after, before) {
			t.Errorf("calls by another principal changed the task:\nbefore %+v\nafter  %+v", before, after)
		}
	})
}

// TestAnswerOnAnotherEngine: the answer arrives through tasks/update on a
// replica that does not run the task (and the store announces nothing).
// The handler sees it within Lease/3, when it re-reads the store.
func TestAnswerOnAnotherEngine(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		tools := []*Tool{{Name: "ask", Handler: askAB}}
		a := startEngine(t, quiet(st), tools, Options{Owner: "a"})
		b := newEngine(t, quiet(st), tools, Options{Owner: "b"})
		r := create(t, a, "ask")
		synctest.Wait()
		wantStatus(t, st, r.ID, task.InputRequired)

		time.Sleep(300 * time.Millisecond) // between two of a's re-reads
		update(t, b, r.ID, map[string]string{"a": accept("A"), "b": accept("B")})
		answered := time.Now()
		synctest.Wait()
		if got := get(t, st, r.ID); got.Status != task.Working {
			t.Fatalf("status right after the answer = %s, want working", got.Status)
		}
		time.Sleep(DefaultLease / 3)
		synctest.Wait()
		done := wantStatus(t, st, r.ID, task.Completed)
		if took := done.UpdatedAt.Sub(answered); took <= 0 || took > DefaultLease/3 {
			t.Errorf("completed %v after the answer, want within (0, %v]", took, DefaultLease/3)
		}
	})
}

func TestRequestInputInline(t *testing.T) {
	run := NewInlineRun("tool", json.RawMessage(`{}`), nil)
	if _, err := run.RequestInput(bg, asks("k"), ""); !errors.Is(err, ErrNoInput) {
		t.Errorf("inline RequestInput = %v, want ErrNoInput", err)
	}
	if err := run.SetStatus(bg, "x"); err != nil {
		t.Errorf("inline SetStatus = %v", err)
	}
	if run.InTask() || run.ID() != "" || run.Attempt() != 0 {
		t.Errorf("inline run: InTask %v, ID %q, Attempt %d", run.InTask(), run.ID(), run.Attempt())
	}
}

// TestParkedHandlerSurvivesStoreBlip: a handler waiting for input re-reads
// its answers when woken: by the answer on this process, or by the
// heartbeat loop, which finds its task answered at every Lease/3. A failed
// re-read must not end the run (a person may take hours to answer; one
// store blip in that time would fail the task); the next heartbeat wakes
// the handler again. Only a lost lease ends it, and the heartbeat sees that.
func TestParkedHandlerSurvivesStoreBlip(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		e := startEngine(t, st, []*Tool{{Name: "ask", Handler: askAB}}, Options{})
		r := create(t, e, "ask")
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.InputRequired)

		st.blipInput.Store(3) // three re-reads in a row fail
		update(t, e, r.ID, map[string]string{"a": accept("A"), "b": accept("B")})
		time.Sleep(2 * DefaultLease / 3)
		synctest.Wait()
		if got := wantStatus(t, mem, r.ID, task.Working); got.LeaseOwner != "a" {
			t.Fatalf("owner = %q after two failed re-reads", got.LeaseOwner)
		}
		time.Sleep(DefaultLease / 3)
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.Completed)
	})
}

// TestFirstRequestInputRetried: when the request itself cannot be stored,
// RequestInput retries it with backoff until it is: a store blip must
// never reach the handler, which would make it a tool result (issue 12
// item 3: a task completed with "engine: request input: postgres: …").
func TestFirstRequestInputRetried(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		st.blipInput.Store(3)
		var got error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			a, err := run.RequestInput(ctx, asks("k"), "")
			got = err
			if err != nil {
				return nil, err
			}
			return a["k"], nil
		}
		e := startEngine(t, st, []*Tool{{Name: "ask", Handler: h}}, Options{})
		r := create(t, e, "ask")
		time.Sleep(time.Second)
		synctest.Wait()
		asked := wantStatus(t, mem, r.ID, task.InputRequired)
		// 10, 20 and 40 ms of backoff: three failures, then the write.
		if i := slices.IndexFunc(asked.History, func(ev task.HistoryEvent) bool { return ev.Kind == task.HistoryInputRequested }); i < 0 {
			t.Errorf("history has no input request: %+v", asked.History)
		} else if d := asked.History[i].At.Sub(r.CreatedAt); d != 70*time.Millisecond {
			t.Errorf("asked %v after the create, want 70ms of backoff", d)
		}
		update(t, e, r.ID, map[string]string{"k": accept("K")})
		synctest.Wait()
		done := wantStatus(t, mem, r.ID, task.Completed)
		if got != nil || string(done.Result) != accept("K") {
			t.Errorf("RequestInput error %v, result %s", got, done.Result)
		}
	})
}

// TestSetStatusRetried: SetStatus rides out store errors the same way.
func TestSetStatusRetried(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		st.blipStatus.Store(5)
		var got error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			got = run.SetStatus(ctx, "halfway")
			return json.RawMessage(`{}`), got
		}
		e := startEngine(t, st, []*Tool{{Name: "s", Handler: h}}, Options{})
		r := create(t, e, "s")
		time.Sleep(time.Second) // 10+20+40+80+160 ms of backoff
		synctest.Wait()
		done := wantStatus(t, mem, r.ID, task.Completed)
		if got != nil {
			t.Errorf("SetStatus = %v, want nil", got)
		}
		if !slices.ContainsFunc(done.History, func(ev task.HistoryEvent) bool {
			return ev.Kind == task.HistoryStatus && ev.Message == "halfway"
		}) {
			t.Errorf("history has no status message: %+v", done.History)
		}
	})
}

// TestFinishRetried: the write of a run's end rides out store errors too
// (for at most a lease), the heartbeat keeping the lease meanwhile: a tool
// that is not re-run completes, where one failed write had left its lease
// to run out and the task to fail as lost.
func TestFinishRetried(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		st.blipFinish.Store(12) // 10 ms doubling to 1 s: about 6 s of errors
		var runs atomic.Int32
		h := func(context.Context, *Run) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`"done"`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "once", Handler: h}}, Options{})
		r := create(t, e, "once")
		time.Sleep(3 * testLease)
		synctest.Wait()
		done := wantStatus(t, mem, r.ID, task.Completed)
		if runs.Load() != 1 || string(done.Result) != `"done"` {
			t.Errorf("ran %d times, result %s; want once, \"done\"", runs.Load(), done.Result)
		}
	})
}

// TestRequestInputStoreDownLosesLease: a store that stays away while the
// first request is retried ends the run when the lease runs out, without a
// result; the next claim applies the tool's retry policy, which re-runs the
// task or fails it saying that its worker was lost.
func TestRequestInputStoreDownLosesLease(t *testing.T) {
	for _, rerun := range []bool{true, false} {
		t.Run(fmt.Sprintf("rerun=%v", rerun), func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				mem := newMem()
				st := &faultStore{Store: mem}
				var runs atomic.Int32
				var firstErr error
				h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
					if runs.Add(1) == 1 {
						pastCreate()
						st.down.Store(true) // the store goes away under the first run
						_, firstErr = run.RequestInput(ctx, asks("k"), "")
						return nil, firstErr
					}
					return askAB(ctx, run)
				}
				e := startEngine(t, st, []*Tool{{Name: "ask", Handler: h, Retry: RetryPolicy{Rerun: rerun}}}, Options{})
				r := create(t, e, "ask")
				time.Sleep(testLease + time.Second)
				synctest.Wait()
				if !errors.Is(firstErr, errLeaseLost) {
					t.Errorf("first run's RequestInput = %v, want the lost lease", firstErr)
				}
				st.down.Store(false)
				time.Sleep(2 * DefaultClaimInterval)
				synctest.Wait()
				if fin := st.finishResults(); rerun && len(fin) != 0 {
					t.Errorf("Finish calls %v: the first run wrote an end", fin)
				}
				if !rerun {
					got := wantStatus(t, mem, r.ID, task.Failed)
					if !strings.Contains(got.StatusMessage, "was lost") {
						t.Errorf("status message %q", got.StatusMessage)
					}
					return
				}
				got := wantStatus(t, mem, r.ID, task.InputRequired)
				if got.Attempt != 2 || got.Losses != 1 || runs.Load() != 2 {
					t.Errorf("attempt %d, losses %d, runs %d; want 2, 1, 2", got.Attempt, got.Losses, runs.Load())
				}
			})
		})
	}
}

// TestInputKeyAnsweredOnce: input keys are unique for a task's life. A
// handler that asks an answered key again, in a later round, gets the
// stored answer without the task going back to input_required.
func TestInputKeyAnsweredOnce(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var second map[string]json.RawMessage
		var statusBetween task.Status
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if _, err := run.RequestInput(ctx, asks("name"), ""); err != nil {
				return nil, err
			}
			var err error
			second, err = run.RequestInput(ctx, asks("name", "color"), "")
			if err != nil {
				return nil, err
			}
			r, err := st.Get(ctx, run.ID())
			if err != nil {
				return nil, err
			}
			statusBetween = r.Status
			return json.RawMessage(`{}`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "ask", Handler: h}}, Options{})
		r := create(t, e, "ask")
		synctest.Wait()
		update(t, e, r.ID, map[string]string{"name": accept("Ada")})
		synctest.Wait()
		round2 := wantStatus(t, st, r.ID, task.InputRequired)
		if len(round2.InputRequests) != 1 || round2.InputRequests["color"] == nil {
			t.Fatalf("round 2 asks %v, want only color", round2.InputRequests)
		}
		if acc := update(t, e, r.ID, map[string]string{"name": accept("Bob"), "color": accept("red")}); len(acc) != 1 || acc[0] != "color" {
			t.Errorf("accepted %v, want [color]", acc)
		}
		synctest.Wait()
		wantStatus(t, st, r.ID, task.Completed)
		if string(second["name"]) != accept("Ada") || string(second["color"]) != accept("red") || statusBetween != task.Working {
			t.Errorf("round 2 answers %s / %s, status %s", second["name"], second["color"], statusBetween)
		}
	})
}

// TestRequestInputCutAfterCommit: when the context of a question ends
// while its store write is committed but not yet answered (a reply cut
// off), the question, which nobody waits for, is taken back while the run
// goes on, as a question whose wait ended is.
func TestRequestInputCutAfterCommit(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		st.cutInput.Store(1)
		release := make(chan struct{})
		var asked error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, asked = run.RequestInput(qctx, asks("k"), "Asking")
			<-release
			return json.RawMessage(`{"content":[]}`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "t", Handler: h}}, Options{})
		synctest.Wait()
		r := create(t, e, "t")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !errors.Is(asked, context.DeadlineExceeded) {
			t.Errorf("RequestInput = %v, want the question's deadline", asked)
		}
		if got := get(t, mem, r.ID); got.Status != task.Working || len(got.InputRequests) != 0 {
			t.Errorf("while the run goes on: stored %s asking %v; want working, asking nothing", got.Status, got.InputRequests)
		}
		close(release)
	})
}

// TestRequestInputDeadlineStoreDown: a question whose deadline passes
// while the store is down returns at that deadline: its store call is
// retried until then, and the question, most likely never stored, is taken
// back with one try, not retried until the store is back.
func TestRequestInputDeadlineStoreDown(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := &faultStore{Store: newMem()}
		var asked error
		var took time.Duration
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if err := run.SetStatus(ctx, "Starting"); err != nil { // the create's insert
				return nil, err
			}
			st.down.Store(true)
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			start := time.Now()
			_, asked = run.RequestInput(qctx, asks("k"), "Asking")
			took = time.Since(start)
			st.down.Store(false)
			return json.RawMessage(`{"content":[]}`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "t", Handler: h}}, Options{})
		synctest.Wait()
		create(t, e, "t")
		time.Sleep(testLease)
		synctest.Wait()
		if !errors.Is(asked, context.DeadlineExceeded) || took != time.Second {
			t.Errorf("RequestInput = %v after %v; want the question's deadline after 1s", asked, took)
		}
	})
}
