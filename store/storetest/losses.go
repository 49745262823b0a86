package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testLosses checks that Losses counts the claims that found a lease
// expired while held, not the claims after a Release, and that no other
// write changes it: the engine's retry policy is checked against it.
func testLosses(t *testing.T, f factory) {
	t.Run("Counts", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		ctx := context.Background()
		create(t, s, newTask("t1"))
		if got := get(t, s, "t1").Losses; got != 0 {
			t.Fatalf("after Create: Losses = %d, want 0", got)
		}

		// Each step claims the task; a released one was handed over, an
		// unreleased one was lost with its worker.
		steps := []struct {
			release    bool // the step's worker releases the task before the next claim
			wantLost   bool
			wantLosses int
		}{
			{release: true, wantLost: false, wantLosses: 0},  // the first claim
			{release: false, wantLost: false, wantLosses: 0}, // after a Release
			{release: true, wantLost: true, wantLosses: 1},   // after an expiry
			{release: false, wantLost: false, wantLosses: 1}, // after a Release
			{release: false, wantLost: true, wantLosses: 2},  // after an expiry
		}
		now := at(0)
		for i, st := range steps {
			c := claim(t, s, "w", now)
			if c.Attempt != i+1 || c.Lost != st.wantLost || c.Losses != st.wantLosses {
				t.Fatalf("claim %d = attempt %d lost %v losses %d, want %d %v %d",
					i+1, c.Attempt, c.Lost, c.Losses, i+1, st.wantLost, st.wantLosses)
			}
			if got := get(t, s, "t1").Losses; got != st.wantLosses {
				t.Fatalf("after claim %d: stored Losses = %d, want %d", i+1, got, st.wantLosses)
			}
			if st.release {
				now = now.Add(time.Second)
				if err := s.Release(ctx, fence(c, now)); err != nil {
					t.Fatalf("Release %d: %v", i+1, err)
				}
			} else {
				now = c.LeaseExpiresAt // the worker is gone; its lease runs out
			}
		}
	})

	t.Run("Kept", func(t *testing.T) { testLossesKept(t, f) })
}

// testLossesKept checks that Losses, set by a claim, survives every later
// write.
func testLossesKept(t *testing.T, f factory) {
	ctx := context.Background()
	tests := []struct {
		name  string
		write func(t *testing.T, s store.Store, c store.Claimed)
	}{
		{"Heartbeat", func(t *testing.T, s store.Store, c store.Claimed) {
			if _, err := heartbeat(ctx, s, fence(c, at(lease+time.Second)), at(3*lease)); err != nil {
				t.Fatalf("Heartbeat: %v", err)
			}
		}},
		{"SetStatusMessage", func(t *testing.T, s store.Store, c store.Claimed) {
			if err := s.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: fence(c, at(lease+time.Second)), StatusMessage: "busy"}); err != nil {
				t.Fatalf("SetStatusMessage: %v", err)
			}
		}},
		{"RequestInputAnswer", func(t *testing.T, s store.Store, c store.Claimed) {
			requestInput(t, s, c, at(lease+time.Second), raws("a", reqA))
			wantKeys(t, "Answer", answer(t, s, c.ID, at(lease+2*time.Second), raws("a", respA)), "a")
		}},
		{"ReleaseReclaim", func(t *testing.T, s store.Store, c store.Claimed) {
			if err := s.Release(ctx, fence(c, at(lease+time.Second))); err != nil {
				t.Fatalf("Release: %v", err)
			}
			claim(t, s, "w3", at(lease+2*time.Second))
		}},
		{"Finish", func(t *testing.T, s store.Store, c store.Claimed) {
			if err := s.Finish(ctx, store.FinishParams{FenceParams: fence(c, at(lease+time.Second)), Status: task.Completed, Result: json.RawMessage(`{}`)}); err != nil {
				t.Fatalf("Finish: %v", err)
			}
		}},
		{"RequestCancel", func(t *testing.T, s store.Store, c store.Claimed) {
			if _, err := s.RequestCancel(ctx, store.CancelParams{ID: c.ID, Principal: alice, Now: at(lease + time.Second), StatusMessage: "stop"}); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			create(t, s, newTask("t1"))
			claim(t, s, "w1", at(0))
			c := claim(t, s, "w2", at(lease)) // w1 was lost
			if c.Losses != 1 {
				t.Fatalf("claim after expiry: Losses = %d, want 1", c.Losses)
			}
			tt.write(t, s, c)
			if got := get(t, s, "t1").Losses; got != 1 {
				t.Errorf("after %s: Losses = %d, want 1", tt.name, got)
			}
		})
	}
}
