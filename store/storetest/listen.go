package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testListen checks, for a store that is a [store.Listener], that every
// write a poll could see is announced with its task's id: Create,
// SetStatusMessage, RequestInput, Answer, Finish, and RequestCancel both
// of a held task and of one cancelled at once. Postgres announces through
// the database, after the commit: the suite waits for each event.
func testListen(t *testing.T, f factory) {
	t.Parallel()
	s := f.open(t)
	l, ok := s.(store.Listener)
	if !ok {
		t.Skip("the store announces nothing")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := l.Listen(ctx)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	expect := func(what, id string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("%s: the event channel closed", what)
				}
				if ev.TaskID == id {
					return
				}
			case <-timeout:
				t.Fatalf("%s: no event for %s within 10 s", what, id)
			}
		}
	}
	create(t, s, newTask("t1"))
	expect("Create", "t1")
	c := claim(t, s, "w1", at(time.Second))
	if err := s.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: fence(c, at(2*time.Second)), StatusMessage: "half way"}); err != nil {
		t.Fatalf("SetStatusMessage: %v", err)
	}
	expect("SetStatusMessage", "t1")
	requestInput(t, s, c, at(3*time.Second), raws("a", reqA))
	expect("RequestInput", "t1")
	if _, err := s.Answer(ctx, store.AnswerParams{ID: "t1", Principal: alice, Now: at(4 * time.Second), Responses: raws("a", json.RawMessage(`{"action":"accept"}`))}); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	expect("Answer", "t1")
	if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: alice, Now: at(5 * time.Second)}); err != nil {
		t.Fatalf("RequestCancel of a held task: %v", err)
	}
	expect("RequestCancel of a held task", "t1")
	if err := s.Finish(ctx, store.FinishParams{FenceParams: fence(c, at(6*time.Second)), Status: task.Cancelled}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	expect("Finish", "t1")
	t2 := newTask("t2")
	create(t, s, t2)
	expect("Create", "t2")
	if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t2", Principal: alice, Now: at(7 * time.Second)}); err != nil {
		t.Fatalf("RequestCancel of a queued task: %v", err)
	}
	expect("RequestCancel of a queued task", "t2")
}
