package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// The checks and benchmarks below are for the backends that keep tasks in
// a database (sqlite, postgres), beyond the contract suite of [Run]: each
// backend's tests call them with stores of its own, and add what only it
// has (its migrations table, its query plans).

// Reopen creates and claims a task, closes the store, opens one again on
// the same database with open, and checks that the task comes back with
// its lease and arguments. It returns the reopened store, closed when t
// ends, for the backend's own checks.
func Reopen(t *testing.T, open func(t *testing.T) store.Store) store.Store {
	t.Helper()
	ctx := context.Background()
	s := open(t)
	r := newTask("t1")
	if err := s.Create(ctx, r); err != nil {
		t.Fatalf("Create: %v", err)
	}
	cs, err := s.Claim(ctx, store.ClaimParams{Owner: "w1", Now: t0, LeaseExpiresAt: at(time.Minute)})
	if err != nil || len(cs) != 1 {
		t.Fatalf("Claim = %d tasks, %v; want 1, nil", len(cs), err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = open(t)
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.Get(ctx, "t1")
	if err != nil {
		t.Fatalf("Get after reopening: %v", err)
	}
	if got.Attempt != 1 || got.LeaseOwner != "w1" || !got.LeaseExpiresAt.Equal(at(time.Minute)) || string(got.Args) != string(r.Args) {
		t.Errorf("after reopening: %+v", got)
	}
	return s
}

// ContextCancelled checks that every call with a done ctx fails with
// context.Canceled.
func ContextCancelled(t *testing.T, s store.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Create(ctx, newTask("t1")); !errors.Is(err, context.Canceled) {
		t.Errorf("Create = %v, want context.Canceled", err)
	}
	if _, err := s.Get(ctx, "t1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get = %v, want context.Canceled", err)
	}
	if _, err := s.Claim(ctx, store.ClaimParams{Owner: "w", Now: t0}); !errors.Is(err, context.Canceled) {
		t.Errorf("Claim = %v, want context.Canceled", err)
	}
	if _, err := s.Answer(ctx, store.AnswerParams{ID: "t1", Principal: alice, Now: t0}); !errors.Is(err, context.Canceled) {
		t.Errorf("Answer = %v, want context.Canceled", err)
	}
}

// InvalidJSON checks that Create refuses a record that each of bad makes
// invalid for the backend (JSON values that do not parse) with an error
// other than ErrExists, and that RequestInput with a request that does not
// parse fails, is not taken for a lost lease, and changes nothing.
func InvalidJSON(t *testing.T, s store.Store, bad ...func(r *task.Record)) {
	t.Helper()
	ctx := context.Background()
	for i, b := range bad {
		r := newTask("t1")
		b(r)
		if err := s.Create(ctx, r); err == nil || errors.Is(err, store.ErrExists) {
			t.Fatalf("Create with invalid JSON (%d) = %v, want an encoding error", i, err)
		}
	}
	if err := s.Create(ctx, newTask("t1")); err != nil {
		t.Fatalf("Create: %v", err)
	}
	cs, err := s.Claim(ctx, store.ClaimParams{Owner: "w1", Now: t0, LeaseExpiresAt: at(time.Minute)})
	if err != nil || len(cs) != 1 {
		t.Fatalf("Claim = %d, %v", len(cs), err)
	}
	_, err = s.RequestInput(ctx, store.RequestInputParams{
		FenceParams: store.FenceParams{ID: "t1", Attempt: 1, Now: t0},
		Requests:    map[string]json.RawMessage{"q": json.RawMessage(`{"method":`)},
	})
	if err == nil || errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("RequestInput with invalid JSON = %v, want an encoding error", err)
	}
	got, err := s.Get(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != task.Working || len(got.InputRequests) != 0 {
		t.Errorf("after a failed RequestInput: status %s, requests %v", got.Status, got.InputRequests)
	}
}

// BenchmarkGet measures Get of 1,000 tasks read round-robin from
// parallelism goroutines per CPU.
func BenchmarkGet(b *testing.B, s store.Store, parallelism int) {
	ctx := context.Background()
	const n = 1000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = task.NewID()
		if err := s.Create(ctx, newTask(ids[i])); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, ids[next.Add(1)%n]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCreate measures durable creates from parallelism goroutines per
// CPU, of tasks with ids from task.NewID, and returns their ids (for a
// benchmark on a kept database to delete them). The tasks are alice's,
// created at one time; with spread, they belong to 100 principals and are
// created now, as the indexes of a live store see them.
func BenchmarkCreate(b *testing.B, s store.Store, parallelism int, spread bool) []string {
	ctx := context.Background()
	var (
		mu  sync.Mutex
		ids []string
		p   atomic.Uint64
	)
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []string
		for pb.Next() {
			r := newTask(task.NewID())
			if spread {
				r.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
				r.UpdatedAt = r.CreatedAt
				r.Principal = fmt.Sprintf("p%02d", p.Add(1)%100)
			}
			if err := s.Create(ctx, r); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, r.ID)
		}
		mu.Lock()
		ids = append(ids, mine...)
		mu.Unlock()
	})
	return ids
}
