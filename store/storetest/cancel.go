package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testCancel checks RequestCancel in every state a task can be in.
func testCancel(t *testing.T, f factory) {
	now := at(10 * time.Second)
	const message = "cancelled by the user"
	claimAt := func(when time.Duration) func(t *testing.T, s store.Store) {
		return func(t *testing.T, s store.Store) { claim(t, s, "w1", at(when)) }
	}
	type outcome int
	const (
		unchanged outcome = iota // no change, no error
		cancelled                // cancelled at once
		requested                // CancelRequested set, status unchanged
		notFound                 // ErrNotFound, no change
	)
	tests := []struct {
		name      string
		ttl       time.Duration
		setup     func(t *testing.T, s store.Store) // on task t1, after creation
		id        string                            // default t1
		principal string                            // default alice
		message   string                            // default message
		atOnce    bool                              // CancelParams.AtOnce
		want      outcome
	}{
		{name: "Queued", want: cancelled},
		{name: "QueuedNoMessage", message: "-", want: cancelled},
		{name: "Leased", setup: claimAt(0), want: requested},
		{name: "LeaseExpiresNow", setup: claimAt(now.Sub(t0) - lease), want: cancelled},
		{name: "LeaseExpired", setup: claimAt(-lease), want: cancelled},
		{name: "Released", setup: func(t *testing.T, s store.Store) {
			c := claim(t, s, "w1", at(0))
			if err := s.Release(context.Background(), fence(c, at(time.Second))); err != nil {
				t.Fatalf("Release: %v", err)
			}
		}, want: cancelled},
		{name: "InputRequiredUnleased", setup: func(t *testing.T, s store.Store) {
			c := claim(t, s, "w1", at(0))
			requestInput(t, s, c, at(time.Second), raws("a", reqA))
			if err := s.Release(context.Background(), fence(c, at(2*time.Second))); err != nil {
				t.Fatalf("Release: %v", err)
			}
		}, want: cancelled},
		{name: "InputRequiredLeased", setup: func(t *testing.T, s store.Store) {
			c := claim(t, s, "w1", at(0))
			requestInput(t, s, c, at(time.Second), raws("a", reqA))
		}, want: requested},
		{name: "AtOnceQueued", atOnce: true, want: cancelled},
		{name: "AtOnceLeased", setup: claimAt(0), atOnce: true, want: cancelled},
		{name: "AtOnceInputRequiredLeased", setup: func(t *testing.T, s store.Store) {
			c := claim(t, s, "w1", at(0))
			requestInput(t, s, c, at(time.Second), raws("a", reqA))
		}, atOnce: true, want: cancelled},
		{name: "AtOnceAfterRequested", setup: func(t *testing.T, s store.Store) {
			claim(t, s, "w1", at(0))
			if _, err := s.RequestCancel(context.Background(), store.CancelParams{ID: "t1", Principal: alice, Now: at(time.Second)}); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
		}, atOnce: true, want: cancelled},
		{name: "AtOnceCompleted", setup: func(t *testing.T, s store.Store) {
			c := claim(t, s, "w1", at(0))
			err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, at(time.Second)), Status: task.Completed, Result: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatalf("Finish: %v", err)
			}
		}, atOnce: true, want: unchanged},
		{name: "AtOnceWrongPrincipal", setup: claimAt(0), principal: bob, atOnce: true, want: notFound},
		{name: "AlreadyRequested", setup: func(t *testing.T, s store.Store) {
			claim(t, s, "w1", at(0))
			if _, err := s.RequestCancel(context.Background(), store.CancelParams{ID: "t1", Principal: alice, Now: at(time.Second)}); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
		}, want: unchanged},
		{name: "Completed", setup: func(t *testing.T, s store.Store) {
			c := claim(t, s, "w1", at(0))
			err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, at(time.Second)), Status: task.Completed, Result: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatalf("Finish: %v", err)
			}
		}, want: unchanged},
		{name: "AlreadyCancelled", setup: func(t *testing.T, s store.Store) {
			if _, err := s.RequestCancel(context.Background(), store.CancelParams{ID: "t1", Principal: alice, Now: at(time.Second), StatusMessage: "first"}); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
		}, want: unchanged},
		{name: "WrongPrincipal", principal: bob, want: notFound},
		{name: "WrongPrincipalLeased", setup: claimAt(0), principal: bob, want: notFound},
		{name: "UnknownID", id: "t2", want: notFound},
		{name: "TTLElapsed", ttl: now.Sub(t0), want: notFound},
		{name: "TTLNotElapsed", ttl: now.Sub(t0) + time.Millisecond, want: cancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			r := newTask("t1")
			r.TTL = tt.ttl
			create(t, s, r)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			before := get(t, s, "t1")

			p := store.CancelParams{ID: "t1", Principal: alice, Now: now, StatusMessage: message, AtOnce: tt.atOnce}
			if tt.id != "" {
				p.ID = tt.id
			}
			if tt.principal != "" {
				p.Principal = tt.principal
			}
			if tt.message == "-" {
				p.StatusMessage = ""
			}
			got, err := s.RequestCancel(context.Background(), p)
			want := before.Clone()
			switch tt.want {
			case notFound:
				wantErr(t, "RequestCancel", err, store.ErrNotFound)
				wantStored(t, s, want)
				return
			case cancelled:
				want.Status = task.Cancelled
				if p.StatusMessage != "" {
					want.StatusMessage = p.StatusMessage
				}
				want.InputRequests = nil
				want.LeaseOwner, want.LeaseExpiresAt = "", time.Time{}
				want.UpdatedAt = now
			case requested:
				want.CancelRequested = true
			}
			if err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
			wantRecord(t, "returned record", got, want)
			wantStored(t, s, want)
		})
	}

	t.Run("AtOnceFencesTheWorker", func(t *testing.T) {
		// A task cancelled at once under its worker stays cancelled: the
		// worker's heartbeat and finish are refused.
		t.Parallel()
		s := f.open(t)
		ctx := context.Background()
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: alice, Now: at(time.Second), AtOnce: true}); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		_, err := heartbeat(ctx, s, fence(c, at(2*time.Second)), at(time.Minute))
		wantErr(t, "Heartbeat", err, store.ErrLeaseLost)
		err = s.Finish(ctx, store.FinishParams{FenceParams: fence(c, at(3*time.Second)), Status: task.Completed, Result: json.RawMessage(`{}`)})
		wantErr(t, "Finish", err, store.ErrLeaseLost)
		if got := get(t, s, "t1").Status; got != task.Cancelled {
			t.Errorf("status = %s, want cancelled", got)
		}
	})

	t.Run("RequestedThenWorkerCancels", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		ctx := context.Background()
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: alice, Now: at(time.Second)}); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		cancel, err := heartbeat(ctx, s, fence(c, at(2*time.Second)), at(time.Minute))
		if err != nil || !cancel {
			t.Fatalf("Heartbeat = %v, %v; want true, nil", cancel, err)
		}
		if err := s.Finish(ctx, store.FinishParams{FenceParams: fence(c, at(3*time.Second)), Status: task.Cancelled, StatusMessage: "stopped"}); err != nil {
			t.Fatalf("Finish: %v", err)
		}
		want := newTask("t1")
		want.Status, want.StatusMessage, want.UpdatedAt = task.Cancelled, "stopped", at(3*time.Second)
		want.Attempt, want.CancelRequested = 1, true
		wantStored(t, s, want)
	})

	t.Run("RequestedThenLeaseExpires", func(t *testing.T) {
		// The worker died before it saw the request: the next request
		// cancels at once.
		t.Parallel()
		s := f.open(t)
		ctx := context.Background()
		create(t, s, newTask("t1"))
		claim(t, s, "w1", at(0))
		if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: alice, Now: at(time.Second)}); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		got, err := s.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: alice, Now: at(lease), StatusMessage: message})
		if err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		want := newTask("t1")
		want.Status, want.StatusMessage, want.UpdatedAt = task.Cancelled, message, at(lease)
		want.Attempt, want.CancelRequested = 1, true
		wantRecord(t, "returned record", got, want)
		wantStored(t, s, want)
	})
}
