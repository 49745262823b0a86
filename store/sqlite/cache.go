package sqlite

import (
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/task"
)

// cache keeps recently read tasks so that Get, the path of every poll, can
// answer without a read transaction. It is coherent with the database:
//
//   - Writes of this process all go through the commit loop, which opens a
//     write window (beginWrite) before its transaction and closes it
//     (endWrite) after the commit or rollback. Each write drops the tasks
//     it touches from the cache inside the window, before its commit, so a
//     Get after the commit cannot find the old record.
//   - A Get that missed fills the cache only if no write window was open or
//     opened while it read (a sequence lock: seq is odd inside a window and
//     moves at each edge), so a read that raced a write never caches its
//     possibly older record.
//   - Writes of other processes are found by SQLite's data_version of the
//     write connection, which the commit loop reads every maxStale/2 while
//     Gets come, and when asked by a Get whose last check is older than
//     maxStale; a change empties the cache. A Get is answered from the
//     cache only within maxStale of a check, so a write of another process
//     is seen at most maxStale late.
//
// It is bounded by the number of records and by their bytes, as
// [sqlstore.Records] is.
type cache struct {
	maxStale time.Duration // longest a hit may trail a check for foreign writes
	now      func() time.Time
	probe    chan struct{} // asks the commit loop for a check; buffered, 1

	mu        sync.Mutex
	seq       uint64 // odd inside a write window
	recs      *sqlstore.Records
	checkedAt time.Time // when the last foreign-write check began
	gets      uint64    // Gets since the last check
	hits      uint64    // for tests
}

func newCache(max int, maxBytes int64, maxStale time.Duration) *cache {
	return &cache{
		maxStale: maxStale, now: time.Now,
		probe: make(chan struct{}, 1),
		recs:  sqlstore.NewRecords(max, maxBytes),
	}
}

// get returns a copy of the cached task with the id, if it is cached, of
// principal (any principal if principal is nil), and the last check for
// foreign writes is recent enough. Otherwise it returns the sequence
// number the caller passes to fill after reading the database, and may ask
// the commit loop for a check. Another principal's task is a miss, not
// copied, so that it costs what an unknown id costs.
func (c *cache) get(id string, principal *string) (r *task.Record, seq uint64) {
	if c == nil {
		return nil, 0
	}
	c.mu.Lock()
	c.gets++
	fresh := c.now().Sub(c.checkedAt) <= c.maxStale
	if fresh {
		if r = c.recs.Get(id); r != nil && principal != nil && r.Principal != *principal {
			r = nil
		}
		if r != nil {
			c.hits++
		}
	}
	seq = c.seq
	c.mu.Unlock()
	if r != nil {
		return r.Clone(), seq
	}
	if !fresh {
		select {
		case c.probe <- struct{}{}:
		default: // a check is already asked for
		}
	}
	return nil, seq
}

// fill caches r, read from the database by a Get that saw seq before its
// read, unless a write window was open or has opened since.
func (c *cache) fill(seq uint64, r *task.Record) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq%2 != 0 || seq != c.seq {
		return
	}
	if size := r.Size(); c.recs.Fits(size) {
		c.recs.Put(r.Clone(), size)
	}
}

// beginWrite opens a write window.
func (c *cache) beginWrite() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.seq++
	c.mu.Unlock()
}

// drop forgets the task with the id; writes call it inside their window.
func (c *cache) drop(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.recs.Remove(id)
	c.mu.Unlock()
}

// dropAll forgets every task; writes call it inside their window.
func (c *cache) dropAll() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.recs.Clear()
	c.mu.Unlock()
}

// endWrite closes the write window.
func (c *cache) endWrite() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.seq++
	c.mu.Unlock()
}

// checked records a check for foreign writes that began at t and, if it
// found some, empties the cache. It reports whether there were Gets since
// the previous check.
func (c *cache) checked(t time.Time, foreign bool) (used bool) {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	used, c.gets = c.gets > 0, 0
	if foreign {
		c.recs.Clear()
		c.seq += 2 // fills from reads that began before the check fail
	}
	if t.After(c.checkedAt) {
		c.checkedAt = t
	}
	return used
}

// probeC is the channel on which Gets ask for a check; nil (never ready)
// without a cache.
func (c *cache) probeC() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.probe
}
