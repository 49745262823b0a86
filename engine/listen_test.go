package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// hub is the shared notification channel of a listenStore, like a
// Postgres LISTEN/NOTIFY channel that every process subscribes to.
type hub struct {
	mu        sync.Mutex
	subs      map[chan store.Event]struct{}
	failFirst atomic.Int32 // so many first Listen calls fail
}

func (h *hub) publish(ev store.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- ev:
		default: // events may be lost
		}
	}
}

// listenStore is one process's connection to a store that implements
// store.Listener through a hub.
type listenStore struct {
	store.Store
	hub *hub
}

var _ store.Listener = listenStore{}

func (s listenStore) Listen(ctx context.Context) (<-chan store.Event, error) {
	if s.hub.failFirst.Add(-1) >= 0 {
		return nil, errStoreDown
	}
	c := make(chan store.Event, 16)
	s.hub.mu.Lock()
	if s.hub.subs == nil {
		s.hub.subs = map[chan store.Event]struct{}{}
	}
	s.hub.subs[c] = struct{}{}
	s.hub.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.hub.mu.Lock()
		delete(s.hub.subs, c)
		s.hub.mu.Unlock()
		close(c)
	}()
	return c, nil
}

func (s listenStore) Create(ctx context.Context, r *task.Record) error {
	err := s.Store.Create(ctx, r)
	if err == nil {
		s.hub.publish(store.Event{Kind: store.EventCreated, TaskID: r.ID})
	}
	return err
}

func (s listenStore) Answer(ctx context.Context, p store.AnswerParams) ([]string, error) {
	acc, err := s.Store.Answer(ctx, p)
	if err == nil && len(acc) > 0 {
		s.hub.publish(store.Event{Kind: store.EventAnswered, TaskID: p.ID})
	}
	return acc, err
}

func (s listenStore) RequestCancel(ctx context.Context, p store.CancelParams) (*task.Record, error) {
	r, err := s.Store.RequestCancel(ctx, p)
	if err == nil && r.CancelRequested && !r.Status.Terminal() {
		s.hub.publish(store.Event{Kind: store.EventCancelled, TaskID: p.ID})
	}
	return r, err
}

// TestListenerFastPath: with a store that announces changes, work created,
// answered or cancelled on one engine reaches the engine that runs it at
// once, not at its next poll or heartbeat.
func TestListenerFastPath(t *testing.T) {
	tests := []struct {
		name      string
		failFirst int32 // Listen calls that fail before one succeeds
	}{
		{"listening", 0},
		{"listening after a failed subscribe", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				mem := newMem()
				h := &hub{}
				h.failFirst.Store(tt.failFirst)
				p := &cancelProbe{}
				tools := []*Tool{
					{Name: "ask", Handler: askAB},
					{Name: "block", Handler: p.handle},
				}
				// The worker polls hourly: anything faster is the listener.
				startEngine(t, listenStore{mem, h}, tools, Options{Owner: "worker", ClaimInterval: time.Hour})
				front := startEngine(t, listenStore{mem, h}, tools, Options{Owner: "front", Workers: -1})
				time.Sleep(time.Duration(tt.failFirst) * time.Hour) // the worker re-subscribes after ClaimInterval
				synctest.Wait()

				start := time.Now()
				asker := create(t, front, "ask")
				blocker := create(t, front, "block")
				synctest.Wait()
				if got := wantStatus(t, mem, asker.ID, task.InputRequired); got.LeaseOwner != "worker" {
					t.Fatalf("ask: owner %q", got.LeaseOwner)
				}
				if got := get(t, mem, blocker.ID); got.LeaseOwner != "worker" {
					t.Fatalf("block: owner %q", got.LeaseOwner)
				}

				update(t, front, asker.ID, map[string]string{"a": accept("A"), "b": accept("B")})
				synctest.Wait()
				wantStatus(t, mem, asker.ID, task.Completed)

				if err := front.Cancel(bg, principal, blocker.ID); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				wantCancelled(t, get(t, mem, blocker.ID))
				if !errors.Is(p.cause, errCancelRequested) {
					t.Errorf("cause = %v", p.cause)
				}
				if took := time.Since(start); took != 0 {
					t.Errorf("claim, answer and cancel took %v across engines, want 0 with a listener", took)
				}
			})
		})
	}
}

// TestNoWorkers: an engine with Workers < 0 creates, reads, answers and
// cancels tasks and sweeps, but runs no handler.
func TestNoWorkers(t *testing.T) {
	bubble(t, func(t *testing.T) {
		st := newMem()
		var runs atomic.Int32
		h := func(context.Context, *Run) (json.RawMessage, error) { runs.Add(1); return json.RawMessage(`{}`), nil }
		e := startEngine(t, st, []*Tool{{Name: "job", TTL: time.Hour, Handler: h}}, Options{Workers: -1})
		r := create(t, e, "job")
		keep := create(t, e, "job")
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		if runs.Load() != 0 || get(t, st, r.ID).Attempt != 0 {
			t.Fatalf("an engine without workers ran a handler")
		}
		if err := e.Cancel(bg, principal, keep.ID); err != nil {
			t.Fatal(err)
		}
		wantCancelled(t, get(t, st, keep.ID))
		time.Sleep(30*time.Minute + DefaultSweepInterval)
		synctest.Wait()
		if _, err := st.Get(bg, r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an engine without workers did not sweep: %v", err)
		}
	})
}
