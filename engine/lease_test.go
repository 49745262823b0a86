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

// TestReplayAfterLostWorker: engine A runs a task that asks for key k, gets
// the answer, and then its process dies (every store call it makes fails,
// so it can neither heartbeat nor write). Once the lease expires, engine B
// reclaims the task and applies the tool's retry policy.
func TestReplayAfterLostWorker(t *testing.T) {
	tests := []struct {
		name  string
		rerun bool
	}{
		{"rerunnable tool replays the answer", true},
		{"non-rerunnable tool fails", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				mem := newMem()
				procA := &faultStore{Store: mem}
				var runs atomic.Int32
				var causeA error
				var statusAfterReplay task.Status
				var waitedForReplay time.Duration
				h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
					runs.Add(1)
					asked := time.Now()
					answers, err := run.RequestInput(ctx, map[string]json.RawMessage{"k": elicit("Deploy to prod?")}, "Confirm")
					if err != nil {
						return nil, err
					}
					if run.Attempt() == 1 {
						<-ctx.Done() // A hangs after reading the answer, then dies
						causeA = context.Cause(ctx)
						return nil, causeA
					}
					waitedForReplay = time.Since(asked)
					r, err := mem.Get(ctx, run.ID())
					if err != nil {
						return nil, err
					}
					statusAfterReplay = r.Status
					return answers["k"], nil
				}
				tools := []*Tool{{Name: "deploy", Handler: h, Retry: RetryPolicy{Rerun: tt.rerun}}}
				a := startEngine(t, procA, tools, Options{Owner: "a"})
				r := create(t, a, "deploy")
				synctest.Wait()
				wantStatus(t, mem, r.ID, task.InputRequired)
				update(t, a, r.ID, map[string]string{"k": accept("yes")})
				synctest.Wait()
				held := wantStatus(t, mem, r.ID, task.Working)
				if held.LeaseOwner != "a" || held.Attempt != 1 || runs.Load() != 1 {
					t.Fatalf("before the crash: owner %q, attempt %d, %d runs", held.LeaseOwner, held.Attempt, runs.Load())
				}

				procA.down.Store(true) // A's process is gone
				startEngine(t, mem, tools, Options{Owner: "b"})
				synctest.Wait()
				if r := get(t, mem, r.ID); r.Attempt != 1 {
					t.Fatalf("B claimed the task while A's lease was live (attempt %d)", r.Attempt)
				}

				time.Sleep(time.Until(held.LeaseExpiresAt) + DefaultClaimInterval)
				synctest.Wait()
				if !errors.Is(causeA, errLeaseLost) {
					t.Errorf("A's handler ctx cause = %v, want errLeaseLost", causeA)
				}

				if tt.rerun {
					done := wantStatus(t, mem, r.ID, task.Completed)
					if string(done.Result) != accept("yes") || done.Attempt != 2 || runs.Load() != 2 {
						t.Errorf("result %s, attempt %d, %d runs; want the stored answer, 2, 2", done.Result, done.Attempt, runs.Load())
					}
					if statusAfterReplay != task.Working || waitedForReplay != 0 {
						t.Errorf("replayed RequestInput: task %s, waited %v; want working, 0 (the person is not asked twice)", statusAfterReplay, waitedForReplay)
					}
					return
				}
				failed := wantStatus(t, mem, r.ID, task.Failed)
				if failed.Error == nil || failed.Error.Code != task.CodeInternalError || !strings.Contains(failed.Error.Message, "worker running this task was lost") {
					t.Errorf("error = %+v, want -32603 saying the worker was lost", failed.Error)
				}
				if runs.Load() != 1 {
					t.Errorf("the handler of a non-rerunnable tool ran %d times", runs.Load())
				}
			})
		})
	}
}

// TestRerunBoundedByMaxAttempts loses the task to "ghost" workers that claim
// it straight from the store and die, then lets the engine claim it.
func TestRerunBoundedByMaxAttempts(t *testing.T) {
	tests := []struct {
		name        string
		retry       RetryPolicy
		lost        int // ghost claims before the engine's
		wantRun     bool
		wantMessage string
	}{
		{"default 3, lost twice", RetryPolicy{Rerun: true}, 2, true, ""},
		{"default 3, lost three times", RetryPolicy{Rerun: true}, 3, false, "lost 3 times; giving up"},
		{"max 1, lost once", RetryPolicy{Rerun: true, MaxAttempts: 1}, 1, false, "lost 1 times; giving up"},
		{"max 2, lost once", RetryPolicy{Rerun: true, MaxAttempts: 2}, 1, true, ""},
		{"max 5, lost four times", RetryPolicy{Rerun: true, MaxAttempts: 5}, 4, true, ""},
		{"no rerun, lost once", RetryPolicy{}, 1, false, `the tool "job" is not re-run`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				var runs atomic.Int32
				h := func(_ context.Context, run *Run) (json.RawMessage, error) {
					runs.Add(1)
					return json.RawMessage(`{}`), nil
				}
				tools := []*Tool{{Name: "job", Handler: h, Retry: tt.retry}}
				e := newEngine(t, st, tools, Options{})
				r := create(t, e, "job")
				for i := range tt.lost {
					now := time.Now()
					c, err := st.Claim(bg, store.ClaimParams{Owner: "ghost", Now: now, LeaseExpiresAt: now.Add(testLease), Limit: 1})
					if err != nil || len(c) != 1 || c[0].Attempt != i+1 {
						t.Fatalf("ghost claim %d: %v, %+v", i+1, err, c)
					}
					time.Sleep(testLease) // the ghost dies; its lease runs out
				}
				e.Start(bg)
				synctest.Wait()

				got := get(t, st, r.ID)
				if got.Attempt != tt.lost+1 || got.Losses != tt.lost {
					t.Errorf("attempt = %d, losses = %d; want %d, %d", got.Attempt, got.Losses, tt.lost+1, tt.lost)
				}
				if tt.wantRun {
					if got.Status != task.Completed || runs.Load() != 1 {
						t.Errorf("status %s after %d runs; want completed after 1", got.Status, runs.Load())
					}
					return
				}
				if got.Status != task.Failed || runs.Load() != 0 || got.Error == nil || !strings.Contains(got.Error.Message, tt.wantMessage) {
					t.Errorf("status %s, %d runs, error %+v; want failed, 0 runs, %q", got.Status, runs.Load(), got.Error, tt.wantMessage)
				}
			})
		})
	}
}

// TestLateFinishIsFenced: A's handler stalls while A wrongly believes it
// still holds the lease (its heartbeats are acknowledged but never extend
// it: the engine cannot tell, as after a process freeze or clock trouble).
// B reclaims the task and completes it, then A's handler wakes up and A
// tries to finish with its own result. The store rejects A's write: B's
// result stands.
func TestLateFinishIsFenced(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		wakeA := make(chan struct{})
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if run.Attempt() == 1 {
				<-wakeA // stalled; it does not look at ctx
			}
			return json.RawMessage(`{"by":"` + run.e.opts.Owner + `"}`), nil
		}
		tools := []*Tool{{Name: "job", Handler: h, Retry: RetryPolicy{Rerun: true}}}
		// One worker, held by the stalled handler: A cannot reclaim the task.
		a := startEngine(t, procA, tools, Options{Owner: "a", Workers: 1})
		// Registered after the engine's cleanup, so run before it: a
		// failing check must not leave the stalled handler holding
		// Shutdown (a deadlock of the bubble).
		wake := sync.OnceFunc(func() { close(wakeA) })
		t.Cleanup(wake)
		r := create(t, a, "job")
		synctest.Wait()
		if got := get(t, mem, r.ID); got.LeaseOwner != "a" {
			t.Fatalf("owner = %q, want a", got.LeaseOwner)
		}

		procA.fakeHB.Store(true)
		startEngine(t, mem, tools, Options{Owner: "b"})
		time.Sleep(testLease + DefaultClaimInterval)
		synctest.Wait()
		byB := wantStatus(t, mem, r.ID, task.Completed)
		if string(byB.Result) != `{"by":"b"}` || byB.Attempt != 2 {
			t.Fatalf("result %s at attempt %d, want B's at 2", byB.Result, byB.Attempt)
		}

		wake()
		synctest.Wait()
		if got := get(t, mem, r.ID); string(got.Result) != `{"by":"b"}` || got.Status != task.Completed || !got.UpdatedAt.Equal(byB.UpdatedAt) {
			t.Errorf("after A's late finish: %s %s, want B's result untouched", got.Status, got.Result)
		}
		fin := procA.finishResults()
		if len(fin) != 1 || !errors.Is(fin[0], store.ErrLeaseLost) {
			t.Errorf("A's Finish calls returned %v, want one ErrLeaseLost", fin)
		}
	})
}

// TestHeartbeatKeepsLeaseAlive: a task that runs (or waits for input, with
// a tool that holds) for five lease durations stays with its worker; a second engine polling the
// same store never reclaims it.
func TestHeartbeatKeepsLeaseAlive(t *testing.T) {
	tests := []struct {
		name   string
		parked bool
	}{
		{"running", false},
		{"waiting for input", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				var runs atomic.Int32
				h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
					runs.Add(1)
					if tt.parked {
						if _, err := run.RequestInput(ctx, asks("k"), ""); err != nil {
							return nil, err
						}
						return json.RawMessage(`{"by":"` + run.e.opts.Owner + `"}`), nil
					}
					select {
					case <-time.After(5 * testLease):
						return json.RawMessage(`{"by":"` + run.e.opts.Owner + `"}`), nil
					case <-ctx.Done():
						return nil, context.Cause(ctx)
					}
				}
				// A waiting handler that holds (not suspended).
				tools := []*Tool{{Name: "long", Handler: h, Retry: RetryPolicy{Rerun: true}, Hold: tt.parked}}
				a := startEngine(t, st, tools, Options{Owner: "a"})
				r := create(t, a, "long")
				synctest.Wait()
				startEngine(t, st, tools, Options{Owner: "b"})

				for i := range 4 {
					time.Sleep(testLease + time.Second)
					synctest.Wait()
					got := get(t, st, r.ID)
					if got.LeaseOwner != "a" || got.Attempt != 1 || !got.LeaseExpiresAt.After(time.Now()) {
						t.Fatalf("after %d leases: owner %q, attempt %d, lease until %v (now %v)", i+1, got.LeaseOwner, got.Attempt, got.LeaseExpiresAt, time.Now())
					}
				}
				if tt.parked {
					update(t, a, r.ID, map[string]string{"k": accept("yes")})
				}
				time.Sleep(testLease)
				synctest.Wait()
				done := wantStatus(t, st, r.ID, task.Completed)
				if string(done.Result) != `{"by":"a"}` || done.Attempt != 1 || runs.Load() != 1 {
					t.Errorf("result %s at attempt %d after %d runs; want A's, 1, 1", done.Result, done.Attempt, runs.Load())
				}
			})
		})
	}
}

// TestGracefulReleaseIsNotALoss: a rerunnable task that waits for input
// across a rolling restart is released (not lost), suspended, and claimed
// again once answered, which raises Attempt but not Losses. MaxAttempts is
// checked against Losses, so the hand-off does not count: lost once with
// MaxAttempts 2, the task is re-run, not failed with "lost 2 times".
func TestGracefulReleaseIsNotALoss(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if _, err := run.RequestInput(ctx, asks("k"), ""); err != nil {
				return nil, err
			}
			answers, err := run.RequestInput(ctx, asks("k2"), "")
			if err != nil {
				return nil, err
			}
			return answers["k2"], nil
		}
		tools := []*Tool{{Name: "ask", Handler: h, Retry: RetryPolicy{Rerun: true, MaxAttempts: 2}}}
		hold := Options{SuspendAfter: time.Hour} // parked handlers hold their leases

		// A parks the task and shuts down gracefully: released.
		a := startEngine(t, mem, tools, Options{Owner: "a", SuspendAfter: hold.SuspendAfter})
		r := create(t, a, "ask")
		synctest.Wait()
		if err := a.Shutdown(bg); err != nil {
			t.Fatal(err)
		}
		// B claims it once k is answered, parks it on k2, and crashes.
		procB := &faultStore{Store: mem}
		b := startEngine(t, procB, tools, Options{Owner: "b", SuspendAfter: hold.SuspendAfter})
		update(t, b, r.ID, map[string]string{"k": accept("yes")})
		synctest.Wait()
		if got := get(t, mem, r.ID); got.LeaseOwner != "b" || got.InputRequests["k2"] == nil {
			t.Fatalf("after the answer: owner %q, asking %v; want b asking k2", got.LeaseOwner, got.InputRequests)
		}
		procB.down.Store(true)
		// C reclaims it after B's lease: the first loss.
		c := startEngine(t, mem, tools, Options{Owner: "c", SuspendAfter: hold.SuspendAfter})
		time.Sleep(testLease + DefaultClaimInterval)
		synctest.Wait()
		got := get(t, mem, r.ID)
		if got.Status != task.InputRequired || got.LeaseOwner != "c" {
			t.Fatalf("after one loss with MaxAttempts 2: %s (%q), owner %q; want re-run on c", got.Status, got.StatusMessage, got.LeaseOwner)
		}
		if got.Attempt != 3 || got.Losses != 1 {
			t.Errorf("attempt %d, losses %d; want 3 claims, 1 of them after a loss", got.Attempt, got.Losses)
		}
		update(t, c, r.ID, map[string]string{"k2": accept("yes")})
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.Completed)
	})
}

// TestHeartbeatSurvivesOneMiss: one failed heartbeat (the store was away
// for a moment) neither stops the handler nor loses the task, because the
// next heartbeat comes before the lease ends.
func TestHeartbeatSurvivesOneMiss(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		var cause error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			select {
			case <-time.After(2 * testLease):
				return json.RawMessage(`{"by":"` + run.e.opts.Owner + `"}`), nil
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return nil, cause
			}
		}
		tools := []*Tool{{Name: "job", Handler: h, Retry: RetryPolicy{Rerun: true}}}
		a := startEngine(t, procA, tools, Options{Owner: "a"})
		r := create(t, a, "job")
		synctest.Wait()
		startEngine(t, mem, tools, Options{Owner: "b"})

		time.Sleep(testLease/3 - time.Second)
		procA.down.Store(true) // the heartbeat at Lease/3 fails
		time.Sleep(2 * time.Second)
		procA.down.Store(false)
		synctest.Wait()
		if got := get(t, mem, r.ID); !got.LeaseExpiresAt.Equal(r.CreatedAt.Add(testLease)) {
			t.Fatalf("lease until %v, want the claim's (the heartbeat failed)", got.LeaseExpiresAt)
		}

		time.Sleep(testLease) // past the first lease's end
		synctest.Wait()
		if got := get(t, mem, r.ID); got.LeaseOwner != "a" || got.Attempt != 1 || cause != nil {
			t.Fatalf("owner %q, attempt %d, cause %v; want a still running it", got.LeaseOwner, got.Attempt, cause)
		}
		time.Sleep(testLease)
		synctest.Wait()
		if done := wantStatus(t, mem, r.ID, task.Completed); string(done.Result) != `{"by":"a"}` {
			t.Errorf("result %s, want A's", done.Result)
		}
	})
}

// TestHeartbeatHangStopsHandler: a heartbeat whose store call hangs (a
// black-holed connection) must not keep the handler running past its
// lease, when another worker may reclaim the task: the worker stops by the
// time its lease ends.
func TestHeartbeatHangStopsHandler(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		pa := &cancelProbe{}
		var runsB atomic.Int32
		var startB time.Time
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if run.Attempt() == 1 {
				return pa.handle(ctx, run)
			}
			runsB.Add(1)
			startB = time.Now()
			return json.RawMessage(`{"by":"b"}`), nil
		}
		tools := []*Tool{{Name: "job", Handler: h, Retry: RetryPolicy{Rerun: true}}}
		procA.stallHB.Store(true)
		a := startEngine(t, procA, tools, Options{Owner: "a", Workers: 1})
		r := create(t, a, "job")
		synctest.Wait()
		startEngine(t, mem, tools, Options{Owner: "b"})

		time.Sleep(testLease + DefaultClaimInterval)
		synctest.Wait()
		if pa.at.IsZero() || pa.at.After(r.CreatedAt.Add(testLease)) || !errors.Is(pa.cause, errLeaseLost) {
			t.Errorf("A's handler stopped at %v (cause %v), want by the lease end %v with errLeaseLost", pa.at, pa.cause, r.CreatedAt.Add(testLease))
		}
		if runsB.Load() != 1 || startB.Before(pa.at) {
			t.Errorf("B ran %d times, starting at %v; A stopped at %v; want A stopped no later than B started", runsB.Load(), startB, pa.at)
		}
		wantStatus(t, mem, r.ID, task.Completed)
	})
}

// TestHeartbeatBatched: one store call every Lease/3 extends the leases of
// every handler of the process, however many run; with none running, the
// process makes no heartbeat call at all.
func TestHeartbeatBatched(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		e := startEngine(t, st, []*Tool{{Name: "block", Handler: blockUntilCancelled}}, Options{Workers: 50})
		var ids []string
		for range 40 {
			ids = append(ids, create(t, e, "block").ID)
		}
		synctest.Wait()
		start := time.Now()
		time.Sleep(3*testLease + time.Second)
		synctest.Wait()
		if n := st.hbCalls.Load(); n != 9 {
			t.Errorf("%d heartbeat calls in %v for 40 handlers, want 9 (one per Lease/3)", n, time.Since(start))
		}
		for _, id := range ids {
			if r := get(t, mem, id); r.LeaseOwner != "a" || !r.LeaseExpiresAt.After(time.Now()) {
				t.Fatalf("%s: lease %q until %v, want a's, live", id, r.LeaseOwner, r.LeaseExpiresAt)
			}
		}
		for _, id := range ids {
			if err := e.Cancel(bg, principal, id); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		before := st.hbCalls.Load()
		time.Sleep(3 * testLease)
		synctest.Wait()
		if n := st.hbCalls.Load() - before; n != 0 {
			t.Errorf("%d heartbeat calls with nothing running, want none", n)
		}
	})
}
