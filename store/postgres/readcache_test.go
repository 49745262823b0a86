package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/changefeed"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/store/storetest"
)

// cached returns s with a read cache kept true by a change feed that runs
// until t ends, once the feed is up.
func cached(t testing.TB, s *Store) *changefeed.Feed {
	t.Helper()
	f := changefeed.New(s, &changefeed.Options{Interval: 100 * time.Millisecond})
	s.UseReadCache(f, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the feed to be up", f.Up)
	return f
}

// waitFor polls cond against a deadline (the database delivers
// notifications in its own time).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", eventWait, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *readCache) hitCount() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// isOn reports whether the cache is on (the feed's last change to it said
// up).
func (c *readCache) isOn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.on
}

// TestStore_ReadCache runs the contract suite on a store whose GetFor has
// a read cache.
func TestStore_ReadCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), pgtest.DSN(t), &Options{NotifyChannel: testChannel()})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		cached(t, s)
		return s
	})
}

// TestReadCache_Replicas checks the cache of replica A against writes of
// replica B: a hit after the first read; B's change is seen once its
// announcement arrived; A's own writes are seen at once; another
// principal's read misses; while LISTEN is down the cache is off.
func TestReadCache_Replicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, channel := twoStores(t)
	feed := cached(t, a)

	if err := b.Create(ctx, newTask("t1")); err != nil {
		t.Fatal(err)
	}
	// The first reads may miss until the create's own announcement has
	// come by; then reads hit.
	waitFor(t, "a hit", func() bool {
		before := a.cache.hitCount()
		if _, err := a.GetFor(ctx, "t1", "alice"); err != nil {
			t.Fatal(err)
		}
		return a.cache.hitCount() > before
	})
	if _, err := a.GetFor(ctx, "t1", "bob"); err == nil {
		t.Fatal("bob read alice's task from the cache")
	}

	// B's write reaches A through the feed.
	cs, err := b.Claim(ctx, store.ClaimParams{Owner: "w", Now: t0, LeaseExpiresAt: t0.Add(time.Minute)})
	if err != nil || len(cs) != 1 {
		t.Fatalf("Claim = %v, %v", cs, err)
	}
	if err := b.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: store.FenceParams{ID: "t1", Attempt: 1, Now: t0.Add(time.Second)}, StatusMessage: "half way"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "A to see B's status message", func() bool {
		r, err := a.GetFor(ctx, "t1", "alice")
		return err == nil && r.StatusMessage == "half way"
	})

	// A's own write is seen at once.
	if _, err := a.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: "alice", Now: t0.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if r, err := a.GetFor(ctx, "t1", "alice"); err != nil || !r.CancelRequested {
		t.Fatalf("after A's cancel request, A reads %+v, %v", r, err)
	}

	// LISTEN down: the cache is off.
	var ok bool
	pid := listenerPID(t, b, channel, 0)
	if err := b.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend = %v, %v", ok, err)
	}
	// The feed's Down reaches the cache through its watcher, a moment
	// after feed.Up turns false: the cache is off from then (or the feed
	// may be back already).
	waitFor(t, "the cache to turn off", func() bool { return !a.cache.isOn() || listenerPID(t, b, channel, pid) != pid })
	if !a.cache.isOn() {
		before := a.cache.hitCount()
		for range 3 {
			if _, err := a.GetFor(ctx, "t1", "alice"); err != nil {
				t.Fatal(err)
			}
		}
		if !a.cache.isOn() && a.cache.hitCount() != before {
			t.Error("the cache answered while LISTEN was down")
		}
	}
	waitFor(t, "the feed to be up again", feed.Up)
	for range 2 {
		if _, err := a.GetFor(ctx, "t1", "alice"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "hits again", func() bool {
		before := a.cache.hitCount()
		_, _ = a.GetFor(ctx, "t1", "alice")
		return a.cache.hitCount() > before
	})
}

// TestReadCache_Unit checks the cache's own rules: a read that raced a
// drop is not cached, nothing is cached while off, and the bounds hold.
func TestReadCache_Unit(t *testing.T) {
	c := &readCache{recs: sqlstore.NewRecords(2, 1<<20)}
	r := newTask("t1")
	_, gen := c.get("t1", "alice")
	c.fill(r, gen)
	if got, _ := c.get("t1", "alice"); got != nil {
		t.Fatal("cached while off")
	}
	c.reset(true)
	_, gen = c.get("t1", "alice")
	c.drop("t1") // a change announced while the read ran
	c.fill(r, gen)
	if got, _ := c.get("t1", "alice"); got != nil {
		t.Fatal("a read that raced a drop was cached")
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		_, gen := c.get(id, "alice")
		c.fill(newTask(id), gen)
	}
	if n := c.recs.Len(); n != 2 {
		t.Fatalf("%d records cached, want at most 2", n)
	}
	if got, _ := c.get("t3", "alice"); got == nil {
		t.Fatal("the last fill was not cached")
	}
	got, _ := c.get("t3", "alice")
	got.StatusMessage = "changed"
	if again, _ := c.get("t3", "alice"); again.StatusMessage == "changed" {
		t.Fatal("get returned the cached record, not a copy")
	}
	c.change(changefeed.Change{Down: true})
	if got, _ := c.get("t3", "alice"); got != nil || c.on {
		t.Fatal("the cache answers after the feed went down")
	}
}

// BenchmarkGetFor_ReadCache is BenchmarkGetFor with the read cache that
// serve turns on.
func BenchmarkGetFor_ReadCache(b *testing.B) {
	storetest.BenchmarkGetFor(b, func(b *testing.B) store.Store {
		s := open(b, pgtest.DSN(b), &Options{NotifyChannel: testChannel()})
		cached(b, s)
		return s
	})
}
