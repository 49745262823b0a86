package postgres

import (
	"sync"

	"github.com/mcptasks/mcptasks/store/changefeed"
	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/task"
)

// Defaults of the read cache ([Store.UseReadCache]).
const (
	DefaultReadCacheSize  = 10000
	DefaultReadCacheBytes = 64 << 20
)

// readCache keeps recently read tasks so that GetFor, the read of every
// tasks/get, can answer without a round trip to the database. A change
// feed keeps it true (design/push.md):
//
//   - Every change a poll could see is announced by id through
//     LISTEN/NOTIFY, by every replica; the feed drops the task here as its
//     announcement arrives. A hit may therefore miss a change committed on
//     another replica for as long as the announcement takes to arrive.
//   - Writes of this process drop the task after their commit, so a GetFor
//     after a write of this process never sees the old record.
//   - A GetFor that missed fills the cache only if nothing was dropped
//     since it began its read (gen), so a read that raced a change never
//     caches the older record.
//   - While LISTEN is down the cache is off and empty; a resync (LISTEN
//     back, lost announcements, the feed's periodic backstop) empties it.
//   - Not-found is never cached: a task created on another replica is
//     found at once (durable create).
//
// It is bounded by the number of records and by their bytes, as
// [sqlstore.Records] is.
type readCache struct {
	mu   sync.Mutex
	on   bool   // the feed is up
	gen  uint64 // moves at every drop
	recs *sqlstore.Records
	hits uint64 // for tests
}

// UseReadCache answers GetFor from a cache of at most size records and
// maxBytes bytes (the defaults if zero), which the feed f keeps true: f
// must be the change feed of this store (changefeed.New(s, …)), and runs
// for as long as the store is used. The cache is off until f is up, and
// whenever f is down. Call it before the store is used. Every store that
// writes the database must announce its writes (no DisableNotify): the
// cache does not see the others' until the backstop resync.
func (s *Store) UseReadCache(f *changefeed.Feed, size int, maxBytes int64) {
	if size <= 0 {
		size = DefaultReadCacheSize
	}
	if maxBytes <= 0 {
		maxBytes = DefaultReadCacheBytes
	}
	c := &readCache{recs: sqlstore.NewRecords(size, maxBytes)}
	s.cache = c
	f.Watch(c.change)
}

// change applies a change of the feed.
func (c *readCache) change(ch changefeed.Change) {
	switch {
	case ch.TaskID != "":
		c.drop(ch.TaskID)
	case ch.Down:
		c.reset(false)
	case ch.Resync:
		c.reset(true)
	}
}

// get returns a copy of the principal's cached task with the id, or, on a
// miss, the generation to pass to fill. Another principal's task is a
// miss, not copied, so that it costs what an unknown id costs.
func (c *readCache) get(id, principal string) (*task.Record, uint64) {
	if c == nil {
		return nil, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.recs.Get(id); r != nil && r.Principal == principal {
		c.hits++
		return r.Clone(), 0
	}
	return nil, c.gen
}

// fill caches a copy of r, read by a GetFor that began at generation gen,
// unless the cache is off or something was dropped since.
func (c *readCache) fill(r *task.Record, gen uint64) {
	if c == nil {
		return
	}
	size := r.Size()
	if !c.recs.Fits(size) {
		return
	}
	r = r.Clone() // outside the lock, which every GetFor takes
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on && c.gen == gen {
		c.recs.Put(r, size)
	}
}

// drop forgets the task with the id.
func (c *readCache) drop(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.recs.Remove(id)
}

// reset empties the cache and turns it on or off.
func (c *readCache) reset(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.on = on
	c.recs.Clear()
}
