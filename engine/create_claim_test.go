package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// claimCounter wraps a store and counts the tasks its Claims take.
type claimCounter struct {
	store.Store
	claimed atomic.Int32
}

func (c *claimCounter) Claim(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	cs, err := c.Store.Claim(ctx, p)
	c.claimed.Add(int32(len(cs)))
	return cs, err
}

// TestCreateClaims: a started engine with a free worker slot creates the
// task already claimed, in the create's one write, and runs its handler at
// once; no Claim takes it.
func TestCreateClaims(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := &claimCounter{Store: newMem()}
		started := make(chan int, 1)
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			started <- run.Attempt()
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		e := startEngine(t, st, []*Tool{{Name: "t", Handler: h}}, Options{Owner: "a"})
		synctest.Wait() // the claim loop's first, empty, claim
		r := create(t, e, "t")
		got := get(t, st, r.ID)
		if got.Attempt != 1 || got.LeaseOwner != "a" || !got.LeaseExpiresAt.Equal(r.CreatedAt.Add(testLease)) ||
			len(got.History) != 1 || got.History[0].Kind != task.HistoryClaimed {
			t.Errorf("stored at Create: attempt %d, owner %q, lease until %v, history %+v; want claimed by a", got.Attempt, got.LeaseOwner, got.LeaseExpiresAt, got.History)
		}
		if r.Status != task.Working {
			t.Errorf("Create returned status %s", r.Status)
		}
		synctest.Wait()
		if a := <-started; a != 1 {
			t.Errorf("handler ran at attempt %d", a)
		}
		if n := st.claimed.Load(); n != 0 {
			t.Errorf("Claim took %d tasks, want 0: the create claimed it", n)
		}
	})
}

// TestCreateClaimsOnlyWithAFreeSlot: without a free slot, or on an engine
// that runs no workers or was not started, the task is created queued.
func TestCreateClaimsOnlyWithAFreeSlot(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		start bool
	}{
		{"slots full", Options{Workers: 1}, true},
		{"no workers", Options{Workers: -1}, true},
		{"not started", Options{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				tools := []*Tool{{Name: "t", Handler: blockUntilCancelled}}
				e := newEngine(t, st, tools, tt.opts)
				if tt.start {
					e.Start(bg)
				}
				if tt.opts.Workers == 1 {
					create(t, e, "t") // takes the one slot
					synctest.Wait()
				}
				r := create(t, e, "t")
				if got := get(t, st, r.ID); got.Attempt != 0 || got.LeaseOwner != "" {
					t.Errorf("stored at Create: attempt %d, owner %q; want queued", got.Attempt, got.LeaseOwner)
				}
			})
		})
	}
}

// TestCreateClaimDuplicateStartsNothing: a create replayed by its
// idempotency key returns the first task and starts nothing: the handler
// runs once, and the slot the replay took is given back.
func TestCreateClaimDuplicateStartsNothing(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var runs atomic.Int32
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			runs.Add(1)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		e := startEngine(t, st, []*Tool{{Name: "t", Handler: h}}, Options{Workers: 2})
		p := CreateParams{Tool: "t", Args: json.RawMessage(`{}`), Principal: principal, IdempotencyKey: "k"}
		first, err := e.Create(bg, p)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			again, err := e.Create(bg, p)
			if err != nil || again.ID != first.ID {
				t.Fatalf("replayed Create = %v, %v; want the first task", again, err)
			}
		}
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}
		if got := get(t, st, first.ID); got.Attempt != 1 {
			t.Errorf("attempt %d after replays, want 1", got.Attempt)
		}
		// The second slot is free: another task is claimed at its create.
		r := create(t, e, "t")
		if got := get(t, st, r.ID); got.Attempt != 1 {
			t.Errorf("a new task after the replays: attempt %d, want 1 (claimed at create)", got.Attempt)
		}
	})
}

// TestCreateClaimRacesShutdown: creates that race Shutdown either start
// their handler before the drain, which then waits for it, or leave the
// task queued; none is lost or left running.
func TestCreateClaimRacesShutdown(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		e := newEngine(t, st, []*Tool{{Name: "t", Handler: returns(`{}`)}}, Options{})
		e.Start(bg)
		var wg sync.WaitGroup
		ids := make(chan string, 20)
		for range 20 {
			wg.Go(func() {
				r, err := e.Create(bg, CreateParams{Tool: "t", Args: json.RawMessage(`{}`), Principal: principal})
				if err == nil {
					ids <- r.ID
				}
			})
		}
		if err := e.Shutdown(bg); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(ids)
		for id := range ids {
			r := get(t, st, id)
			if r.Status == task.Working && r.LeaseOwner != "" {
				t.Errorf("task %s is held by %q after Shutdown returned", id, r.LeaseOwner)
			}
		}
	})
}

// TestCreateClaims_LostReply: a create claimed by this engine whose insert
// was committed but whose reply was lost (a connection broken after
// COMMIT) is this engine's to run: Create finds the task stored, returns it
// and starts its handler at once, in its first attempt. It used to give
// the task up leased to nobody running it, to be failed as a lost run (a
// tool that is not re-run) a lease later.
func TestCreateClaims_LostReply(t *testing.T) {
	for _, tt := range []struct {
		name  string
		key   string
		rerun bool // without a key: the handler's first write is folded into the create
		blips int  // Gets that fail while the engine looks for the task
	}{{"NotRerun", "", false, 0}, {"Key", "k", false, 0}, {"Folded", "", true, 0}, {"StoreBlips", "", false, 3}} {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := &faultStore{Store: newMem()}
				h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
					if err := run.SetStatus(ctx, "going"); err != nil {
						return nil, err
					}
					return json.RawMessage(`{"content":[]}`), nil
				}
				e := startEngine(t, st, []*Tool{{Name: "once", Handler: h, Retry: RetryPolicy{Rerun: tt.rerun}}}, Options{Owner: "a"})
				synctest.Wait()
				st.loseCreate.Store(1)
				st.blipGet.Store(int32(tt.blips))
				r, err := e.Create(bg, CreateParams{Tool: "once", Args: json.RawMessage(`{}`), Principal: principal, IdempotencyKey: tt.key})
				if err != nil {
					t.Fatalf("Create with its reply lost after the commit: %v; want the task, found stored", err)
				}
				time.Sleep(time.Second) // a folded handler's write, which failed with the insert, is retried
				synctest.Wait()
				got := get(t, st, r.ID)
				if got.Status != task.Completed || got.Attempt != 1 || got.Losses != 0 {
					t.Errorf("the task: %s, attempt %d, %d losses; want completed in its first attempt", got.Status, got.Attempt, got.Losses)
				}
			})
		})
	}
}

// TestCreate_LostReplyUnclaimed: a create not claimed by its engine (no
// free slot, or an engine that is not started) whose insert committed but
// whose reply was lost returns the task, found stored, and its engine's
// claim loop takes it at once. A create whose insert failed fails.
func TestCreate_LostReplyUnclaimed(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := &faultStore{Store: newMem()}
		ran := make(chan struct{}, 1)
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			ran <- struct{}{}
			return json.RawMessage(`{"content":[]}`), nil
		}
		e := newEngine(t, st, []*Tool{{Name: "once", Handler: h}}, Options{Owner: "a"})
		p := CreateParams{Tool: "once", Args: json.RawMessage(`{}`), Principal: principal}
		st.failCreate.Store(1)
		if _, err := e.Create(bg, p); err == nil {
			t.Error("Create whose insert failed succeeded")
		}
		st.loseCreate.Store(1)
		r, err := e.Create(bg, p)
		if err != nil {
			t.Fatalf("Create with its reply lost after the commit: %v; want the task, found stored", err)
		}
		if n := count(t, st.Store.(store.Counter)); n != 1 {
			t.Errorf("%d tasks stored, want 1", n)
		}
		e.Start(bg)
		synctest.Wait()
		<-ran
		wantStatus(t, st, r.ID, task.Completed)
	})
}
