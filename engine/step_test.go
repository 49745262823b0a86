package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// counted returns a step function that counts its calls and returns the
// JSON result.
func counted(n *atomic.Int32, result string) func(context.Context) (json.RawMessage, error) {
	return func(context.Context) (json.RawMessage, error) {
		n.Add(1)
		return json.RawMessage(result), nil
	}
}

// TestStep_ReplayAfterLostWorker: engine A runs a step, asks a question
// and dies while it waits. Engine B re-runs the handler once A's lease
// ends: the step returns A's stored result without running again, and the
// question is still open for the person.
func TestStep_ReplayAfterLostWorker(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		var queries atomic.Int32
		got := map[int]string{} // attempt: the step's result as the handler saw it
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			rows, err := run.Step(ctx, "query", counted(&queries, `{"rows": 500}`))
			if err != nil {
				return nil, err
			}
			got[run.Attempt()] = string(rows)
			if _, err := run.RequestInput(ctx, asks("overwrite"), "Overwrite?"); err != nil {
				return nil, err
			}
			return rows, nil
		}
		tools := []*Tool{{Name: "export", Handler: h, Retry: RetryPolicy{Rerun: true}}}
		a := startEngine(t, procA, tools, Options{Owner: "a"})
		r := create(t, a, "export")
		synctest.Wait()
		held := wantStatus(t, mem, r.ID, task.InputRequired)
		if queries.Load() != 1 || string(held.Steps["query"]) != `{"rows": 500}` {
			t.Fatalf("after the first run: %d queries, stored steps %s; want 1 and the result", queries.Load(), held.Steps)
		}

		procA.down.Store(true) // A's process is gone
		startEngine(t, mem, tools, Options{Owner: "b"})
		time.Sleep(time.Until(held.LeaseExpiresAt) + DefaultClaimInterval)
		synctest.Wait()
		if r := get(t, mem, r.ID); r.Attempt != 2 || r.LeaseOwner != "b" {
			t.Fatalf("after A's lease: attempt %d, owner %q; want B's attempt 2", r.Attempt, r.LeaseOwner)
		}
		b := startEngine(t, mem, nil, Options{Owner: "front", Workers: -1})
		update(t, b, r.ID, map[string]string{"overwrite": accept("yes")})
		time.Sleep(testLease / 3) // B re-reads its question at least this often
		synctest.Wait()
		done := wantStatus(t, mem, r.ID, task.Completed)
		if queries.Load() != 1 {
			t.Errorf("the step ran %d times, want once: the re-run must get the stored result", queries.Load())
		}
		if got[2] != `{"rows": 500}` || string(done.Result) != `{"rows": 500}` {
			t.Errorf("re-run saw %q and completed with %s; want the stored result", got[2], done.Result)
		}
	})
}

// TestStep_CrashBetweenSteps: A stores a step, asks, gets the answer,
// and dies while the step after the answer works, before its result is
// stored. B's re-run skips the first step, gets the stored answer without
// asking again, and runs only the second step again (at-least-once).
func TestStep_CrashBetweenSteps(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		var first, second atomic.Int32
		var waited []int // attempts whose RequestInput had to wait
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if _, err := run.Step(ctx, "first", counted(&first, `1`)); err != nil {
				return nil, err
			}
			asked := time.Now()
			ans, err := run.RequestInput(ctx, asks("go"), "Go on?")
			if err != nil {
				return nil, err
			}
			if time.Since(asked) > 0 {
				waited = append(waited, run.Attempt())
			}
			two, err := run.Step(ctx, "second", func(context.Context) (json.RawMessage, error) {
				if second.Add(1) == 1 {
					procA.down.Store(true) // the process dies during the work
				}
				return json.RawMessage(`2`), nil
			})
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]json.RawMessage{"second": two, "go": ans["go"]})
		}
		tools := []*Tool{{Name: "two", Handler: h, Retry: RetryPolicy{Rerun: true}}}
		a := startEngine(t, procA, tools, Options{Owner: "a"})
		r := create(t, a, "two")
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.InputRequired)
		time.Sleep(time.Second) // the person takes a second to answer
		update(t, a, r.ID, map[string]string{"go": accept("yes")})
		synctest.Wait()
		held := get(t, mem, r.ID)
		if _, ok := held.Steps["second"]; ok || string(held.Steps["first"]) != `1` || second.Load() != 1 {
			t.Fatalf("after the crash: steps %s, second ran %d times; want first stored, second run once and lost", held.Steps, second.Load())
		}

		startEngine(t, mem, tools, Options{Owner: "b"})
		time.Sleep(time.Until(held.LeaseExpiresAt) + DefaultClaimInterval)
		synctest.Wait()
		done := wantStatus(t, mem, r.ID, task.Completed)
		if first.Load() != 1 || second.Load() != 2 {
			t.Errorf("first ran %d times, second %d; want 1 (stored) and 2 (lost with A)", first.Load(), second.Load())
		}
		if len(waited) != 1 || waited[0] != 1 {
			t.Errorf("RequestInput waited at attempts %v, want [1]: the re-run gets the stored answer", waited)
		}
		if done.Attempt != 2 || !strings.Contains(string(done.Result), `"second":2`) {
			t.Errorf("attempt %d, result %s", done.Attempt, done.Result)
		}
		for _, ev := range done.History {
			if ev.Kind == task.HistoryInputRequested && ev.Attempt == 2 {
				t.Errorf("the re-run asked again: %+v", ev)
			}
		}
	})
}

// TestStep_ErrorIsNotStored: a step whose work fails returns the error and
// stores nothing; the next call runs it again and stores its result.
func TestStep_ErrorIsNotStored(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		var calls atomic.Int32
		errFlaky := errors.New("flaky")
		var firstErr error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			fn := func(context.Context) (json.RawMessage, error) {
				if calls.Add(1) == 1 {
					return nil, errFlaky
				}
				return json.RawMessage(`"ok"`), nil
			}
			_, firstErr = run.Step(ctx, "s", fn)
			if r := get(t, mem, run.ID()); len(r.Steps) != 0 {
				t.Errorf("a failed step stored %s", r.Steps)
			}
			return run.Step(ctx, "s", fn)
		}
		e := startEngine(t, mem, []*Tool{{Name: "flaky", Handler: h}}, Options{})
		r := create(t, e, "flaky")
		synctest.Wait()
		done := wantStatus(t, mem, r.ID, task.Completed)
		if !errors.Is(firstErr, errFlaky) || calls.Load() != 2 || string(done.Result) != `"ok"` || string(done.Steps["s"]) != `"ok"` {
			t.Errorf("first error %v, %d calls, result %s, steps %s", firstErr, calls.Load(), done.Result, done.Steps)
		}
	})
}

// TestStep_StoreBlip: a step whose write fails for a moment is written
// again until it is stored; its work runs once and the handler never sees
// the store's error.
func TestStep_StoreBlip(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		st.blipStep.Store(3)
		var calls atomic.Int32
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			return run.Step(ctx, "s", counted(&calls, `"done"`))
		}
		e := startEngine(t, st, []*Tool{{Name: "t", Handler: h}}, Options{})
		r := create(t, e, "t")
		time.Sleep(time.Second) // the backoff: 10, 20, 40 ms
		synctest.Wait()
		done := wantStatus(t, mem, r.ID, task.Completed)
		if calls.Load() != 1 || string(done.Result) != `"done"` || string(done.Steps["s"]) != `"done"` {
			t.Errorf("%d calls, result %s, steps %s; want 1 call and the stored result", calls.Load(), done.Result, done.Steps)
		}
	})
}

// TestStep_Bounds: a result over task.MaxStepBytes, a bad name or invalid
// JSON fails the step with an error naming it, and nothing is stored.
func TestStep_Bounds(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", task.MaxStepBytes) + `"`)
	tests := []struct {
		name, step string
		result     json.RawMessage
		want       error
		says       []string
	}{
		{"too large", "dump", big, task.ErrStepTooLarge, []string{`"dump"`, "task.MaxStepBytes", "262144"}},
		{"no name", "", json.RawMessage(`1`), task.ErrInvalidStep, []string{"name is empty"}},
		{"invalid JSON", "half", json.RawMessage(`{"a":`), task.ErrInvalidStep, []string{`"half"`, "invalid JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				mem := newMem()
				var err error
				h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
					_, err = run.Step(ctx, tt.step, func(context.Context) (json.RawMessage, error) { return tt.result, nil })
					return json.RawMessage(`{}`), nil
				}
				e := startEngine(t, mem, []*Tool{{Name: "t", Handler: h}}, Options{})
				r := create(t, e, "t")
				synctest.Wait()
				if !errors.Is(err, tt.want) {
					t.Fatalf("Step error = %v, want %v", err, tt.want)
				}
				for _, s := range tt.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %s", err, s)
					}
				}
				if r := wantStatus(t, mem, r.ID, task.Completed); len(r.Steps) != 0 {
					t.Errorf("stored steps %s", r.Steps)
				}
			})
		})
	}
}

// TestStep_TotalBound: a step that would make the task's steps pass
// task.MaxStepsBytes fails at once (the store's refusal is not retried),
// naming the step and the bound.
func TestStep_TotalBound(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		big := json.RawMessage(`"` + strings.Repeat("x", task.MaxStepBytes-2) + `"`)
		var err error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			for _, name := range []string{"a", "b", "c", "d"} {
				if _, err = run.Step(ctx, name, func(context.Context) (json.RawMessage, error) { return big, nil }); err != nil {
					break
				}
			}
			return json.RawMessage(`{}`), nil
		}
		e := startEngine(t, mem, []*Tool{{Name: "t", Handler: h}}, Options{})
		r := create(t, e, "t")
		synctest.Wait()
		if !errors.Is(err, task.ErrStepTooLarge) || !strings.Contains(err.Error(), `"d"`) || !strings.Contains(err.Error(), "task.MaxStepsBytes") {
			t.Errorf("fourth Step error = %v, want task.ErrStepTooLarge naming the step and the bound", err)
		}
		if done := wantStatus(t, mem, r.ID, task.Completed); len(done.Steps) != 3 {
			t.Errorf("%d steps stored, want 3", len(done.Steps))
		}
	})
}

// TestStep_LeaseLost: a worker whose lease another worker took cannot
// store a step: its write is fenced off, and the step's result is the new
// worker's.
func TestStep_LeaseLost(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		procA.fakeHB.Store(true) // A believes it holds the lease; it does not extend it
		release := make(chan struct{})
		var errA error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if run.Attempt() == 1 {
				_, errA = run.Step(context.WithoutCancel(ctx), "s", func(context.Context) (json.RawMessage, error) {
					<-release // A hangs in the work past its lease
					return json.RawMessage(`"a"`), nil
				})
				return nil, errA
			}
			return run.Step(ctx, "s", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"b"`), nil })
		}
		tools := []*Tool{{Name: "t", Handler: h, Retry: RetryPolicy{Rerun: true}}}
		a := startEngine(t, procA, tools, Options{Owner: "a"})
		unblock := sync.OnceFunc(func() { close(release) })
		t.Cleanup(unblock) // before the engine's Shutdown, which would wait for A's step
		r := create(t, a, "t")
		synctest.Wait()
		startEngine(t, mem, tools, Options{Owner: "b"})
		time.Sleep(testLease + DefaultClaimInterval)
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.Completed)
		unblock()
		synctest.Wait()
		if !errors.Is(errA, store.ErrLeaseLost) {
			t.Errorf("A's Step error = %v, want store.ErrLeaseLost", errA)
		}
		if done := get(t, mem, r.ID); string(done.Steps["s"]) != `"b"` || string(done.Result) != `"b"` {
			t.Errorf("steps %s, result %s; want B's", done.Steps, done.Result)
		}
	})
}

// TestStep_Inline: outside a task, Step just calls its function, every
// time.
func TestStep_Inline(t *testing.T) {
	run := NewInlineRun("t", nil, nil)
	var n atomic.Int32
	for range 2 {
		got, err := run.Step(bg, "s", counted(&n, `7`))
		if err != nil || string(got) != `7` {
			t.Fatalf("Step = %s, %v", got, err)
		}
	}
	if n.Load() != 2 {
		t.Errorf("inline Step ran its function %d times, want 2", n.Load())
	}
}

// TestStepTyped: the typed Step stores its value as JSON, and every run,
// the first included, gets it decoded from the stored JSON.
func TestStepTyped(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		type summary struct {
			Rows  int     `json:"rows"`
			Ratio float64 `json:"ratio"`
		}
		var got summary
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			var err error
			got, err = Step(ctx, run, "summary", func(context.Context) (summary, error) { return summary{Rows: 3, Ratio: 0.5}, nil })
			return json.RawMessage(`{}`), err
		}
		e := startEngine(t, mem, []*Tool{{Name: "t", Handler: h}}, Options{})
		r := create(t, e, "t")
		synctest.Wait()
		if done := wantStatus(t, mem, r.ID, task.Completed); string(done.Steps["summary"]) != `{"rows":3,"ratio":0.5}` {
			t.Errorf("stored %s", done.Steps["summary"])
		}
		if got != (summary{Rows: 3, Ratio: 0.5}) {
			t.Errorf("Step returned %+v", got)
		}
	})
}
