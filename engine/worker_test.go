package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

func TestHandlerRunsDetached(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		release := make(chan struct{})
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: h}}, Options{})
		r := create(t, e, "job")
		synctest.Wait()

		// Create returned while the handler runs on a worker.
		running := wantStatus(t, st, r.ID, task.Working)
		if running.Attempt != 1 || running.LeaseOwner != "a" || !running.LeaseExpiresAt.Equal(r.CreatedAt.Add(testLease)) {
			t.Errorf("running task: attempt %d, owner %q, lease until %v", running.Attempt, running.LeaseOwner, running.LeaseExpiresAt)
		}

		close(release)
		synctest.Wait()
		done := wantStatus(t, st, r.ID, task.Completed)
		if string(done.Result) != `{"content":[{"type":"text","text":"done"}]}` {
			t.Errorf("result = %s", done.Result)
		}
		if done.LeaseOwner != "" || !done.LeaseExpiresAt.IsZero() || done.Error != nil {
			t.Errorf("completed task keeps lease %q/%v or error %v", done.LeaseOwner, done.LeaseExpiresAt, done.Error)
		}
		if got, err := e.Get(bg, principal, r.ID); err != nil || got.Status != task.Completed {
			t.Errorf("Get = %v, %v", got, err)
		}
	})
}

func TestHandlerOutcome(t *testing.T) {
	tests := []struct {
		name       string
		handler    Handler
		want       task.Status
		wantResult string
		wantCode   int64
		wantMsg    string // a substring of the error message
	}{
		{
			name:       "result",
			handler:    returns(`{"content":[],"structuredContent":{"n":42}}`),
			want:       task.Completed,
			wantResult: `{"content":[],"structuredContent":{"n":42}}`,
		},
		{
			name:       "tool error is completed",
			handler:    returns(`{"content":[{"type":"text","text":"no such file"}],"isError":true}`),
			want:       task.Completed,
			wantResult: `{"content":[{"type":"text","text":"no such file"}],"isError":true}`,
		},
		{
			name: "plain error",
			handler: func(context.Context, *Run) (json.RawMessage, error) {
				return nil, errors.New("disk full")
			},
			want: task.Failed, wantCode: task.CodeInternalError, wantMsg: "disk full",
		},
		{
			name: "task error",
			handler: func(context.Context, *Run) (json.RawMessage, error) {
				return nil, &task.Error{Code: -32602, Message: "bad arguments", Data: json.RawMessage(`{"field":"n"}`)}
			},
			want: task.Failed, wantCode: -32602, wantMsg: "bad arguments",
		},
		{
			name: "wrapped task error",
			handler: func(context.Context, *Run) (json.RawMessage, error) {
				return nil, fmt.Errorf("validate: %w", &task.Error{Code: -32001, Message: "quota exceeded"})
			},
			want: task.Failed, wantCode: -32001, wantMsg: "quota exceeded",
		},
		{
			name:    "panic",
			handler: func(context.Context, *Run) (json.RawMessage, error) { panic("boom") },
			want:    task.Failed, wantCode: task.CodeInternalError, wantMsg: "panicked: boom",
		},
		{
			name: "nil dereference",
			handler: func(context.Context, *Run) (json.RawMessage, error) {
				var m map[string]*int
				return json.RawMessage(fmt.Sprint(*m["x"])), nil
			},
			want: task.Failed, wantCode: task.CodeInternalError, wantMsg: "nil pointer dereference",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				e := startEngine(t, st, []*Tool{
					{Name: "t", Handler: tt.handler},
					{Name: "ok", Handler: returns(`{"ok":true}`)},
				}, Options{})
				r := create(t, e, "t")
				synctest.Wait()

				got := wantStatus(t, st, r.ID, tt.want)
				if string(got.Result) != tt.wantResult {
					t.Errorf("result = %s, want %s", got.Result, tt.wantResult)
				}
				switch {
				case tt.want == task.Completed && got.Error != nil:
					t.Errorf("completed task has error %v", got.Error)
				case tt.want == task.Failed && got.Error == nil:
					t.Errorf("failed task has no error")
				case tt.want == task.Failed:
					if got.Error.Code != tt.wantCode || !strings.Contains(got.Error.Message, tt.wantMsg) {
						t.Errorf("error = %d %q, want %d containing %q", got.Error.Code, got.Error.Message, tt.wantCode, tt.wantMsg)
					}
					if got.StatusMessage != got.Error.Message {
						t.Errorf("status message %q, want the error message %q", got.StatusMessage, got.Error.Message)
					}
					d := got.Detailed()
					if d.Error == nil || d.Result != nil || d.InputRequests != nil {
						t.Errorf("Detailed() = %+v", d)
					}
				}

				// The engine survives: the next task runs as usual.
				next := create(t, e, "ok")
				synctest.Wait()
				wantStatus(t, st, next.ID, task.Completed)
			})
		})
	}
}

// TestWorkerPoolBound checks that at most Workers handlers hold a slot at
// once, and that a handler parked in RequestInput gives its slot up.
func TestWorkerPoolBound(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const workers, tasks = 2, 5
		st := newMem()
		var started, active, maxActive atomic.Int32
		enter := func() {
			n := active.Add(1)
			for {
				m := maxActive.Load()
				if n <= m || maxActive.CompareAndSwap(m, n) {
					return
				}
			}
		}
		ask := make(chan struct{}) // the handler that receives asks for input
		release := make(chan struct{})
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			started.Add(1)
			enter()
			defer active.Add(-1)
			select {
			case <-ask:
				active.Add(-1) // parked handlers do not count
				_, err := run.RequestInput(ctx, asks("k"), "")
				enter()
				if err != nil {
					return nil, err
				}
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return json.RawMessage(`{}`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: h}}, Options{Workers: workers})
		var ids []string
		for range tasks {
			ids = append(ids, create(t, e, "job").ID)
		}
		synctest.Wait()

		claimed := func() (n int) {
			for _, id := range ids {
				if get(t, st, id).Attempt > 0 {
					n++
				}
			}
			return n
		}
		if started.Load() != workers || claimed() != workers || len(e.slots) != workers {
			t.Fatalf("started %d handlers, claimed %d tasks, %d slots taken; want %d each", started.Load(), claimed(), len(e.slots), workers)
		}
		// Claim ticks come and go: still no more than Workers.
		time.Sleep(10 * DefaultClaimInterval)
		synctest.Wait()
		if started.Load() != workers || claimed() != workers {
			t.Fatalf("after 10 claim intervals: started %d, claimed %d; want %d", started.Load(), claimed(), workers)
		}

		// One handler parks waiting for input: its slot goes to a third task.
		ask <- struct{}{}
		synctest.Wait()
		if started.Load() != workers+1 || claimed() != workers+1 || len(e.slots) != workers {
			t.Fatalf("after one handler parked: started %d, claimed %d, %d slots taken; want %d, %d, %d",
				started.Load(), claimed(), len(e.slots), workers+1, workers+1, workers)
		}
		var parked string
		for _, id := range ids {
			if get(t, st, id).Status == task.InputRequired {
				parked = id
			}
		}
		if parked == "" {
			t.Fatal("no task is input_required")
		}

		close(release)
		// The others end before the answer comes: answered, a handler of a
		// tool that holds runs on with its MaxHolding token, beside the
		// Workers (TestMaxHolding_AnsweredRunsOn), and would count here.
		synctest.Wait()
		update(t, e, parked, map[string]string{"k": accept("yes")})
		synctest.Wait()
		for _, id := range ids {
			wantStatus(t, st, id, task.Completed)
		}
		if started.Load() != tasks || maxActive.Load() > workers {
			t.Errorf("started %d handlers (want %d), at most %d active at once (want <= %d)", started.Load(), tasks, maxActive.Load(), workers)
		}
	})
}

// TestClaimWhileHandlerTakesSlotBack is a regression test. claimOnce used to
// count the free slots, claim that many tasks, and then block sending one
// token per task into the slot channel. A handler coming back from
// RequestInput could take a slot in between; the claim loop then blocked
// with a task leased but not started (its lease unheartbeated), and
// Shutdown, which waits for the claim loop before it drains or cancels
// handlers, hung past its deadline until some handler returned on its own.
func TestClaimWhileHandlerTakesSlotBack(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		var askRuns, jobRuns atomic.Int32
		tools := []*Tool{
			{Name: "ask", Handler: func(ctx context.Context, run *Run) (json.RawMessage, error) {
				askRuns.Add(1)
				if _, err := run.RequestInput(ctx, asks("k"), ""); err != nil {
					return nil, err
				}
				<-ctx.Done() // keeps its slot until cancelled
				return nil, ctx.Err()
			}},
			{Name: "job", Handler: func(ctx context.Context, run *Run) (json.RawMessage, error) {
				jobRuns.Add(1)
				<-ctx.Done()
				return nil, ctx.Err()
			}},
		}
		e := startEngine(t, st, tools, Options{Workers: 1})
		asker := create(t, e, "ask")
		synctest.Wait() // parked: the only slot is free

		open := st.gateClaims()
		job := create(t, e, "job")
		synctest.Wait() // the claim loop has counted one free slot and waits in Claim

		update(t, e, asker.ID, map[string]string{"k": accept("yes")})
		synctest.Wait() // the asker wants its slot back
		open()
		synctest.Wait()

		// The claimed job runs in the slot the claim loop reserved; the
		// asker waits for a slot. No task is leased without running.
		if askRuns.Load() != 1 || jobRuns.Load() != 1 {
			t.Errorf("ask ran %d times, job ran %d times; want 1 each", askRuns.Load(), jobRuns.Load())
		}
		if r := get(t, mem, job.ID); r.Attempt != 1 || r.LeaseOwner != "a" {
			t.Errorf("job: attempt %d, owner %q", r.Attempt, r.LeaseOwner)
		}
		if len(e.slots) != 1 {
			t.Errorf("%d slots taken, want 1", len(e.slots))
		}

		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- e.Shutdown(ctx) }()
		time.Sleep(2 * time.Minute)
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown = %v, want DeadlineExceeded (a handler ignored the drain)", err)
			}
		default:
			t.Fatal("Shutdown still blocked a minute past its deadline")
		}
	})
}

// TestFreedSlotClaimsAtOnce is a regression test: a handler that returned
// gave its slot back without waking the claim loop, so with a backlog each
// freed slot stayed idle until the next ClaimInterval tick (one task per
// slot per second, however short the tasks).
func TestFreedSlotClaimsAtOnce(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			select {
			case <-time.After(10 * time.Millisecond):
				return json.RawMessage(`{}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		e := startEngine(t, st, []*Tool{{Name: "short", Handler: h}}, Options{Workers: 1})
		var ids []string
		for range 3 {
			ids = append(ids, create(t, e, "short").ID)
		}
		time.Sleep(30 * time.Millisecond) // three 10 ms tasks, one after the other
		synctest.Wait()
		for _, id := range ids {
			wantStatus(t, st, id, task.Completed)
		}
	})
}

// TestRunView: the handler sees the task it runs, and SetStatus is visible
// to the next tasks/get.
func TestRunView(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		type view struct {
			id, tool, principal, args, caps string
			attempt                         int
			inTask                          bool
		}
		var seen view
		step := make(chan struct{})
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			seen = view{run.ID(), run.Tool(), run.Principal(), string(run.Args()), string(run.ClientCapabilities()), run.Attempt(), run.InTask()}
			if err := run.SetStatus(ctx, "Step 1 of 2"); err != nil {
				return nil, err
			}
			select {
			case <-step:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return json.RawMessage(`{}`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: h}}, Options{})
		r, err := e.Create(bg, CreateParams{Tool: "job", Principal: principal, Args: json.RawMessage(`{"x":1}`), ClientCapabilities: json.RawMessage(`{"elicitation":{}}`)})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want := view{r.ID, "job", principal, `{"x":1}`, `{"elicitation":{}}`, 1, true}
		if seen != want {
			t.Errorf("run view = %+v, want %+v", seen, want)
		}
		got, err := e.Get(bg, principal, r.ID)
		if err != nil || got.Status != task.Working || got.StatusMessage != "Step 1 of 2" {
			t.Errorf("Get = %+v, %v; want working with the status message", got, err)
		}
		close(step)
		synctest.Wait()
		wantStatus(t, st, r.ID, task.Completed)
	})
}

// TestEngineWithoutToolsClaimsNothing is a regression test: an engine with
// no tools passed a nil tool list to Claim, which means "every tool", so it
// claimed other processes' tasks and then panicked looking up their tool.
func TestEngineWithoutToolsClaimsNothing(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		startEngine(t, st, nil, Options{Owner: "front"})
		worker := newEngine(t, st, []*Tool{{Name: "job", Handler: returns(`{}`)}}, Options{Owner: "worker"})
		r := create(t, worker, "job")
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := get(t, st, r.ID); got.Attempt != 0 || got.LeaseOwner != "" {
			t.Fatalf("an engine without tools claimed the task: owner %q, attempt %d", got.LeaseOwner, got.Attempt)
		}
		worker.Start(bg)
		synctest.Wait()
		wantStatus(t, st, r.ID, task.Completed)
	})
}

// TestRunners: a handler runs on the goroutine of the handler before it
// while that one waits for its next job (runnerIdle), and on a new one
// after; a handler that ends its goroutine ends its runner, and is counted
// done, so that Shutdown does not wait for it.
func TestRunners(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		ran := make(chan string, 3)
		job := func(context.Context, *Run) (json.RawMessage, error) {
			ran <- goroutineID()
			return json.RawMessage(`{}`), nil
		}
		exit := func(context.Context, *Run) (json.RawMessage, error) {
			runtime.Goexit()
			return nil, nil
		}
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: job}, {Name: "exit", Handler: exit}}, Options{})
		run := func() string {
			t.Helper()
			id := create(t, e, "job").ID
			synctest.Wait() // done, and its runner waits for the next job
			wantStatus(t, st, id, task.Completed)
			return <-ran
		}
		first := run()
		if second := run(); second != first {
			t.Errorf("the second handler ran on goroutine %s, want %s: the first's runner was waiting", second, first)
		}
		time.Sleep(runnerIdle)
		synctest.Wait()
		if third := run(); third == first {
			t.Errorf("the third handler ran on goroutine %s, the runner that should have exited %v after its job", third, runnerIdle)
		}

		create(t, e, "exit")
		synctest.Wait()
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		start := time.Now()
		if err := e.Shutdown(ctx); err != nil || time.Since(start) != 0 {
			t.Errorf("Shutdown after a handler's Goexit = %v after %v, want nil at once", err, time.Since(start))
		}
	})
}

// goroutineID returns the id of the calling goroutine, from its stack
// trace's first line ("goroutine 7 [running]:").
func goroutineID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	return strings.Fields(string(b))[1]
}

// TestMaxHolding_TakenOnlyToWait: a handler of a tool that holds
// whose RequestInput is answered from the store at once (a re-run) takes a
// MaxHolding token though it never gives its slot up, and keeps both for
// its run: a handler that then waits must keep its slot, and a new task
// finds no slot.
func TestMaxHolding_TakenOnlyToWait(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		now := time.Now().UTC().Truncate(time.Millisecond)
		// Released at a shutdown while it waited, then answered: claimable.
		if err := mem.Create(bg, &task.Record{ID: task.NewIDAt(now), Principal: principal, Tool: "hold", Args: json.RawMessage(`{}`),
			Status: task.Working, CreatedAt: now, UpdatedAt: now, TTL: 24 * time.Hour, PollInterval: time.Second,
			Attempt: 1, Answers: map[string]json.RawMessage{"k": json.RawMessage(accept("K"))}}); err != nil {
			t.Fatal(err)
		}
		hold := &Tool{Name: "hold", Retry: RetryPolicy{Rerun: true}, Hold: true, Handler: func(ctx context.Context, run *Run) (json.RawMessage, error) {
			key := "j"
			if run.Attempt() == 2 {
				key = "k" // the re-run: answered in the store
			}
			if _, err := run.RequestInput(ctx, asks(key), ""); err != nil {
				return nil, err
			}
			<-ctx.Done() // long work
			return nil, context.Cause(ctx)
		}}
		e := startEngine(t, mem, []*Tool{hold, {Name: "quick", Handler: returns(`{}`)}}, Options{Workers: 2, MaxHolding: 1})
		synctest.Wait() // the re-run works, answered at once
		create(t, e, "hold")
		synctest.Wait() // it waits for "j"
		c := create(t, e, "quick")
		synctest.Wait()
		if r := get(t, mem, c.ID); r.Status != task.Completed {
			t.Errorf("with 2 workers, one running and one waiting for input (MaxHolding 1 unused by any waiter), a new task is %s, want completed", r.Status)
		}
	})
}
