package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// BenchmarkGetFor measures GetFor of 1,000 tasks of alice, read round-robin
// after alice has read each once (so that a store with a read cache holds
// them): by alice ("own", the poll of a task), by bob ("foreign") and of
// ids that do not exist ("unknown"). The last two must cost the same: a
// caller must not learn from the time of a not-found answer that the task
// exists. "foreign-by-get" is how a foreign read was made before GetFor
// (Get, then a comparison of the principal), for comparison. newStore
// returns a fresh, empty store.
func BenchmarkGetFor(b *testing.B, newStore func(b *testing.B) store.Store) {
	ctx := context.Background()
	s := newStore(b)
	b.Cleanup(func() { _ = s.Close() })
	const n = 1000
	ids, unknown := make([]string, n), make([]string, n)
	for i := range ids {
		r := newTask(task.NewID())
		r.Args = []byte(`{"label":"a label of a hundred bytes, more or less, as the arguments of a small tool call are"}`)
		ids[i], unknown[i] = r.ID, task.NewID()
		if err := s.Create(ctx, r); err != nil {
			b.Fatal(err)
		}
		if _, err := s.GetFor(ctx, r.ID, alice); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name      string
		ids       []string
		principal string
		want      error
	}{
		{"own", ids, alice, nil},
		{"foreign", ids, bob, store.ErrNotFound},
		{"unknown", unknown, bob, store.ErrNotFound},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.GetFor(ctx, bc.ids[i%n], bc.principal); !errors.Is(err, bc.want) {
					b.Fatalf("GetFor: %v, want %v", err, bc.want)
				}
				i++
			}
		})
	}
	b.Run("foreign-by-get", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if r, err := s.Get(ctx, ids[i%n]); err != nil || r.Principal == bob {
				b.Fatalf("Get: %v", err)
			}
			i++
		}
	})
}
