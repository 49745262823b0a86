package sqlite

import (
	"reflect"
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
//   - Nor does a Get whose read of a task overlapped another Get's read of
//     it that ended first (reads counts both edges of every read, and
//     reading keeps, per task, when the last one ended). A write of
//     another process between the two reads, which no window shows, makes
//     their order unknown: the one that began first may have read the
//     newer record, or the older one may end last. Such a fill keeps the
//     cached record only if it is the same, and otherwise drops it, so
//     that a Get never returns an older record than one returned before
//     it began.
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
	reads     uint64             // counts the beginnings and ends of the reads of Gets that missed
	reading   map[string]reading // the tasks being read by Gets that missed
	checkedAt time.Time          // when the last foreign-write check began
	gets      uint64             // Gets since the last check
	hits      uint64             // for tests
}

// reading is the reads of one task by Gets that missed, while any runs.
type reading struct {
	n     int    // reads running
	ended uint64 // cache.reads when the last one ended; 0 if none has
}

// A ticket is what a Get that missed passes to fill: the write sequence
// and the count of reads when its read began.
type ticket struct{ seq, read uint64 }

func newCache(max int, maxBytes int64, maxStale time.Duration) *cache {
	return &cache{
		maxStale: maxStale, now: time.Now,
		probe:   make(chan struct{}, 1),
		recs:    sqlstore.NewRecords(max, maxBytes),
		reading: make(map[string]reading),
	}
}

// get returns a copy of the cached task with the id, if it is cached, of
// principal (any principal if principal is nil), and the last check for
// foreign writes is recent enough. Otherwise it returns the ticket that
// the caller must pass to fill once it has read the database, whatever the
// read gave, and may ask the commit loop for a check. Another principal's
// task is a miss, not copied, so that it costs what an unknown id costs.
func (c *cache) get(id string, principal *string) (*task.Record, ticket) {
	if c == nil {
		return nil, ticket{}
	}
	c.mu.Lock()
	c.gets++
	fresh := c.now().Sub(c.checkedAt) <= c.maxStale
	if fresh {
		if r := c.recs.Get(id); r != nil && (principal == nil || r.Principal == *principal) {
			c.hits++
			c.mu.Unlock()
			return r.Clone(), ticket{}
		}
	}
	c.reads++
	t := ticket{seq: c.seq, read: c.reads}
	rd := c.reading[id]
	rd.n++
	c.reading[id] = rd
	c.mu.Unlock()
	if !fresh {
		select {
		case c.probe <- struct{}{}:
		default: // a check is already asked for
		}
	}
	return nil, t
}

// fill ends the read of the task with the id by a Get that missed with the
// ticket t, and caches r, the record it read (nil if it found none or
// failed), unless a write window was open or has opened since t, or
// another read of the task ended since t: then r and the cached record, if
// any, may be in either order, and the cached one is dropped unless it is
// the same as r.
func (c *cache) fill(t ticket, id string, r *task.Record) {
	if c == nil {
		return
	}
	var size int64
	if r != nil {
		size = r.Size()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rd := c.reading[id]
	overlapped := rd.ended > t.read
	c.reads++
	if rd.n--; rd.n == 0 {
		delete(c.reading, id)
	} else {
		rd.ended = c.reads
		c.reading[id] = rd
	}
	switch {
	case t.seq%2 != 0 || t.seq != c.seq:
		// A write window dropped what this read may have raced.
	case overlapped:
		if old := c.recs.Get(id); old != nil && (r == nil || !reflect.DeepEqual(old, r)) {
			c.recs.Remove(id)
		}
	case r != nil && c.recs.Fits(size):
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
