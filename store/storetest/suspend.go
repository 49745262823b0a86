package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testSuspend checks suspended tasks: a task that waits for input and
// whose worker released it is held by nobody and claimed by nobody until
// its answers arrive; then any worker claims it, as a new attempt that is
// not a loss, and its stored answers are returned to the re-run.
func testSuspend(t *testing.T, f factory) {
	ctx := context.Background()
	s := f.open(t)
	create(t, s, newTask("t1"))
	c := claim(t, s, "w1", at(time.Second))
	requestInput(t, s, c, at(time.Second), raws("a", reqA, "b", reqB))
	if err := s.Release(ctx, fence(c, at(2*time.Second))); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r := get(t, s, "t1")
	if r.Status != task.InputRequired || r.LeaseOwner != "" || !r.LeaseExpiresAt.IsZero() || len(r.InputRequests) != 2 || !store.Suspended(r) {
		t.Fatalf("after Release: status %s, owner %q, lease %v, %d requests; want a suspended task asking 2 keys",
			r.Status, r.LeaseOwner, r.LeaseExpiresAt, len(r.InputRequests))
	}
	suspended := r.Clone()

	// Not claimable, now nor much later.
	for _, now := range []time.Time{at(2 * time.Second), at(time.Hour)} {
		if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: now, LeaseExpiresAt: now.Add(lease)}); len(ids) != 0 {
			t.Fatalf("Claim at %v took %v from a suspended task", now, ids)
		}
	}
	// The attempt that suspended it is fenced off.
	_, err := heartbeat(ctx, s, fence(c, at(3*time.Second)), at(time.Minute))
	wantErr(t, "Heartbeat after Release", err, store.ErrLeaseLost)
	_, err = s.RequestInput(ctx, store.RequestInputParams{FenceParams: fence(c, at(3*time.Second)), Requests: raws("a", reqA)})
	wantErr(t, "RequestInput after Release", err, store.ErrLeaseLost)
	// Another principal cannot answer it.
	_, err = s.Answer(ctx, store.AnswerParams{ID: "t1", Principal: bob, Now: at(4 * time.Second), Responses: raws("a", respA, "b", respB)})
	wantErr(t, "Answer by bob", err, store.ErrNotFound)
	wantStored(t, s, suspended)

	// A partial answer leaves it suspended.
	wantKeys(t, "Answer(a)", answer(t, s, "t1", at(5*time.Second), raws("a", respA)), "a")
	if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(6 * time.Second), LeaseExpiresAt: at(time.Minute)}); len(ids) != 0 {
		t.Fatalf("Claim took %v from a task with a key outstanding", ids)
	}
	// The last answer makes it claimable, by any worker: a new attempt,
	// not a loss, which gets the stored answers.
	wantKeys(t, "Answer(b)", answer(t, s, "t1", at(7*time.Second), raws("b", respB)), "b")
	if r := get(t, s, "t1"); r.Status != task.Working || store.Suspended(r) {
		t.Fatalf("after the last answer: status %s, suspended %v", r.Status, store.Suspended(r))
	}
	c2 := claim(t, s, "w2", at(8*time.Second))
	if c2.Attempt != 2 || c2.Lost || c2.Losses != 0 {
		t.Errorf("claim after the answer: attempt %d, lost %v, losses %d; want 2, false, 0", c2.Attempt, c2.Lost, c2.Losses)
	}
	wantRaws(t, "re-run RequestInput", requestInput(t, s, c2, at(9*time.Second), raws("a", reqA, "b", reqB)), raws("a", respA, "b", respB))
	if r := get(t, s, "t1"); r.Status != task.Working || r.LeaseOwner != "w2" {
		t.Errorf("after the re-run's RequestInput: status %s, owner %q; want working, w2", r.Status, r.LeaseOwner)
	}

	// A cancel requested of the holder before it suspends the task
	// cancels it: nobody would claim it to act on the request.
	create(t, s, newTask("t3"))
	c = claim(t, s, "w1", at(10*time.Second))
	requestInput(t, s, c, at(10*time.Second), raws("a", reqA))
	if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t3", Principal: alice, Now: at(10 * time.Second), StatusMessage: "Cancelled by alice"}); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	if err := s.Release(ctx, fence(c, at(11*time.Second))); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if r := get(t, s, "t3"); r.Status != task.Cancelled || r.StatusMessage != store.CancelledByRequest || r.LeaseOwner != "" || len(r.InputRequests) != 0 {
		t.Errorf("released with a cancel requested: status %s (%q), owner %q, %d requests; want cancelled",
			r.Status, r.StatusMessage, r.LeaseOwner, len(r.InputRequests))
	}

	// A released task that does not wait for input is claimable at once.
	create(t, s, newTask("t2"))
	c = claim(t, s, "w1", at(10*time.Second))
	if err := s.Release(ctx, fence(c, at(10*time.Second))); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(11 * time.Second), LeaseExpiresAt: at(time.Minute)}); len(ids) != 1 || ids[0] != "t2" {
		t.Errorf("Claim after releasing a working task = %v, want [t2]", ids)
	}
}

// testSuspendOnRequest checks RequestInput with Suspend: the write that
// stores the requests suspends the task when a key has no answer, and
// leaves the lease alone when every key has one.
func testSuspendOnRequest(t *testing.T, f factory) {
	ctx := context.Background()
	s := f.open(t)
	create(t, s, newTask("t1"))
	c := claim(t, s, "w1", at(time.Second))
	answers, err := s.RequestInput(ctx, store.RequestInputParams{FenceParams: fence(c, at(time.Second)), Requests: raws("a", reqA, "b", reqB), Suspend: true})
	if err != nil || len(answers) != 0 {
		t.Fatalf("RequestInput(Suspend) = %v, %v; want no answers", answers, err)
	}
	r := get(t, s, "t1")
	if !store.Suspended(r) || len(r.InputRequests) != 2 {
		t.Fatalf("after RequestInput(Suspend): status %s, owner %q, %d requests; want a suspended task asking 2 keys",
			r.Status, r.LeaseOwner, len(r.InputRequests))
	}
	wantHistory(t, r.History, []task.HistoryEvent{
		{Seq: 1, At: at(time.Second), Kind: task.HistoryClaimed, Attempt: 1, Worker: "w1"},
		{Seq: 2, At: at(time.Second), Kind: task.HistoryInputRequested, Attempt: 1, Keys: []string{"a", "b"}},
		{Seq: 3, At: at(time.Second), Kind: task.HistoryReleased, Attempt: 1, Worker: "w1"},
	})
	if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(time.Hour), LeaseExpiresAt: at(time.Hour + lease)}); len(ids) != 0 {
		t.Fatalf("Claim took %v from a suspended task", ids)
	}
	_, err = heartbeat(ctx, s, fence(c, at(2*time.Second)), at(time.Minute))
	wantErr(t, "Heartbeat after RequestInput(Suspend)", err, store.ErrLeaseLost)

	// Answered, it is claimable; the re-run's RequestInput(Suspend) gets
	// every answer and keeps its lease.
	wantKeys(t, "Answer", answer(t, s, "t1", at(3*time.Second), raws("a", respA, "b", respB)), "a", "b")
	c2 := claim(t, s, "w2", at(4*time.Second))
	answers, err = s.RequestInput(ctx, store.RequestInputParams{FenceParams: fence(c2, at(5*time.Second)), Requests: raws("a", reqA, "b", reqB), Suspend: true})
	if err != nil {
		t.Fatalf("re-run RequestInput(Suspend): %v", err)
	}
	wantRaws(t, "re-run RequestInput(Suspend)", answers, raws("a", respA, "b", respB))
	if r := get(t, s, "t1"); r.Status != task.Working || r.LeaseOwner != "w2" {
		t.Errorf("after the re-run's RequestInput(Suspend): status %s, owner %q; want working, w2", r.Status, r.LeaseOwner)
	}

	// A cancel requested before it cancels the task, as Release does.
	create(t, s, newTask("t2"))
	c = claim(t, s, "w1", at(6*time.Second))
	if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t2", Principal: alice, Now: at(6 * time.Second), StatusMessage: "Cancelled by alice"}); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	if _, err := s.RequestInput(ctx, store.RequestInputParams{FenceParams: fence(c, at(7*time.Second)), Requests: raws("a", reqA), Suspend: true}); err != nil {
		t.Fatalf("RequestInput(Suspend) with a cancel requested: %v", err)
	}
	if r := get(t, s, "t2"); r.Status != task.Cancelled || r.StatusMessage != store.CancelledByRequest || r.LeaseOwner != "" {
		t.Errorf("suspended with a cancel requested: status %s (%q), owner %q; want cancelled", r.Status, r.StatusMessage, r.LeaseOwner)
	}
}
