package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// suspender is a rerunnable tool that asks for k and completes with the
// answer; it counts its runs and keeps the error of each RequestInput.
type suspender struct {
	runs atomic.Int32
	mu   sync.Mutex
	errs []error
}

func (s *suspender) tool(hold bool) *Tool {
	return &Tool{Name: "ask", Retry: RetryPolicy{Rerun: true}, Hold: hold, Handler: func(ctx context.Context, run *Run) (json.RawMessage, error) {
		s.runs.Add(1)
		answers, err := run.RequestInput(ctx, asks("k"), "Need k")
		s.mu.Lock()
		s.errs = append(s.errs, err)
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return answers["k"], nil
	}}
}

func (s *suspender) results() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// wantSuspended fails t unless the stored task is suspended and this
// process keeps nothing of it: no execution, no worker slot, no handler or
// heartbeat goroutine.
func wantSuspended(t *testing.T, e *Engine, st store.Store, id string) *task.Record {
	t.Helper()
	r := get(t, st, id)
	if !store.Suspended(r) || !r.LeaseExpiresAt.IsZero() {
		t.Fatalf("status %s, owner %q, lease until %v; want suspended", r.Status, r.LeaseOwner, r.LeaseExpiresAt)
	}
	e.mu.Lock()
	n := len(e.running)
	e.mu.Unlock()
	if n != 0 || len(e.slots) != 0 {
		t.Errorf("%d executions and %d worker slots kept for a suspended task", n, len(e.slots))
	}
	for _, g := range engineGoroutines() {
		for _, f := range []string{"engine.(*Engine).execute", "engine.(*Engine).heartbeat", "engine.callHandler"} {
			if strings.Contains(g, f) {
				t.Errorf("goroutine kept for a suspended task:\n%s", g)
			}
		}
	}
	return r
}

// TestSuspendAfter: a handler that waits for input longer than
// SuspendAfter gives up its goroutine, lease and heartbeat, and gets
// ErrSuspended; the task is claimed by nobody until it is answered; the
// answer on this process re-runs the handler at once, and RequestInput
// returns the stored answer.
func TestSuspendAfter(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var s suspender
		e := startEngine(t, st, []*Tool{s.tool(false)}, Options{})
		r := create(t, e, "ask")
		time.Sleep(DefaultSuspendAfter - time.Millisecond)
		synctest.Wait()
		if got := wantStatus(t, st, r.ID, task.InputRequired); got.LeaseOwner != "a" {
			t.Fatalf("before SuspendAfter: owner %q, want a (held)", got.LeaseOwner)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		wantSuspended(t, e, st, r.ID)
		if errs := s.results(); len(errs) != 1 || !errors.Is(errs[0], ErrSuspended) {
			t.Fatalf("RequestInput returned %v, want ErrSuspended", errs)
		}

		// Leases, heartbeats and claim polls go by: nothing runs it.
		time.Sleep(10 * testLease)
		synctest.Wait()
		if got := wantSuspended(t, e, st, r.ID); got.Attempt != 1 || s.runs.Load() != 1 {
			t.Fatalf("attempt %d after %d runs while suspended; want 1, 1", got.Attempt, s.runs.Load())
		}

		answered := time.Now()
		update(t, e, r.ID, map[string]string{"k": accept("K")})
		synctest.Wait()
		done := wantStatus(t, st, r.ID, task.Completed)
		if string(done.Result) != accept("K") || done.Attempt != 2 || done.Losses != 0 || s.runs.Load() != 2 {
			t.Errorf("result %s at attempt %d (losses %d) after %d runs; want the answer, 2, 0, 2", done.Result, done.Attempt, done.Losses, s.runs.Load())
		}
		if d := done.UpdatedAt.Sub(answered); d != 0 {
			t.Errorf("completed %v after the answer, want at once", d)
		}
		if errs := s.results(); len(errs) != 2 || errs[1] != nil {
			t.Errorf("RequestInput of the re-run returned %v, want the stored answer", errs)
		}
	})
}

// TestSuspendAtOnce: a negative SuspendAfter suspends as soon as the
// question is stored.
func TestSuspendAtOnce(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var s suspender
		e := startEngine(t, st, []*Tool{s.tool(false)}, Options{SuspendAfter: -1})
		r := create(t, e, "ask")
		synctest.Wait()
		got := wantSuspended(t, e, st, r.ID)
		if got.InputRequests["k"] == nil || got.StatusMessage != "Need k" {
			t.Errorf("suspended task asks %v with message %q", got.InputRequests, got.StatusMessage)
		}
	})
}

// TestHoldNotSuspended: tools that hold, and tools that may not be re-run,
// keep waiting with their lease however long the answer takes.
func TestHoldNotSuspended(t *testing.T) {
	for _, tt := range []struct {
		name string
		tool func(s *suspender) *Tool
	}{
		{"Hold", func(s *suspender) *Tool { return s.tool(true) }},
		{"NotRerun", func(s *suspender) *Tool {
			tl := s.tool(false)
			tl.Retry.Rerun = false
			return tl
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				var s suspender
				e := startEngine(t, st, []*Tool{tt.tool(&s)}, Options{SuspendAfter: -1})
				r := create(t, e, "ask")
				time.Sleep(3 * testLease)
				synctest.Wait()
				if got := wantStatus(t, st, r.ID, task.InputRequired); got.LeaseOwner != "a" || got.Attempt != 1 {
					t.Fatalf("owner %q, attempt %d; want held by a", got.LeaseOwner, got.Attempt)
				}
				update(t, e, r.ID, map[string]string{"k": accept("K")})
				synctest.Wait()
				if done := wantStatus(t, st, r.ID, task.Completed); done.Attempt != 1 || s.runs.Load() != 1 {
					t.Errorf("attempt %d after %d runs, want 1, 1", done.Attempt, s.runs.Load())
				}
			})
		})
	}
}

// TestSuspendedResumedElsewhere: the process that takes the answer resumes
// the task at once, with no help from change events; a process that runs
// no workers leaves it to the others, which find it at their next claim
// poll when no event tells them sooner.
func TestSuspendedResumedElsewhere(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := quiet(newMem())
		var s suspender
		tools := []*Tool{s.tool(false)}
		a := startEngine(t, st, tools, Options{Owner: "a", SuspendAfter: -1})
		b := startEngine(t, st, tools, Options{Owner: "b", SuspendAfter: -1})
		front := startEngine(t, st, tools, Options{Owner: "front", Workers: -1})

		r1 := create(t, a, "ask")
		synctest.Wait()
		wantSuspended(t, a, st, r1.ID)
		update(t, b, r1.ID, map[string]string{"k": accept("1")})
		synctest.Wait()
		if got := wantStatus(t, st, r1.ID, task.Completed); !strings.Contains(lastWorker(got), "b") {
			t.Errorf("resumed by %q, want b, which took the answer", lastWorker(got))
		}

		r2 := create(t, front, "ask")
		time.Sleep(DefaultClaimInterval)
		synctest.Wait()
		get(t, st, r2.ID)
		update(t, front, r2.ID, map[string]string{"k": accept("2")})
		time.Sleep(DefaultClaimInterval)
		synctest.Wait()
		wantStatus(t, st, r2.ID, task.Completed)
	})
}

// lastWorker returns the worker of r's last claim.
func lastWorker(r *task.Record) string {
	for i := len(r.History) - 1; i >= 0; i-- {
		if r.History[i].Kind == task.HistoryClaimed {
			return r.History[i].Worker
		}
	}
	return ""
}

// TestSuspendedCancelled: a suspended task is cancelled at once by a
// cancel request, as any task that no worker holds.
func TestSuspendedCancelled(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var s suspender
		e := startEngine(t, st, []*Tool{s.tool(false)}, Options{SuspendAfter: -1})
		r := create(t, e, "ask")
		synctest.Wait()
		wantSuspended(t, e, st, r.ID)
		if err := e.Cancel(bg, principal, r.ID); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, st, r.ID, task.Cancelled)
	})
}

// TestRestartBesideSuspended: a process that starts beside many suspended
// tasks runs no handler and makes no heartbeat for them, holds nothing of
// them, and shuts down at once; the answer to one of them resumes it.
func TestRestartBesideSuspended(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const n = 1000
		mem := newMem()
		var s suspender
		tools := []*Tool{s.tool(false)}
		a := startEngine(t, mem, tools, Options{Owner: "a", SuspendAfter: -1})
		ids := make([]string, n)
		for i := range ids {
			ids[i] = create(t, a, "ask").ID
		}
		synctest.Wait()
		start := time.Now()
		if err := a.Shutdown(bg); err != nil || time.Since(start) != 0 {
			t.Fatalf("Shutdown beside %d suspended tasks = %v after %v, want nil at once", n, err, time.Since(start))
		}
		if got := s.runs.Load(); got != n {
			t.Fatalf("%d runs for %d tasks", got, n)
		}

		st := &faultStore{Store: mem}
		b := startEngine(t, st, tools, Options{Owner: "b", SuspendAfter: -1})
		time.Sleep(10 * testLease)
		synctest.Wait()
		if got := s.runs.Load(); got != n || st.hbCalls.Load() != 0 {
			t.Errorf("after a restart: %d runs (want %d), %d heartbeat calls (want none)", got, n, st.hbCalls.Load())
		}
		for _, id := range ids {
			if r := get(t, mem, id); !store.Suspended(r) || r.Attempt != 1 {
				t.Fatalf("%s: status %s, owner %q, attempt %d; want suspended at attempt 1", id, r.Status, r.LeaseOwner, r.Attempt)
			}
		}
		wantSuspended(t, b, mem, ids[0])

		update(t, b, ids[n/2], map[string]string{"k": accept("K")})
		synctest.Wait()
		wantStatus(t, mem, ids[n/2], task.Completed)

		start = time.Now()
		if err := b.Shutdown(bg); err != nil || time.Since(start) != 0 {
			t.Errorf("Shutdown beside %d suspended tasks = %v after %v, want nil at once", n-1, err, time.Since(start))
		}
	})
}

// opCounter is an Observer that counts store calls by name.
type opCounter struct {
	nopObserver
	mu  sync.Mutex
	ops map[string]int
}

func (o *opCounter) StoreOp(op string, _ time.Duration, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops = map[string]int{}
	}
	o.ops[op]++
}

func (o *opCounter) count(op string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ops[op]
}

// TestMaxHeld: past MaxHeld handlers holding, a handler that asks is
// suspended at once, by the write that stores its request (no release of
// its own); those that hold are suspended after SuspendAfter, and the
// freed places are taken again.
func TestMaxHeld(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var s suspender
		var obs opCounter
		e := startEngine(t, st, []*Tool{s.tool(false)}, Options{MaxHeld: 2, Observer: &obs})
		var ids []string
		for range 3 {
			ids = append(ids, create(t, e, "ask").ID)
			synctest.Wait()
		}
		for _, id := range ids[:2] {
			if got := wantStatus(t, st, id, task.InputRequired); got.LeaseOwner != "a" {
				t.Fatalf("task %s of the first two: owner %q, want a (held)", id, got.LeaseOwner)
			}
		}
		if r := get(t, st, ids[2]); !store.Suspended(r) {
			t.Fatalf("third task: status %s, owner %q; want suspended at once", r.Status, r.LeaseOwner)
		}
		if n := obs.count("release"); n != 0 {
			t.Errorf("%d release calls; want 0: the request's write suspends", n)
		}

		time.Sleep(DefaultSuspendAfter)
		synctest.Wait()
		for _, id := range ids {
			wantSuspended(t, e, st, id)
		}
		if n := obs.count("release"); n != 2 {
			t.Errorf("%d release calls after SuspendAfter; want 2, one per held task", n)
		}
		// The places are free again: a new task holds.
		r := create(t, e, "ask")
		synctest.Wait()
		if got := wantStatus(t, st, r.ID, task.InputRequired); got.LeaseOwner != "a" {
			t.Errorf("a task asking after the others were suspended: owner %q, want a (held)", got.LeaseOwner)
		}
	})
}

// onMessage is a slog.Handler that calls f, once, at the first record of
// msg: a hook at a point of the engine's code that only a log line marks.
type onMessage struct {
	slog.Handler
	msg  string
	once sync.Once
	f    func()
}

func (h *onMessage) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(h.f)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *onMessage) WithAttrs(as []slog.Attr) slog.Handler {
	return &onMessage{Handler: h.Handler.WithAttrs(as), msg: h.msg, f: func() { h.once.Do(h.f) }}
}

func (h *onMessage) WithGroup(name string) slog.Handler {
	return &onMessage{Handler: h.Handler.WithGroup(name), msg: h.msg, f: func() { h.once.Do(h.f) }}
}

// TestSuspendedAnsweredBeforeLeft: an answer that comes on this process
// between the suspension of a handler and the end of its execution (the
// last moment it is tracked) re-runs the task at once: the wake-up went to
// the execution that was leaving, so the claim loop must be woken too. It
// waited for its next poll, as no Listener tells this store's engine.
func TestSuspendedAnsweredBeforeLeft(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := &faultStore{Store: newMem()} // no Listener
		var s suspender
		var (
			e        *Engine
			id       string
			answered time.Time
		)
		hook := &onMessage{Handler: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}),
			msg: "task suspended until its input arrives", f: func() {
				answered = time.Now()
				update(t, e, id, map[string]string{"k": accept("K")})
			}}
		e = newEngine(t, st, []*Tool{s.tool(false)}, Options{SuspendAfter: -1, Logger: slog.New(hook)})
		r, err := e.Create(bg, CreateParams{Tool: "ask", Args: json.RawMessage(`{}`), Principal: principal})
		if err != nil {
			t.Fatal(err)
		}
		id = r.ID
		e.Start(bg) // after the create: its task is claimed by the claim loop
		synctest.Wait()
		done := wantStatus(t, st, id, task.Completed)
		if answered.IsZero() {
			t.Fatal("the hook did not answer")
		}
		if d := done.UpdatedAt.Sub(answered); d != 0 {
			t.Errorf("completed %v after the answer, want at once", d)
		}
	})
}

// TestMaxHolding: handlers of a tool that holds give their worker slot up
// while they wait for input only up to MaxHolding at once; past it one
// that waits keeps its slot, so that a new task waits for a free slot
// instead of starting one more held process, and starts once an answer
// frees one.
func TestMaxHolding(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var s suspender
		e := startEngine(t, st, []*Tool{s.tool(true)}, Options{Workers: 2, MaxHolding: 1})
		synctest.Wait()
		var ids []string
		for range 4 {
			ids = append(ids, create(t, e, "ask").ID)
		}
		synctest.Wait()
		// One gave its slot up (MaxHolding 1), two keep theirs: one task
		// (whichever found no free slot) waits.
		if n := s.runs.Load(); n != 3 {
			t.Fatalf("%d handlers ran, want 3 (2 workers, 1 holding without a slot)", n)
		}
		var waiting, asked []string
		for _, id := range ids {
			if r := get(t, st, id); r.Status == task.Working && r.Attempt == 0 {
				waiting = append(waiting, id)
			} else {
				asked = append(asked, id)
			}
		}
		if len(waiting) != 1 {
			t.Fatalf("%d tasks wait for a slot, want 1", len(waiting))
		}
		for _, id := range asked {
			update(t, e, id, map[string]string{"k": accept("K")})
		}
		synctest.Wait()
		if n := s.runs.Load(); n != 4 {
			t.Errorf("%d handlers ran after three answers, want 4", n)
		}
		wantStatus(t, st, asked[0], task.Completed)
		wantStatus(t, st, waiting[0], task.InputRequired)
	})
}

// TestMaxHolding_AnsweredRunsOn: a handler that gave its slot up for a
// MaxHolding token runs on at once when answered, though every worker
// slot is kept by handlers whose questions are not answered.
func TestMaxHolding_AnsweredRunsOn(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var s suspender
		e := startEngine(t, st, []*Tool{s.tool(true)}, Options{Workers: 1, MaxHolding: 1})
		synctest.Wait()
		first := create(t, e, "ask").ID
		synctest.Wait() // it asked, and gave its slot up for the token
		second := create(t, e, "ask").ID
		synctest.Wait() // it asked, and keeps the one slot
		wantStatus(t, st, second, task.InputRequired)
		update(t, e, first, map[string]string{"k": accept("K")})
		synctest.Wait()
		wantStatus(t, st, first, task.Completed)
	})
}

// TestSuspended_AnsweredWhileSlotsFull: a suspended task answered on this
// process while every worker slot is busy is claimed only at the next
// claim tick, not when a slot frees: Update does not set backlog.
func TestSuspended_AnsweredWhileSlotsFull(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		var s suspender
		release := make(chan struct{})
		busy := &Tool{Name: "busy", Handler: func(ctx context.Context, _ *Run) (json.RawMessage, error) {
			<-release
			return json.RawMessage(`{}`), nil
		}}
		e := startEngine(t, mem, []*Tool{s.tool(false), busy}, Options{Workers: 1, SuspendAfter: -1, ClaimInterval: time.Minute})
		synctest.Wait()
		a := create(t, e, "ask")
		synctest.Wait()
		wantSuspended(t, e, mem, a.ID)
		create(t, e, "busy")
		synctest.Wait()
		update(t, e, a.ID, map[string]string{"k": accept("K")})
		synctest.Wait()
		close(release) // the slot frees now
		freed := time.Now()
		synctest.Wait()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		r := wantStatus(t, mem, a.ID, task.Completed)
		if d := r.UpdatedAt.Sub(freed); d > 0 {
			t.Errorf("answered task resumed %v after a slot freed, want at once", d)
		}
	})
}
