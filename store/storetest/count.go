package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testCount checks CountActive, for stores that implement store.Counter:
// only live tasks count, and queued ones are those no worker holds and
// that do not wait for input.
func testCount(t *testing.T, f factory) {
	s := f.open(t)
	c, ok := s.(store.Counter)
	if !ok {
		t.Skip("the store does not implement store.Counter")
	}
	// Each task is created just before it is claimed, so that it is the
	// only claimable one.
	create(t, s, newTask("asks"))
	requestInput(t, s, claim(t, s, "w1", at(time.Second)), at(time.Second), raws("a", reqA))
	create(t, s, newTask("suspended"))
	suspended := claim(t, s, "w1", at(time.Second))
	requestInput(t, s, suspended, at(time.Second), raws("a", reqA))
	if err := s.Release(context.Background(), fence(suspended, at(time.Second))); err != nil {
		t.Fatalf("Release: %v", err)
	}
	create(t, s, newTask("done"))
	done := claim(t, s, "w1", at(time.Second))
	if err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(done, at(2*time.Second)), Status: task.Completed, Result: []byte(`{}`)}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	create(t, s, newTask("held"))
	claim(t, s, "w1", at(time.Second))
	expired := newTask("expired")
	expired.TTL = time.Second
	create(t, s, expired, newTask("queued"))
	// Tasks waiting for input, stored as they are: one whose worker's
	// lease ran out at 2 s, and two whose TTL is over by 3 s.
	waiting := func(id string, owner string, lease time.Time, ttl time.Duration) *task.Record {
		r := newTask(id)
		r.Status, r.InputRequests, r.TTL = task.InputRequired, raws("a", reqA), ttl
		r.LeaseOwner, r.LeaseExpiresAt, r.Attempt = owner, lease, 1
		return r
	}
	create(t, s, waiting("lostwaiting", "w2", at(2*time.Second), 0),
		waiting("expiredwaiting", "w2", at(time.Minute), time.Second),
		waiting("expiredsuspended", "", time.Time{}, time.Second))
	// At 3 s: expired's TTL is over; asks and held hold leases; suspended
	// waits for its answer, not for a worker; lostwaiting waits for a
	// worker to take it again.
	got, err := c.CountActive(context.Background(), at(3*time.Second))
	if err != nil {
		t.Fatalf("CountActive: %v", err)
	}
	want := store.ActiveCounts{Working: 2, InputRequired: 3, Queued: 2}
	if got != want {
		t.Errorf("CountActive = %+v, want %+v", got, want)
	}
}
