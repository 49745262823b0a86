package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// cancelProbe is a handler that runs (or waits for input) until its ctx is
// done and records when and why.
type cancelProbe struct {
	parked bool
	runs   atomic.Int32
	at     time.Time // when ctx was done
	cause  error
}

func (p *cancelProbe) handle(ctx context.Context, run *Run) (json.RawMessage, error) {
	p.runs.Add(1)
	var err error
	if p.parked {
		_, err = run.RequestInput(ctx, asks("k"), "")
	} else {
		<-ctx.Done()
		err = context.Cause(ctx)
	}
	p.at, p.cause = time.Now(), context.Cause(ctx)
	return nil, err
}

func wantCancelled(t *testing.T, r *task.Record) {
	t.Helper()
	if r.Status != task.Cancelled || r.StatusMessage != "Cancelled by request" || r.Result != nil || r.Error != nil ||
		r.InputRequests != nil || r.LeaseOwner != "" {
		t.Errorf("cancelled task = %+v", r)
	}
}

// TestCancelInProcess: the handler's ctx is cancelled the moment Cancel
// returns, whether it runs or waits for input.
func TestCancelInProcess(t *testing.T) {
	for _, parked := range []bool{false, true} {
		name := map[bool]string{false: "running", true: "waiting for input"}[parked]
		t.Run(name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				p := &cancelProbe{parked: parked}
				e := startEngine(t, st, []*Tool{{Name: "job", Handler: p.handle}}, Options{})
				r := create(t, e, "job")
				synctest.Wait()
				time.Sleep(5 * time.Second)

				if err := e.Cancel(bg, principal, r.ID); err != nil {
					t.Fatalf("Cancel: %v", err)
				}
				cancelled := time.Now()
				synctest.Wait()
				if !p.at.Equal(cancelled) || !errors.Is(p.cause, errCancelRequested) {
					t.Errorf("handler ctx done at +%v with cause %v; want at once with errCancelRequested", p.at.Sub(cancelled), p.cause)
				}
				wantCancelled(t, get(t, st, r.ID))
				if err := e.Cancel(bg, principal, r.ID); err != nil {
					t.Errorf("second Cancel: %v", err)
				}
			})
		})
	}
}

// TestCancelOnAnotherEngine: tasks/cancel reaches a replica that does not
// run the task (and the store announces nothing); the worker sees the
// durable flag within one heartbeat.
func TestCancelOnAnotherEngine(t *testing.T) {
	for _, parked := range []bool{false, true} {
		name := map[bool]string{false: "running", true: "waiting for input"}[parked]
		t.Run(name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				p := &cancelProbe{parked: parked}
				tools := []*Tool{{Name: "job", Handler: p.handle}}
				a := startEngine(t, quiet(st), tools, Options{Owner: "a"})
				b := newEngine(t, quiet(st), tools, Options{Owner: "b"})
				r := create(t, a, "job")
				synctest.Wait()
				time.Sleep(testLease/3 + 2*time.Second) // mid-way between two heartbeats

				if err := b.Cancel(bg, principal, r.ID); err != nil {
					t.Fatalf("Cancel on b: %v", err)
				}
				cancelled := time.Now()
				synctest.Wait()
				if got := get(t, st, r.ID); got.Status.Terminal() || !got.CancelRequested {
					t.Fatalf("right after Cancel on b: %s, cancelRequested %v; want a live task flagged", got.Status, got.CancelRequested)
				}

				time.Sleep(testLease / 3)
				synctest.Wait()
				if took := p.at.Sub(cancelled); p.at.IsZero() || took <= 0 || took > testLease/3 || !errors.Is(p.cause, errCancelRequested) {
					t.Errorf("handler ctx done %v after Cancel with cause %v; want within (0, %v] with errCancelRequested", took, p.cause, testLease/3)
				}
				wantCancelled(t, get(t, st, r.ID))
			})
		})
	}
}

// TestCancelQueued: a task no worker holds is cancelled at once, and never
// runs afterwards.
func TestCancelQueued(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		p := &cancelProbe{}
		e := newEngine(t, st, []*Tool{{Name: "job", Handler: p.handle}}, Options{})
		r := create(t, e, "job")
		if err := e.Cancel(bg, principal, r.ID); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		got := get(t, st, r.ID)
		wantCancelled(t, got)
		if !got.UpdatedAt.Equal(time.Now()) {
			t.Errorf("UpdatedAt = %v, want now", got.UpdatedAt)
		}

		e.Start(bg)
		time.Sleep(time.Minute)
		synctest.Wait()
		if p.runs.Load() != 0 || get(t, st, r.ID).Attempt != 0 {
			t.Errorf("a cancelled task ran (%d runs)", p.runs.Load())
		}
	})
}

// TestCancelFinished: cancelling a finished task succeeds and changes
// nothing.
func TestCancelFinished(t *testing.T) {
	tests := []struct {
		name    string
		handler Handler
		want    task.Status
	}{
		{"completed", returns(`{"ok":true}`), task.Completed},
		{"failed", func(context.Context, *Run) (json.RawMessage, error) { return nil, errors.New("no") }, task.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				e := startEngine(t, st, []*Tool{{Name: "job", Handler: tt.handler}}, Options{})
				r := create(t, e, "job")
				synctest.Wait()
				before := wantStatus(t, st, r.ID, tt.want)
				time.Sleep(time.Second)
				if err := e.Cancel(bg, principal, r.ID); err != nil {
					t.Fatalf("Cancel: %v", err)
				}
				if after := get(t, st, r.ID); !reflect.DeepEqual(after, before) {
					t.Errorf("Cancel changed a %s task:\nbefore %+v\nafter  %+v", tt.want, before, after)
				}
			})
		})
	}
}

// TestCancelFlagSeenAtClaim: a cancel flag already set when the
// task is claimed (by a worker that died) ends it cancelled without running
// the handler.
func TestCancelFlagSeenAtClaim(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		p := &cancelProbe{}
		tools := []*Tool{{Name: "job", Handler: p.handle, Retry: RetryPolicy{Rerun: true}}}
		a := startEngine(t, procA, tools, Options{Owner: "a"})
		r := create(t, a, "job")
		synctest.Wait()
		procA.down.Store(true) // A dies before it sees the flag
		b := startEngine(t, mem, tools, Options{Owner: "b", Workers: 1})
		if err := b.Cancel(bg, principal, r.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(testLease + time.Second)
		synctest.Wait()
		got := get(t, mem, r.ID)
		wantCancelled(t, got)
		if p.runs.Load() != 1 {
			t.Errorf("handler ran %d times, want once (on A only)", p.runs.Load())
		}
	})
}

// TestCancelAfterSelfReclaim is a regression test. An engine whose
// heartbeats hung past the lease reclaims its own task (attempt 2) while the
// handler of attempt 1, which ignores its cancelled ctx, still runs. When
// attempt 1 ended, its cleanup deleted the task's entry in the engine's
// table of running executions, which by then belonged to attempt 2, so an
// in-process Cancel no longer reached the running handler at once.
func TestCancelAfterSelfReclaim(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		procA := &faultStore{Store: mem}
		wake1 := make(chan struct{})
		p := &cancelProbe{}
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if run.Attempt() == 1 {
				<-wake1 // stalled; ignores ctx
				return json.RawMessage(`{}`), nil
			}
			return p.handle(ctx, run)
		}
		a := startEngine(t, procA, []*Tool{{Name: "job", Handler: h, Retry: RetryPolicy{Rerun: true}}}, Options{Workers: 2})
		r := create(t, a, "job")
		synctest.Wait()

		procA.stallHB.Store(true)
		time.Sleep(testLease + DefaultClaimInterval)
		synctest.Wait()
		procA.stallHB.Store(false)
		if got := get(t, mem, r.ID); got.Attempt != 2 || got.LeaseOwner != "a" || p.runs.Load() != 1 {
			t.Fatalf("attempt %d, owner %q, %d runs of attempt 2; want a re-running it", got.Attempt, got.LeaseOwner, p.runs.Load())
		}
		close(wake1) // attempt 1 returns; its Finish is fenced off
		synctest.Wait()
		wantStatus(t, mem, r.ID, task.Working)

		if err := a.Cancel(bg, principal, r.ID); err != nil {
			t.Fatal(err)
		}
		cancelled := time.Now()
		synctest.Wait()
		if !p.at.Equal(cancelled) {
			t.Errorf("attempt 2's ctx was not cancelled at once by an in-process Cancel")
		}
		time.Sleep(testLease / 3)
		synctest.Wait()
		wantCancelled(t, get(t, mem, r.ID))
	})
}

// TestCancelNow: 2025-11-25's tasks/cancel. The task is cancelled when
// CancelNow returns, on the engine that runs it and on another; the
// handler is stopped (at once here, at the next heartbeat there) and its
// result is never stored.
func TestCancelNow(t *testing.T) {
	for _, other := range []bool{false, true} {
		name := map[bool]string{false: "same engine", true: "another engine"}[other]
		t.Run(name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				p := &cancelProbe{}
				tools := []*Tool{{Name: "job", Handler: p.handle}}
				a := startEngine(t, st, tools, Options{Owner: "a"})
				via := a
				if other {
					via = newEngine(t, st, tools, Options{Owner: "b"})
				}
				r := create(t, a, "job")
				synctest.Wait()
				time.Sleep(2 * time.Second)

				got, err := via.CancelNow(bg, principal, r.ID)
				if err != nil {
					t.Fatalf("CancelNow: %v", err)
				}
				cancelled := time.Now()
				wantCancelled(t, got)
				wantCancelled(t, get(t, st, r.ID))

				time.Sleep(testLease / 3)
				synctest.Wait()
				if p.at.IsZero() || p.at.Sub(cancelled) > testLease/3 {
					t.Errorf("handler ctx done %v after CancelNow; want within %v", p.at.Sub(cancelled), testLease/3)
				}
				wantCancelled(t, get(t, st, r.ID))
				if got, err := via.CancelNow(bg, principal, r.ID); err != nil || got.Status != task.Cancelled {
					t.Errorf("second CancelNow = %v, %v; want the cancelled task", got, err)
				}
				if _, err := via.CancelNow(bg, "mallory", r.ID); !errors.Is(err, ErrNotFound) {
					t.Errorf("CancelNow by another principal: %v, want ErrNotFound", err)
				}
			})
		})
	}
}

// TestCancelAsOperator: an operator's cancel reaches the task whoever its
// principal is, through the store's cancel rules: a waiting handler's ctx
// is cancelled at once, a task no worker holds ends at once, and unknown,
// expired and finished tasks are left alone.
func TestCancelAsOperator(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		p := &cancelProbe{parked: true}
		e := startEngine(t, st, []*Tool{
			{Name: "job", Handler: p.handle},
			{Name: "short", Handler: returns(`{}`), TTL: time.Minute},
		}, Options{})
		held := create(t, e, "job")
		synctest.Wait()
		r, err := e.CancelAsOperator(bg, held.ID)
		if err != nil {
			t.Fatalf("CancelAsOperator: %v", err)
		}
		if !r.CancelRequested {
			t.Errorf("CancelAsOperator returned %+v, want the cancel requested", r)
		}
		synctest.Wait()
		if !errors.Is(p.cause, errCancelRequested) {
			t.Errorf("handler ctx done with cause %v, want errCancelRequested", p.cause)
		}
		wantCancelled(t, get(t, st, held.ID))

		// Not held by any worker (an engine that runs nothing made it,
		// of a tool that e does not claim): cancelled at once, with the
		// operator's message.
		idle := newEngine(t, st, []*Tool{{Name: "idle_job", Handler: p.handle}}, Options{Owner: "b", Workers: -1})
		queued := create(t, idle, "idle_job")
		if _, err := idle.CancelAsOperator(bg, queued.ID); err != nil {
			t.Fatalf("CancelAsOperator(queued): %v", err)
		}
		if got := get(t, st, queued.ID); got.Status != task.Cancelled || got.StatusMessage != OperatorCancelMessage {
			t.Errorf("queued task after CancelAsOperator = %s %q, want cancelled %q", got.Status, got.StatusMessage, OperatorCancelMessage)
		}

		done := create(t, e, "short")
		synctest.Wait()
		if r, err := e.CancelAsOperator(bg, done.ID); err != nil || r.Status != task.Completed {
			t.Errorf("CancelAsOperator(completed) = %v, %v; want it left completed", r, err)
		}
		time.Sleep(time.Minute) // done's TTL elapses
		for _, id := range []string{done.ID, task.NewID(), "not an id"} {
			if _, err := e.CancelAsOperator(bg, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("CancelAsOperator(%q) = %v, want ErrNotFound", id, err)
			}
		}
	})
}

// TestCancel_RightAfterCreate: a Cancel made as soon as Create
// returned (the client's next request) misses the handler, which runs on
// until the next heartbeat.
func TestCancel_RightAfterCreate(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		p := &cancelProbe{}
		e := startEngine(t, mem, []*Tool{{Name: "job", Handler: p.handle}}, Options{})
		id := create(t, e, "job").ID
		if err := e.Cancel(bg, principal, id); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		synctest.Wait()
		time.Sleep(testLease)
		synctest.Wait()
		// The handler either ran and was stopped at once, or never ran (the
		// claim came after the cancel).
		if d := p.at.Sub(start); p.runs.Load() > 0 && d != 0 {
			t.Errorf("handler kept running for %v after Cancel returned (cause %v)", d, p.cause)
		}
		if r := get(t, mem, id); r.Status != task.Cancelled {
			t.Errorf("status %s, want cancelled", r.Status)
		}
	})
}

// cancelOnClaim cancels each task right after the store leased it to a
// worker and before the engine tracks it: a tasks/cancel whose commit
// lands while the claim's (or the create-claim's) reply is on its way.
type cancelOnClaim struct {
	store.Store
	e      *Engine
	atOnce bool
}

func (c *cancelOnClaim) cancel(id string) {
	if c.atOnce {
		_, _ = c.e.CancelNow(bg, principal, id)
	} else {
		_ = c.e.Cancel(bg, principal, id)
	}
}

func (c *cancelOnClaim) Claim(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	cs, err := c.Store.Claim(ctx, p)
	for _, x := range cs {
		c.cancel(x.ID)
	}
	return cs, err
}

func (c *cancelOnClaim) Create(ctx context.Context, r *task.Record) error {
	err := c.Store.Create(ctx, r)
	if err == nil && r.LeaseOwner != "" {
		c.cancel(r.ID)
	}
	return err
}

// TestCancel_WhileClaiming: a cancel that commits while the store call
// that leases the task to this engine is in flight (a claim, or a create
// claimed in its insert) reaches the run it begins at once: the engine
// keeps it until the run is tracked. Before, it reached the handler only
// at the next heartbeat (Lease/3), and the handler ran until then.
func TestCancel_WhileClaiming(t *testing.T) {
	for _, path := range []string{"create", "claim"} {
		for _, atOnce := range []bool{false, true} {
			t.Run(path+map[bool]string{false: "/Cancel", true: "/CancelNow"}[atOnce], func(t *testing.T) {
				bubble(t, func(t *testing.T) {
					mem := newMem()
					cs := &cancelOnClaim{Store: mem, atOnce: atOnce}
					p := &cancelProbe{}
					// Not re-run: no fold, the create path inserts claimed.
					e := startEngine(t, cs, []*Tool{{Name: "job", Handler: p.handle}}, Options{})
					cs.e = e
					var id string
					if path == "create" {
						id = create(t, e, "job").ID
					} else {
						front := newEngine(t, mem, []*Tool{{Name: "job", Handler: p.handle}}, Options{Owner: "front", Workers: -1})
						id = create(t, front, "job").ID
						e.signal()
					}
					start := time.Now()
					synctest.Wait()
					time.Sleep(testLease)
					synctest.Wait()
					// Cancelled before its handler started: it never runs,
					// and the task ends cancelled at once.
					if n := p.runs.Load(); n != 0 {
						t.Errorf("the handler ran %d times (the last stopped %v after the cancel); want none", n, p.at.Sub(start))
					}
					if r := get(t, mem, id); r.Status != task.Cancelled || r.UpdatedAt.After(start) {
						t.Errorf("status %s at +%v, want cancelled at once", r.Status, r.UpdatedAt.Sub(start))
					}
				})
			})
		}
	}
}
