package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testHeartbeatMany checks the batched heartbeat: every lease still held
// is extended and reports its flags, every other one is reported lost and
// left alone, and fencing stays per task: the old attempt of a task that
// was claimed again is still refused its late writes.
func testHeartbeatMany(t *testing.T, f factory) {
	ctx := context.Background()
	s := f.open(t)
	if sts, err := s.HeartbeatMany(ctx, store.HeartbeatManyParams{Now: at(0), LeaseExpiresAt: at(lease)}); err != nil || len(sts) != 0 {
		t.Fatalf("HeartbeatMany of no lease = %v, %v; want nothing", sts, err)
	}

	// Each task is created just before it is claimed, so that it is the
	// only claimable one.
	create(t, s, newTask("running"))
	running := claim(t, s, "w1", at(0))
	create(t, s, newTask("waiting"))
	waiting := claim(t, s, "w1", at(0))
	requestInput(t, s, waiting, at(0), raws("a", reqA))
	create(t, s, newTask("cancelling"))
	cancelling := claim(t, s, "w1", at(0))
	if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "cancelling", Principal: alice, Now: at(time.Second)}); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	create(t, s, newTask("answered"))
	answered := claim(t, s, "w1", at(0))
	requestInput(t, s, answered, at(0), raws("a", reqA))
	answer(t, s, "answered", at(time.Second), raws("a", respA))
	create(t, s, newTask("finished"))
	finished := claim(t, s, "w1", at(0))
	if err := s.Finish(ctx, store.FinishParams{FenceParams: fence(finished, at(time.Second)), Status: task.Completed, Result: []byte(`{}`)}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	// reclaimed's short lease runs out and w2 claims it: w1's attempt is
	// lost.
	create(t, s, newTask("reclaimed"))
	cs, err := s.Claim(ctx, store.ClaimParams{Owner: "w1", Now: at(0), LeaseExpiresAt: at(time.Second)})
	if err != nil || len(cs) != 1 {
		t.Fatalf("Claim = %d tasks, %v; want 1", len(cs), err)
	}
	old := cs[0]
	reclaimed := claim(t, s, "w2", at(2*time.Second))
	before := get(t, s, "reclaimed")

	now := at(lease - time.Second)
	if reclaimed.Attempt != old.Attempt+1 {
		t.Fatalf("reclaim attempt %d after %d", reclaimed.Attempt, old.Attempt)
	}
	leases := []store.Lease{
		{ID: "running", Attempt: running.Attempt},
		{ID: "waiting", Attempt: waiting.Attempt},
		{ID: "cancelling", Attempt: cancelling.Attempt},
		{ID: "answered", Attempt: answered.Attempt},
		{ID: "finished", Attempt: finished.Attempt},
		{ID: "reclaimed", Attempt: old.Attempt},
		{ID: "reclaimed", Attempt: reclaimed.Attempt}, // the same task at its current attempt
		{ID: "unknown", Attempt: 1},
	}
	sts, err := s.HeartbeatMany(ctx, store.HeartbeatManyParams{Leases: leases, Now: now, LeaseExpiresAt: now.Add(lease)})
	if err != nil {
		t.Fatalf("HeartbeatMany: %v", err)
	}
	want := []store.LeaseState{
		{Answered: true},
		{},
		{CancelRequested: true, Answered: true},
		{Answered: true},
		{Lost: true},
		{Lost: true},
		{Answered: true},
		{Lost: true},
	}
	if len(sts) != len(want) {
		t.Fatalf("HeartbeatMany returned %d states for %d leases", len(sts), len(leases))
	}
	for i, l := range leases {
		if sts[i] != want[i] {
			t.Errorf("%s: state %+v, want %+v", l.ID, sts[i], want[i])
		}
	}
	for _, id := range []string{"running", "waiting", "cancelling", "answered"} {
		if r := get(t, s, id); !r.LeaseExpiresAt.Equal(now.Add(lease)) || r.LeaseOwner != "w1" {
			t.Errorf("%s: lease %s until %v, want w1's extended to %v", id, r.LeaseOwner, r.LeaseExpiresAt, now.Add(lease))
		}
	}
	// The lost leases changed nothing: w2 keeps reclaimed, its lease
	// extended by the heartbeat of its own attempt, and w1's late writes
	// to it are still refused.
	before.LeaseExpiresAt = now.Add(lease)
	wantStored(t, s, before)
	err = s.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: fence(old, now), StatusMessage: "late"})
	wantErr(t, "late SetStatusMessage of the lost attempt", err, store.ErrLeaseLost)
	err = s.Finish(ctx, store.FinishParams{FenceParams: fence(old, now), Status: task.Completed, Result: []byte(`{}`)})
	wantErr(t, "late Finish of the lost attempt", err, store.ErrLeaseLost)
	wantStored(t, s, before)
}
