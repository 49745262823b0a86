package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// TestTTL: a task is retrievable for its whole TTL, counted from createdAt,
// then answers ErrNotFound like an unknown task, and SweepOnce deletes it.
func TestTTL(t *testing.T) {
	const ttl = 10 * time.Minute
	tests := []struct {
		name    string
		handler Handler
		want    task.Status // while alive
	}{
		{"completed", returns(`{}`), task.Completed},
		{"waiting for input", func(ctx context.Context, run *Run) (json.RawMessage, error) {
			_, err := run.RequestInput(ctx, asks("k"), "")
			return nil, err
		}, task.InputRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				// The sweep loop runs at Start and then daily: the test
				// calls SweepOnce itself.
				e := startEngine(t, st, []*Tool{{Name: "job", TTL: ttl, Handler: tt.handler}}, Options{SweepInterval: 24 * time.Hour})
				r := create(t, e, "job")
				synctest.Wait()
				expires := r.CreatedAt.Add(ttl)

				time.Sleep(time.Until(expires) - time.Millisecond)
				synctest.Wait()
				if got, err := e.Get(bg, principal, r.ID); err != nil || got.Status != tt.want {
					t.Fatalf("1 ms before the TTL ends: Get = %v, %v; want %s", got, err, tt.want)
				}
				if n, err := e.SweepOnce(bg); n != 0 || err != nil {
					t.Errorf("SweepOnce before expiry = %d, %v", n, err)
				}

				time.Sleep(time.Millisecond)
				synctest.Wait()
				if _, err := e.Get(bg, principal, r.ID); err != ErrNotFound {
					t.Errorf("at createdAt+TTL: Get = %v, want ErrNotFound", err)
				}
				if _, err := e.Update(bg, principal, r.ID, map[string]json.RawMessage{"k": json.RawMessage(accept("x"))}, nil); err != ErrNotFound {
					t.Errorf("at createdAt+TTL: Update = %v, want ErrNotFound", err)
				}
				if err := e.Cancel(bg, principal, r.ID); err != ErrNotFound {
					t.Errorf("at createdAt+TTL: Cancel = %v, want ErrNotFound", err)
				}
				if _, err := st.Get(bg, r.ID); err != nil {
					t.Fatalf("the store dropped the task before any sweep: %v", err)
				}

				if n, err := e.SweepOnce(bg); n != 1 || err != nil {
					t.Errorf("SweepOnce = %d, %v; want 1", n, err)
				}
				if _, err := st.Get(bg, r.ID); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("after the sweep: store.Get = %v, want ErrNotFound", err)
				}
				if n, err := e.SweepOnce(bg); n != 0 || err != nil {
					t.Errorf("second SweepOnce = %d, %v; want 0", n, err)
				}
			})
		})
	}
}

func TestTTLNoLimit(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		// Slow loops, so that ten years of fake time are few ticks.
		e := startEngine(t, st, []*Tool{{Name: "job", TTL: -1, Handler: returns(`{}`)}},
			Options{ClaimInterval: 24 * time.Hour, SweepInterval: 24 * time.Hour})
		r := create(t, e, "job")
		time.Sleep(10 * 365 * 24 * time.Hour)
		synctest.Wait()
		if got, err := e.Get(bg, principal, r.ID); err != nil || got.Status != task.Completed {
			t.Errorf("after ten years: Get = %v, %v", got, err)
		}
		if n, err := e.SweepOnce(bg); n != 0 || err != nil {
			t.Errorf("SweepOnce = %d, %v; want 0", n, err)
		}
	})
}

// TestSweepLoop: a started engine deletes expired tasks on its own, within
// one SweepInterval of their expiry.
func TestSweepLoop(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		e := startEngine(t, st, []*Tool{{Name: "job", TTL: 5 * time.Minute, Handler: returns(`{}`)}}, Options{})
		r := create(t, e, "job")
		time.Sleep(5*time.Minute + DefaultSweepInterval)
		synctest.Wait()
		if _, err := st.Get(bg, r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("one sweep interval after expiry: store.Get = %v, want ErrNotFound", err)
		}
	})
}

// TestSweepOnceBatches: more expired tasks than one batch are all deleted.
func TestSweepOnceBatches(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		e := newEngine(t, st, []*Tool{{Name: "job", TTL: time.Minute, Handler: returns(`{}`)}}, Options{})
		const n = 2*DefaultSweepBatch + 1
		for range n {
			create(t, e, "job")
		}
		keep := create(t, newEngine(t, st, []*Tool{{Name: "job", TTL: time.Hour, Handler: returns(`{}`)}}, Options{}), "job")
		time.Sleep(time.Minute)
		if got, err := e.SweepOnce(bg); got != n || err != nil {
			t.Errorf("SweepOnce = %d, %v; want %d", got, err, n)
		}
		if _, err := st.Get(bg, keep.ID); err != nil {
			t.Errorf("a live task was swept: %v", err)
		}
	})
}
