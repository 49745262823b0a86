package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testIdempotencyKey checks that a principal's idempotency key names one
// live task: a second Create with it writes nothing and returns the first
// task, also when the two race; until the first task expires, whatever its
// status; other principals and creates without a key are not affected.
func testIdempotencyKey(t *testing.T, f factory) {
	const key = "k-1"
	keyed := func(id, principal string, createdAt time.Time) *task.Record {
		r := newTask(id)
		r.Principal = principal
		r.IdempotencyKey = key
		r.CreatedAt, r.UpdatedAt = createdAt, createdAt
		r.TTL = time.Hour
		return r
	}
	// wantDuplicate creates r and wants a *DuplicateError naming want, and
	// r not stored.
	wantDuplicate := func(t *testing.T, s store.Store, r, want *task.Record) {
		t.Helper()
		err := s.Create(context.Background(), r)
		var de *store.DuplicateError
		if !errors.As(err, &de) {
			t.Fatalf("Create(%s) with the key of %s: error = %v, want a *store.DuplicateError", r.ID, want.ID, err)
		}
		wantRecord(t, "DuplicateError.Task", de.Task, want)
		if _, err := s.Get(context.Background(), r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s) after its create was refused: error = %v, want ErrNotFound", r.ID, err)
		}
	}

	t.Run("SecondCreate", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		first := keyed("t1", alice, t0)
		create(t, s, first)
		wantStored(t, s, first)
		second := keyed("t2", alice, at(time.Minute))
		second.Args = []byte(`{"other":true}`) // the store compares keys, not arguments
		wantDuplicate(t, s, second, first)
	})

	t.Run("WholeTTL", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		first := keyed("t1", alice, t0)
		create(t, s, first)
		c := claim(t, s, "w1", at(time.Second))
		if err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, at(2*time.Second)), Status: task.Completed}); err != nil {
			t.Fatal(err)
		}
		done := get(t, s, "t1")
		// Terminal, one millisecond before its TTL ends: it still holds the key.
		wantDuplicate(t, s, keyed("t2", alice, at(time.Hour-time.Millisecond)), done)
	})

	t.Run("AfterExpiry", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, keyed("t1", alice, t0))
		// At exactly CreatedAt+TTL the first task has expired: the key
		// makes a new task, which then holds it.
		second := keyed("t2", alice, at(time.Hour))
		create(t, s, second)
		wantStored(t, s, second)
		wantDuplicate(t, s, keyed("t3", alice, at(time.Hour+time.Millisecond)), second)
		// And once the first is deleted, nothing changes for the second.
		if _, err := s.DeleteExpired(context.Background(), at(time.Hour), 0); err != nil {
			t.Fatal(err)
		}
		wantDuplicate(t, s, keyed("t4", alice, at(time.Hour+2*time.Millisecond)), second)
	})

	t.Run("PerPrincipal", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		a := keyed("t1", alice, t0)
		b := keyed("t2", bob, t0)
		create(t, s, a, b)
		wantStored(t, s, a)
		wantStored(t, s, b)
	})

	t.Run("NoKey", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		a, b := newTask("t1"), newTask("t2")
		create(t, s, a, b)
		wantStored(t, s, a)
		wantStored(t, s, b)
	})

	t.Run("DuplicateID", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		err := s.Create(context.Background(), keyed("t1", alice, t0))
		wantErr(t, "Create(duplicate id, new key)", err, store.ErrExists)
	})

	t.Run("Race", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				errs[i] = s.Create(context.Background(), keyed(fmt.Sprintf("t%d", i), alice, t0))
			})
		}
		wg.Wait()
		var winners []int
		for i, err := range errs {
			if err == nil {
				winners = append(winners, i)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("%d of %d racing creates with one key succeeded, want 1: %v", len(winners), n, errs)
		}
		won := fmt.Sprintf("t%d", winners[0])
		for i, err := range errs {
			var de *store.DuplicateError
			if i != winners[0] && (!errors.As(err, &de) || de.Task.ID != won) {
				t.Errorf("create t%d: error = %v, want a *store.DuplicateError naming %s", i, err, won)
			}
		}
	})
}
