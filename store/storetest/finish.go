package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testFinish checks that a worker ends a task once, for good.
func testFinish(t *testing.T, f factory) {
	now := at(10 * time.Second)
	result := json.RawMessage(`{"content":[{"type":"text", "text":"42"}]}`)
	rpcErr := &task.Error{Code: -32001, Message: "tool crashed", Data: json.RawMessage(`{"exit": 2}`)}
	tests := []struct {
		name string
		// inputFirst asks for a and gets a answered, then asks for b, before
		// finishing: the task finishes from input_required.
		inputFirst bool
		p          store.FinishParams
		// message is the status message expected after.
		message string
	}{
		{"Completed", false, store.FinishParams{Status: task.Completed, Result: result, StatusMessage: "done"}, "done"},
		{"CompletedClearsMessage", false, store.FinishParams{Status: task.Completed, Result: result}, ""},
		{"Failed", false, store.FinishParams{Status: task.Failed, Error: rpcErr, StatusMessage: "crashed"}, "crashed"},
		{"Cancelled", false, store.FinishParams{Status: task.Cancelled, StatusMessage: "stopped"}, "stopped"},
		{"FromInputRequired", true, store.FinishParams{Status: task.Completed, Result: result}, ""},
		{"CancelledFromInputRequired", true, store.FinishParams{Status: task.Cancelled}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			create(t, s, newTask("t1"))
			c := claim(t, s, "w1", at(0))
			if err := s.SetStatusMessage(context.Background(), store.StatusMessageParams{FenceParams: fence(c, at(time.Second)), StatusMessage: "working on it"}); err != nil {
				t.Fatalf("SetStatusMessage: %v", err)
			}
			if tt.inputFirst {
				requestInput(t, s, c, at(2*time.Second), raws("a", reqA))
				answer(t, s, "t1", at(3*time.Second), raws("a", respA))
				requestInput(t, s, c, at(4*time.Second), raws("b", reqB))
			}
			before := get(t, s, "t1")

			p := tt.p
			p.FenceParams = fence(c, now)
			if err := s.Finish(context.Background(), p); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			want := before.Clone()
			want.Status = p.Status
			want.StatusMessage = tt.message
			want.Result = p.Result
			want.Error = p.Error
			want.InputRequests = nil // answers stay
			want.LeaseOwner = ""
			want.LeaseExpiresAt = time.Time{}
			want.UpdatedAt = now
			wantStored(t, s, want)

			// Terminal is final: a second Finish at the same attempt is fenced off.
			for _, again := range []task.Status{task.Completed, task.Failed, task.Cancelled} {
				err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, now.Add(time.Second)), Status: again, StatusMessage: "again"})
				wantErr(t, "second Finish", err, store.ErrLeaseLost)
			}
			wantStored(t, s, want)
		})
	}

	t.Run("NonTerminalStatus", func(t *testing.T) {
		for _, st := range []task.Status{task.Working, task.InputRequired, "bogus"} {
			t.Run(string(st), func(t *testing.T) {
				t.Parallel()
				s := f.open(t)
				create(t, s, newTask("t1"))
				c := claim(t, s, "w1", at(0))
				before := get(t, s, "t1")
				err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, now), Status: st, StatusMessage: "x"})
				var te *task.TransitionError
				if !errors.As(err, &te) {
					t.Fatalf("Finish(%s) = %v, want a *task.TransitionError", st, err)
				}
				wantStored(t, s, before)
			})
		}
	})

	t.Run("LostWorkerLosesTheRace", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		ctx := context.Background()
		create(t, s, newTask("t1"))
		old := claim(t, s, "w1", at(0))
		cur := claim(t, s, "w2", at(lease))

		err := s.Finish(ctx, store.FinishParams{FenceParams: fence(old, at(lease+time.Second)), Status: task.Completed, Result: json.RawMessage(`"old"`)})
		wantErr(t, "Finish by the lost worker", err, store.ErrLeaseLost)
		err = s.Finish(ctx, store.FinishParams{FenceParams: fence(cur, at(lease+2*time.Second)), Status: task.Completed, Result: json.RawMessage(`"new"`)})
		if err != nil {
			t.Fatalf("Finish by the current worker: %v", err)
		}
		want := newTask("t1")
		want.Status, want.Result, want.Attempt, want.UpdatedAt = task.Completed, json.RawMessage(`"new"`), 2, at(lease+2*time.Second)
		want.Losses = 1 // w1 was lost
		wantStored(t, s, want)
	})

	t.Run("NotClaimableAfter", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		if err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, now), Status: task.Completed}); err != nil {
			t.Fatalf("Finish: %v", err)
		}
		if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(time.Hour), LeaseExpiresAt: at(2 * time.Hour)}); len(ids) != 0 {
			t.Fatalf("claim after Finish returned %q", ids)
		}
	})
}
