package sqlstore

import "github.com/mcptasks/mcptasks/task"

// Records is the bounded map of task records behind the read caches of the
// SQL stores, which keep it coherent with the database, each in its own way,
// under their own lock: Records is not safe for concurrent use.
//
// It is bounded twice: by the number of records and by their bytes (as
// [task.Record.Size] counts them). A Put that would pass either bound
// evicts records at random first; a record larger than a sixteenth of the
// byte bound is not kept at all, so that one large task cannot empty the
// map of small ones. The records it holds are never changed: Put stores
// the record it is given, and callers copy what they take out.
type Records struct {
	max      int   // most records kept
	maxBytes int64 // most bytes kept
	m        map[string]*task.Record
	bytes    int64 // the Size of the records in m
}

// NewRecords returns an empty map of at most max records and maxBytes
// bytes.
func NewRecords(max int, maxBytes int64) *Records {
	return &Records{max: max, maxBytes: maxBytes, m: make(map[string]*task.Record)}
}

// Get returns the record with the id, or nil. The caller must not change
// it.
func (c *Records) Get(id string) *task.Record { return c.m[id] }

// Len returns the number of records held.
func (c *Records) Len() int { return len(c.m) }

// Bytes returns the Size of the records held.
func (c *Records) Bytes() int64 { return c.bytes }

// Each calls f for every record held.
func (c *Records) Each(f func(*task.Record)) {
	for _, r := range c.m {
		f(r)
	}
}

// Fits reports whether a record of size bytes may be kept.
func (c *Records) Fits(size int64) bool { return size <= c.maxBytes/16 }

// Put keeps r, of size bytes (its Size), in place of any record with its
// id, after evicting records at random until it fits both bounds. A
// record that does not fit (see Fits) is not kept. r must not change
// afterwards.
func (c *Records) Put(r *task.Record, size int64) {
	if !c.Fits(size) {
		return
	}
	c.Remove(r.ID)
	for id := range c.m { // random order: random eviction
		if len(c.m) < c.max && c.bytes+size <= c.maxBytes {
			break
		}
		c.Remove(id)
	}
	c.m[r.ID] = r
	c.bytes += size
}

// Remove forgets the record with the id.
func (c *Records) Remove(id string) {
	if r, ok := c.m[id]; ok {
		c.bytes -= r.Size()
		delete(c.m, id)
	}
}

// Clear forgets every record.
func (c *Records) Clear() {
	clear(c.m)
	c.bytes = 0
}
