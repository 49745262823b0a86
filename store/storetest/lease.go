package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
)

func testLease(t *testing.T, f factory) {
	t.Run("HeartbeatExtends", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		ctx := context.Background()
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))

		cancel, err := heartbeat(ctx, s, fence(c, at(20*time.Second)), at(50*time.Second))
		if err != nil || cancel {
			t.Fatalf("Heartbeat = %v, %v; want false, nil", cancel, err)
		}
		want := c.Record.Clone()
		want.LeaseExpiresAt = at(50 * time.Second)
		wantStored(t, s, want)

		// The old expiry no longer frees the task.
		if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(lease), LeaseExpiresAt: at(time.Hour)}); len(ids) != 0 {
			t.Fatalf("claim of a heartbeaten task returned %q", ids)
		}
	})

	t.Run("HeartbeatReportsCancel", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		ctx := context.Background()
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))

		if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: alice, Now: at(time.Second)}); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		for range 2 { // the flag stays set
			cancel, err := heartbeat(ctx, s, fence(c, at(2*time.Second)), at(time.Minute))
			if err != nil || !cancel {
				t.Fatalf("Heartbeat = %v, %v; want true, nil", cancel, err)
			}
		}
	})

	t.Run("HeartbeatAfterUnclaimedExpiry", func(t *testing.T) {
		// A lease that expired but that nobody claimed again still fences
		// by Attempt: the slow worker may extend it.
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		_, err := heartbeat(context.Background(), s, fence(c, at(lease+time.Second)), at(2*lease))
		if err != nil {
			t.Fatalf("Heartbeat after an unclaimed expiry: %v", err)
		}
		want := c.Record.Clone()
		want.LeaseExpiresAt = at(2 * lease)
		wantStored(t, s, want)
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		if err := s.Release(context.Background(), fence(c, at(time.Second))); err != nil {
			t.Fatalf("Release: %v", err)
		}
		want := newTask("t1")
		want.Attempt = 1
		wantStored(t, s, want)

		// Released work is free at once, and was not lost.
		c2 := claim(t, s, "w2", at(time.Second))
		if c2.Attempt != 2 || c2.Lost {
			t.Fatalf("claim after Release = attempt %d lost %v, want 2 false", c2.Attempt, c2.Lost)
		}
	})

	t.Run("SetStatusMessage", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		want := c.Record.Clone()

		steps := []struct {
			now     time.Duration
			message string
			updated time.Duration // the UpdatedAt it leaves
		}{
			{time.Second, "step 1 of 3", time.Second},
			{2 * time.Second, "step 1 of 3", time.Second}, // unchanged: no update
			{3 * time.Second, "step 2 of 3", 3 * time.Second},
			{4 * time.Second, "", 4 * time.Second},
		}
		for _, st := range steps {
			err := s.SetStatusMessage(context.Background(), store.StatusMessageParams{FenceParams: fence(c, at(st.now)), StatusMessage: st.message})
			if err != nil {
				t.Fatalf("SetStatusMessage(%q): %v", st.message, err)
			}
			want.StatusMessage, want.UpdatedAt = st.message, at(st.updated)
			wantStored(t, s, want)
		}
	})
}
