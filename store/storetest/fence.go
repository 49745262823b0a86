package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// fencedOps are the worker writes, each called with the given fence.
var fencedOps = []struct {
	name string
	call func(s store.Store, p store.FenceParams) error
}{
	{"Heartbeat", func(s store.Store, p store.FenceParams) error {
		_, err := heartbeat(context.Background(), s, p, p.Now.Add(lease))
		return err
	}},
	{"Release", func(s store.Store, p store.FenceParams) error {
		return s.Release(context.Background(), p)
	}},
	{"SetStatusMessage", func(s store.Store, p store.FenceParams) error {
		return s.SetStatusMessage(context.Background(), store.StatusMessageParams{FenceParams: p, StatusMessage: "late"})
	}},
	{"RequestInput", func(s store.Store, p store.FenceParams) error {
		_, err := s.RequestInput(context.Background(), store.RequestInputParams{FenceParams: p, Requests: raws("late", reqC)})
		return err
	}},
	{"SaveStep", func(s store.Store, p store.FenceParams) error {
		_, err := s.SaveStep(context.Background(), store.StepParams{FenceParams: p, Name: "late", Result: json.RawMessage(`1`)})
		return err
	}},
	{"Finish", func(s store.Store, p store.FenceParams) error {
		return s.Finish(context.Background(), store.FinishParams{FenceParams: p, Status: task.Completed, Result: json.RawMessage(`{"late":true}`)})
	}},
}

// testFence checks that every worker write is rejected with ErrLeaseLost,
// changing nothing, when the writer does not hold the task.
func testFence(t *testing.T, f factory) {
	now := at(10 * time.Second)
	situations := []struct {
		name string
		// setup brings the store into the situation and returns the fence
		// of a writer that does not hold task t1.
		setup func(t *testing.T, s store.Store) store.FenceParams
	}{
		{"StaleAttempt", func(t *testing.T, s store.Store) store.FenceParams {
			create(t, s, newTask("t1"))
			old := claim(t, s, "w1", at(-lease))
			claim(t, s, "w2", at(0)) // the lease of w1 expired at t0
			return fence(old, now)
		}},
		{"FutureAttempt", func(t *testing.T, s store.Store) store.FenceParams {
			create(t, s, newTask("t1"))
			c := claim(t, s, "w1", at(0))
			p := fence(c, now)
			p.Attempt++
			return p
		}},
		{"NeverClaimed", func(t *testing.T, s store.Store) store.FenceParams {
			create(t, s, newTask("t1"))
			return store.FenceParams{ID: "t1", Attempt: 0, Now: now}
		}},
		{"Released", func(t *testing.T, s store.Store) store.FenceParams {
			create(t, s, newTask("t1"))
			c := claim(t, s, "w1", at(0))
			if err := s.Release(context.Background(), fence(c, at(time.Second))); err != nil {
				t.Fatalf("Release: %v", err)
			}
			return fence(c, now)
		}},
		{"Completed", func(t *testing.T, s store.Store) store.FenceParams {
			create(t, s, newTask("t1"))
			c := claim(t, s, "w1", at(0))
			err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, at(time.Second)), Status: task.Completed, Result: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatalf("Finish: %v", err)
			}
			return fence(c, now)
		}},
		{"CancelledAfterLeaseExpired", func(t *testing.T, s store.Store) store.FenceParams {
			create(t, s, newTask("t1"))
			c := claim(t, s, "w1", at(-lease))
			if _, err := s.RequestCancel(context.Background(), store.CancelParams{ID: "t1", Principal: alice, Now: at(0)}); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
			return fence(c, now)
		}},
		{"TTLElapsed", func(t *testing.T, s store.Store) store.FenceParams {
			r := newTask("t1")
			r.TTL = now.Sub(t0)
			create(t, s, r)
			return fence(claim(t, s, "w1", at(0)), now)
		}},
		{"UnknownID", func(t *testing.T, s store.Store) store.FenceParams {
			create(t, s, newTask("t1"))
			c := claim(t, s, "w1", at(0))
			p := fence(c, now)
			p.ID = "t2"
			return p
		}},
	}
	for _, sit := range situations {
		t.Run(sit.name, func(t *testing.T) {
			for _, op := range fencedOps {
				t.Run(op.name, func(t *testing.T) {
					t.Parallel()
					s := f.open(t)
					p := sit.setup(t, s)
					before := get(t, s, "t1")
					err := op.call(s, p)
					wantErr(t, op.name, err, store.ErrLeaseLost)
					wantStored(t, s, before)
					if p.ID != "t1" {
						_, err := s.Get(context.Background(), p.ID)
						wantErr(t, "Get(unknown)", err, store.ErrNotFound)
					}
				})
			}
		})
	}
}
