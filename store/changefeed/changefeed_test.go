package changefeed_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/changefeed"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// fakeListener is a store.Listener whose events the test sends, and whose
// Listen fails while fail is set.
type fakeListener struct {
	memory.Store // only to be a store.Store
	mu           sync.Mutex
	fail         bool
	ch           chan store.Event
	listens      int
}

func (l *fakeListener) Listen(ctx context.Context) (<-chan store.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listens++
	if l.fail {
		return nil, context.DeadlineExceeded
	}
	l.ch = make(chan store.Event, 16)
	return l.ch, nil
}

func (l *fakeListener) send(ev store.Event) {
	l.mu.Lock()
	ch := l.ch
	l.mu.Unlock()
	ch <- ev
}

func newFeed(t *testing.T, l store.Store) (*changefeed.Feed, func() changefeed.Change) {
	t.Helper()
	f := changefeed.New(l, &changefeed.Options{Interval: time.Second, Backstop: 10 * time.Second})
	var mu sync.Mutex
	var seen []changefeed.Change
	f.Watch(func(c changefeed.Change) { mu.Lock(); seen = append(seen, c); mu.Unlock() })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	last := func() changefeed.Change {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return changefeed.Change{}
		}
		return seen[len(seen)-1]
	}
	return f, last
}

func take(t *testing.T, s *changefeed.Sub) ([]string, bool) {
	t.Helper()
	select {
	case <-s.C():
	default:
		return nil, false
	}
	ids, all := s.Take()
	slices.Sort(ids)
	return ids, all
}

// TestFeed_ByID checks that a subscriber hears of the tasks it names, and
// a subscriber of every task of all of them; news coalesces.
func TestFeed_ByID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &fakeListener{}
		f, _ := newFeed(t, l)
		synctest.Wait()
		if !f.Up() {
			t.Fatal("the feed is not up after a successful Listen")
		}
		a := f.Subscribe([]string{"a"})
		defer a.Close()
		every := f.Subscribe(nil)
		defer every.Close()
		synctest.Wait()
		take(t, a) // the resync of going up may have raced Subscribe
		take(t, every)

		l.send(store.Event{Kind: store.EventUpdated, TaskID: "a"})
		l.send(store.Event{Kind: store.EventUpdated, TaskID: "b"})
		l.send(store.Event{Kind: store.EventUpdated, TaskID: "a"})
		synctest.Wait()
		if ids, all := take(t, a); all || !slices.Equal(ids, []string{"a"}) {
			t.Errorf("subscriber of a: got %v all=%v, want [a]", ids, all)
		}
		if ids, all := take(t, every); all || !slices.Equal(ids, []string{"a", "b"}) {
			t.Errorf("subscriber of every task: got %v all=%v, want [a b]", ids, all)
		}
	})
}

// TestFeed_DownAndBack checks what subscribers and watchers hear when the
// store's announcements drop and come back, and the periodic resyncs
// meanwhile.
func TestFeed_DownAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &fakeListener{}
		f, last := newFeed(t, l)
		synctest.Wait()
		a := f.Subscribe([]string{"a"})
		defer a.Close()
		synctest.Wait()
		take(t, a)

		l.send(store.Event{Kind: store.EventDown})
		synctest.Wait()
		if f.Up() {
			t.Fatal("the feed is up after EventDown")
		}
		if got := last(); !got.Down {
			t.Errorf("watcher: got %+v, want Down", got)
		}
		// While down, subscribers resync every Interval.
		time.Sleep(time.Second)
		synctest.Wait()
		if _, all := take(t, a); !all {
			t.Error("no resync one Interval after going down")
		}
		// The watchers hear it as a resync while down (before, as one that
		// turned the Postgres read cache on with no announcement to
		// invalidate it).
		if got := last(); !got.Resync || !got.Down {
			t.Errorf("watcher, one Interval after going down: got %+v, want Resync and Down", got)
		}
		l.send(store.Event{Kind: store.EventResync})
		synctest.Wait()
		if !f.Up() {
			t.Fatal("the feed is not up after EventResync")
		}
		if got := last(); !got.Resync || got.Down {
			t.Errorf("watcher, announcements back: got %+v, want Resync, not Down", got)
		}
		if _, all := take(t, a); !all {
			t.Error("no resync when the announcements came back")
		}
		// While up, only the backstop resyncs.
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if _, all := take(t, a); all {
			t.Error("a resync while up before the backstop")
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if _, all := take(t, a); !all {
			t.Error("no backstop resync")
		}
	})
}

// TestFeed_ListenFails checks that a feed whose Listen fails is down and
// tries again every Interval.
func TestFeed_ListenFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &fakeListener{fail: true}
		f, last := newFeed(t, l)
		synctest.Wait()
		if f.Up() {
			t.Fatal("up although Listen failed")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := last(); !got.Down {
			t.Errorf("watcher, one Interval into a failing Listen: got %+v, want Down", got)
		}
		l.mu.Lock()
		l.fail = false
		l.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		if !f.Up() {
			t.Fatal("not up one Interval after Listen works again")
		}
	})
}

// TestFeed_Memory checks the in-process announcements of the memory store
// end to end.
func TestFeed_Memory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		f, _ := newFeed(t, st)
		synctest.Wait()
		s := f.Subscribe([]string{"t1"})
		defer s.Close()
		synctest.Wait()
		take(t, s)
		now := time.Now().UTC().Truncate(time.Millisecond)
		if err := st.Create(t.Context(), newRecord("t1", now)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if ids, _ := take(t, s); !slices.Equal(ids, []string{"t1"}) {
			t.Errorf("after Create: got %v, want [t1]", ids)
		}
	})
}

func newRecord(id string, now time.Time) *task.Record {
	return &task.Record{ID: id, Principal: "p", Tool: "tool", Status: task.Working, CreatedAt: now, UpdatedAt: now, TTL: time.Hour}
}
