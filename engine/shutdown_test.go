package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// TestShutdownDrains: running handlers get until the deadline to finish,
// and their results are written.
func TestShutdownDrains(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			select {
			case <-time.After(10 * time.Second):
				return json.RawMessage(`{"drained":true}`), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: h}}, Options{})
		var ids []string
		for range 3 {
			ids = append(ids, create(t, e, "job").ID)
		}
		synctest.Wait()

		start := time.Now()
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown = %v, want nil", err)
		}
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("Shutdown took %v, want 10s (the handlers' run time)", took)
		}
		for _, id := range ids {
			if r := wantStatus(t, st, id, task.Completed); string(r.Result) != `{"drained":true}` {
				t.Errorf("result = %s", r.Result)
			}
		}
	})
}

// TestShutdownStopsClaiming: after Shutdown no task is claimed, and Start
// does nothing.
func TestShutdownStopsClaiming(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var runs atomic.Int32
		h := func(context.Context, *Run) (json.RawMessage, error) { runs.Add(1); return json.RawMessage(`{}`), nil }
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: h}}, Options{})
		if err := e.Shutdown(bg); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		r := create(t, e, "job")
		e.Start(bg)
		time.Sleep(time.Minute)
		synctest.Wait()
		if runs.Load() != 0 || get(t, st, r.ID).Attempt != 0 {
			t.Errorf("a task created after Shutdown ran %d times", runs.Load())
		}
		// A never-started engine shuts down at once.
		if err := newEngine(t, st, nil, Options{}).Shutdown(bg); err != nil {
			t.Errorf("Shutdown of an engine never started = %v", err)
		}
	})
}

// TestShutdownParkedHandler: a handler waiting for input on a rerunnable
// tool releases its task at once, so another engine claims it at once
// rather than after the lease. On a tool that may not be re-run it waits for
// the drain deadline and is then cancelled without writing.
func TestShutdownParkedHandler(t *testing.T) {
	tests := []struct {
		name  string
		rerun bool
	}{
		{"rerunnable: released", true},
		{"not rerunnable: held until the deadline", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				errs := map[string]error{} // by owner
				var runs atomic.Int32
				h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
					runs.Add(1)
					answers, err := run.RequestInput(ctx, asks("k"), "Waiting for k")
					if err != nil {
						errs[run.e.opts.Owner] = err
						return nil, err
					}
					return answers["k"], nil
				}
				tools := []*Tool{{Name: "ask", Handler: h, Retry: RetryPolicy{Rerun: tt.rerun}}}
				a := startEngine(t, st, tools, Options{Owner: "a"})
				r := create(t, a, "ask")
				synctest.Wait()
				wantStatus(t, st, r.ID, task.InputRequired)

				start := time.Now()
				ctx, cancel := context.WithTimeout(bg, 5*time.Second)
				defer cancel()
				err := a.Shutdown(ctx)
				took := time.Since(start)
				parked := wantStatus(t, st, r.ID, task.InputRequired)

				if !tt.rerun {
					if !errors.Is(err, context.DeadlineExceeded) || took != 5*time.Second {
						t.Errorf("Shutdown = %v after %v, want DeadlineExceeded after 5s", err, took)
					}
					if !errors.Is(errs["a"], errShutdown) {
						t.Errorf("handler on a returned %v, want errShutdown", errs["a"])
					}
					if parked.LeaseOwner != "a" || parked.Attempt != 1 {
						t.Errorf("owner %q, attempt %d; want the lease left to expire", parked.LeaseOwner, parked.Attempt)
					}
					return
				}

				if err != nil || took != 0 {
					t.Errorf("Shutdown = %v after %v, want nil at once", err, took)
				}
				if !errors.Is(errs["a"], ErrReleased) {
					t.Errorf("handler on a returned %v, want ErrReleased", errs["a"])
				}
				if parked.LeaseOwner != "" || !parked.LeaseExpiresAt.IsZero() || parked.Attempt != 1 {
					t.Errorf("after release: owner %q, lease until %v, attempt %d", parked.LeaseOwner, parked.LeaseExpiresAt, parked.Attempt)
				}

				// Released while it waits: suspended. B does not claim it
				// until it is answered, then re-runs it at once.
				b := startEngine(t, st, tools, Options{Owner: "b"})
				time.Sleep(time.Minute)
				synctest.Wait()
				if got := wantStatus(t, st, r.ID, task.InputRequired); got.LeaseOwner != "" || got.Attempt != 1 || runs.Load() != 1 {
					t.Fatalf("b: owner %q, attempt %d, %d runs; want the task suspended", got.LeaseOwner, got.Attempt, runs.Load())
				}
				update(t, b, r.ID, map[string]string{"k": accept("yes")})
				synctest.Wait()
				if done := wantStatus(t, st, r.ID, task.Completed); string(done.Result) != accept("yes") || runs.Load() != 2 {
					t.Errorf("result %s after %d runs", done.Result, runs.Load())
				}
			})
		})
	}
}

// TestShutdownDeadline: a handler that ignores the drain is cancelled when
// the deadline passes; Shutdown waits for it to return, then reports the
// ctx error. Nothing is written, so the lease runs out and another worker
// applies the retry policy.
func TestShutdownDeadline(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var cause error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			time.Sleep(2 * time.Second) // winds down slowly
			return json.RawMessage(`{"late":true}`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: h}}, Options{})
		r := create(t, e, "job")
		synctest.Wait()

		start := time.Now()
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 7*time.Second {
			t.Errorf("Shutdown returned after %v, want 7s (5s deadline + 2s wind-down)", took)
		}
		if !errors.Is(cause, errShutdown) {
			t.Errorf("handler ctx cause = %v, want errShutdown", cause)
		}
		got := wantStatus(t, st, r.ID, task.Working)
		if got.Result != nil || got.LeaseOwner != "a" || got.Attempt != 1 {
			t.Errorf("after Shutdown: result %s, owner %q, attempt %d; want nothing written", got.Result, got.LeaseOwner, got.Attempt)
		}
	})
}

// TestShutdownDeadline_FinishRetrying: a run whose end cannot be written
// (the store is down) retries the write for up to a lease, but not past
// Shutdown's deadline: Shutdown returns then, and the task's lease is
// left to expire, as a handler's still running at the deadline is.
func TestShutdownDeadline_FinishRetrying(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		h := func(context.Context, *Run) (json.RawMessage, error) {
			st.down.Store(true) // its end cannot be written
			return json.RawMessage(`{"content":[]}`), nil
		}
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: h}}, Options{})
		r := create(t, e, "job")
		synctest.Wait()

		start := time.Now()
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Shutdown returned after %v, want 1s (its deadline), not a lease of retries", took)
		}
		if got := wantStatus(t, mem, r.ID, task.Working); got.LeaseOwner != "a" {
			t.Errorf("owner = %q, want the lease left with a to expire", got.LeaseOwner)
		}
	})
}

// TestShutdownDeadline_FinishUnderWay: Shutdown's deadline ends the
// retries of a run's end, not a write of it under way: a handler that
// returned just before the deadline has its result stored, and Shutdown
// returns once it is.
func TestShutdownDeadline_FinishUnderWay(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		st.slowFinish.Store(int64(2 * time.Second))
		e := startEngine(t, st, []*Tool{{Name: "job", Handler: func(context.Context, *Run) (json.RawMessage, error) {
			return json.RawMessage(`{"content":[]}`), nil
		}}}, Options{})
		r := create(t, e, "job")
		synctest.Wait() // its end is being written

		start := time.Now()
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("Shutdown returned after %v, want 2s (the write under way)", took)
		}
		wantStatus(t, mem, r.ID, task.Completed)
	})
}

// TestShutdownReleaseFails: when the release of a parked task fails (the
// store blips during a graceful shutdown), the task must not be failed with
// the release error: it is left to expire and be re-run elsewhere, like any
// task of a worker that went away.
func TestShutdownReleaseFails(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		var runs atomic.Int32
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			runs.Add(1)
			answers, err := run.RequestInput(ctx, asks("k"), "")
			if err != nil {
				return nil, err
			}
			return answers["k"], nil
		}
		tools := []*Tool{{Name: "ask", Handler: h, Retry: RetryPolicy{Rerun: true}}}
		a := startEngine(t, procA, tools, Options{Owner: "a"})
		r := create(t, a, "ask")
		synctest.Wait()

		procA.failRelease.Store(true)
		if err := a.Shutdown(bg); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
		if got := wantStatus(t, mem, r.ID, task.InputRequired); got.LeaseOwner != "a" {
			t.Errorf("owner = %q, want the lease left with a to expire", got.LeaseOwner)
		}

		b := startEngine(t, mem, tools, Options{Owner: "b"})
		time.Sleep(testLease + DefaultClaimInterval)
		synctest.Wait()
		got := wantStatus(t, mem, r.ID, task.InputRequired)
		if got.LeaseOwner != "b" || got.Attempt != 2 || runs.Load() != 2 {
			t.Fatalf("owner %q, attempt %d, %d runs; want b re-running it", got.LeaseOwner, got.Attempt, runs.Load())
		}
		update(t, b, r.ID, map[string]string{"k": accept("yes")})
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.Completed)
	})
}

// TestShutdown_DeadlineBeforeHandler is the same, made
// deterministic: the runner is held (by a log line it writes before track,
// here a slow log handler) until Shutdown has cancelled what it tracks.
func TestShutdown_DeadlineBeforeHandler(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		now := time.Now().UTC().Truncate(time.Millisecond)
		// A task whose worker was lost: its re-run logs before it is tracked.
		if err := mem.Create(bg, &task.Record{ID: task.NewIDAt(now), Principal: principal, Tool: "job", Args: json.RawMessage(`{}`),
			Status: task.Working, CreatedAt: now, UpdatedAt: now, TTL: time.Hour * 24, PollInterval: time.Second,
			Attempt: 1, LeaseOwner: "dead", LeaseExpiresAt: now.Add(-time.Second)}); err != nil {
			t.Fatal(err)
		}
		escape := make(chan struct{})
		var calls atomic.Int32
		h := func(ctx context.Context, _ *Run) (json.RawMessage, error) {
			calls.Add(1)
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-escape:
				return nil, errors.New("escaped")
			}
		}
		reached, proceed := make(chan struct{}), make(chan struct{})
		hook := &onMessage{Handler: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}),
			msg: "re-running task after a lost worker", f: func() { close(reached); <-proceed }}
		e := startEngine(t, mem, []*Tool{{Name: "job", Handler: h, Retry: RetryPolicy{Rerun: true}}}, Options{Logger: slog.New(hook)})
		<-reached
		expired, cancel := context.WithCancel(bg)
		cancel()
		returned := make(chan error, 1)
		go func() { returned <- e.Shutdown(expired) }()
		synctest.Wait() // Shutdown has cancelled every tracked handler: none
		close(proceed)
		synctest.Wait()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case <-returned:
		default:
			t.Errorf("Shutdown with an expired deadline has not returned an hour later: the handler was never cancelled")
			close(escape)
			<-returned
		}
		if n := calls.Load(); n != 0 {
			t.Errorf("the handler of a run cancelled before it started was called %d times, want none (its work would be thrown away)", n)
		}
	})
}
