// Package changefeed is the one change feed of a store in a process: it
// listens to the store's announcements of changed task ids
// ([store.Listener]: Postgres LISTEN/NOTIFY, an in-process broadcast for
// memory and sqlite), fans them out to subscribers by task id, says when the
// announcements are down, and tells every subscriber to read again what it
// holds (a resync) when announcements may have been lost and periodically,
// as the backstop.
package changefeed

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/store"
)

// Defaults of [Options].
const (
	// DefaultInterval is how often subscribers resync while the store's
	// announcements are down, and how soon Listen is tried again.
	DefaultInterval = 2 * time.Second
	// DefaultBackstop is how often subscribers resync while announcements
	// are up: the bound on how late an undetected lost announcement is
	// made good.
	DefaultBackstop = 30 * time.Second
)

// maxPending bounds the ids a subscriber of every task keeps between two
// Takes; past it, the subscriber is told to resync instead.
const maxPending = 1024

// Options configure a [Feed]. The zero value is usable.
type Options struct {
	// Interval is the resync period while announcements are down, and
	// the wait before listening again (DefaultInterval if zero).
	Interval time.Duration
	// Backstop is the resync period while announcements are up
	// (DefaultBackstop if zero).
	Backstop time.Duration
	// Logger receives a warning when announcements go down and a note
	// when they are back (discarded if nil).
	Logger *slog.Logger
}

// Change is what a watcher ([Feed.Watch]) is told.
type Change struct {
	// TaskID names a task that may have changed; empty for Down and
	// Resync.
	TaskID string
	// Down: the store's announcements stopped; until a Resync without
	// Down nothing is announced.
	Down bool
	// Resync: any task may have changed; read again what you hold. With
	// Down (the periodic resyncs while announcements are down), what you
	// read again may change unannounced.
	Resync bool
}

// Feed is the change feed of one store. Build it with [New], register
// watchers, then call [Feed.Run]. Its methods are safe for concurrent use.
type Feed struct {
	l    store.Listener // nil: the store announces nothing
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	up       bool
	why      string // why the feed is down, as last logged
	byID     map[string]map[*Sub]struct{}
	every    map[*Sub]struct{}
	watchers []func(Change)
}

// New returns the feed of st. A store that is not a [store.Listener]
// announces nothing: its feed is never up, and subscribers resync every
// Interval.
func New(st store.Store, opts *Options) *Feed {
	f := &Feed{byID: map[string]map[*Sub]struct{}{}, every: map[*Sub]struct{}{}}
	if opts != nil {
		f.opts = *opts
	}
	if f.opts.Interval <= 0 {
		f.opts.Interval = DefaultInterval
	}
	if f.opts.Backstop <= 0 {
		f.opts.Backstop = DefaultBackstop
	}
	f.log = f.opts.Logger
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if l, ok := st.(store.Listener); ok {
		f.l = l
	}
	return f
}

// Up reports whether the store's announcements are up: a change is then
// announced to subscribers as soon as the store tells of it.
func (f *Feed) Up() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.up
}

// Watch registers fn, which Run calls for every change, in order, from
// its own goroutine: fn must be fast and must not call the feed.
func (f *Feed) Watch(fn func(Change)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchers = append(f.watchers, fn)
}

// Run listens to the store until ctx is done, listening again after a
// failure, and sends the resyncs.
func (f *Feed) Run(ctx context.Context) {
	var events <-chan store.Event
	retry := time.NewTimer(0)
	defer retry.Stop()
	if f.l == nil {
		retry.Stop()
	}
	tick := time.NewTicker(f.opts.Interval)
	defer tick.Stop()
	var sinceResync time.Duration
	for {
		select {
		case <-ctx.Done():
			f.setUp(false, "")
			return
		case <-retry.C:
			ch, err := f.l.Listen(ctx)
			if err != nil {
				f.setUp(false, err.Error())
				retry.Reset(f.opts.Interval)
				continue
			}
			events = ch
			f.setUp(true, "")
			sinceResync = 0
		case ev, ok := <-events:
			if !ok {
				events = nil
				if ctx.Err() == nil {
					f.setUp(false, "the store ended the subscription")
					retry.Reset(f.opts.Interval)
				}
				continue
			}
			switch ev.Kind {
			case store.EventDown:
				f.setUp(false, "the store's LISTEN connection dropped")
			case store.EventResync:
				f.setUp(true, "")
				f.resync()
				sinceResync = 0
			default:
				f.changed(ev.TaskID)
			}
		case <-tick.C:
			sinceResync += f.opts.Interval
			if !f.Up() || sinceResync >= f.opts.Backstop {
				f.resync()
				sinceResync = 0
			}
		}
	}
}

// setUp records whether announcements are up. Going up resyncs everyone
// (announcements may have been missed before); going down tells the
// watchers and logs why.
func (f *Feed) setUp(up bool, why string) {
	f.mu.Lock()
	was, logged := f.up, f.why
	f.up = up
	f.why = why
	f.mu.Unlock()
	switch {
	case up && !was:
		if f.l != nil {
			f.log.Info("changefeed: the store's change announcements are up")
		}
		f.resync()
	case !up && was:
		if why != "" {
			f.log.Warn("changefeed: the store's change announcements are down; subscribers re-read every interval and read caches are off until they are back",
				"why", why, "interval", f.opts.Interval)
		}
		f.tell(Change{Down: true})
	case !up && why != "" && why != logged: // once per cause, not at every retry
		f.log.Warn("changefeed: cannot listen for the store's change announcements; trying again", "err", why, "interval", f.opts.Interval)
	}
}

// tell calls the watchers.
func (f *Feed) tell(c Change) {
	f.mu.Lock()
	ws := f.watchers
	f.mu.Unlock()
	for _, fn := range ws {
		fn(c)
	}
}

// changed announces a change of task id.
func (f *Feed) changed(id string) {
	f.tell(Change{TaskID: id})
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.byID[id] {
		s.add(id)
	}
	for s := range f.every {
		s.add(id)
	}
}

// resync tells every watcher and subscriber to read again, and the
// watchers whether announcements are down still.
func (f *Feed) resync() {
	f.tell(Change{Resync: true, Down: !f.Up()})
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, subs := range f.byID {
		for s := range subs {
			s.setAll()
		}
	}
	for s := range f.every {
		s.setAll()
	}
}

// Subscribe returns a subscription to the changes of the tasks ids, or of
// every task if ids is nil. Close it when done.
func (f *Feed) Subscribe(ids []string) *Sub {
	s := &Sub{f: f, c: make(chan struct{}, 1), ids: ids, pending: map[string]struct{}{}}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ids == nil {
		f.every[s] = struct{}{}
		return s
	}
	for _, id := range ids {
		m := f.byID[id]
		if m == nil {
			m = map[*Sub]struct{}{}
			f.byID[id] = m
		}
		m[s] = struct{}{}
	}
	return s
}

// Sub is a subscription of a [Feed]. Its channel C receives a value when
// there is news; Take then says what changed. News coalesces: a slow
// reader misses none of it, only how many times it came.
type Sub struct {
	f   *Feed
	c   chan struct{}
	ids []string

	mu      sync.Mutex
	pending map[string]struct{}
	all     bool
}

// C returns the channel that receives a value when there is news.
func (s *Sub) C() <-chan struct{} { return s.c }

// Take returns the news since the last Take: the ids of the tasks that
// may have changed, or all = true when every task the subscriber holds
// may have changed (a resync).
func (s *Sub) Take() (ids []string, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all = s.all
	if !all {
		for id := range s.pending {
			ids = append(ids, id)
		}
	}
	clear(s.pending)
	s.all = false
	return ids, all
}

// Close ends the subscription.
func (s *Sub) Close() {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.ids == nil {
		delete(f.every, s)
		return
	}
	for _, id := range s.ids {
		if m := f.byID[id]; m != nil {
			delete(m, s)
			if len(m) == 0 {
				delete(f.byID, id)
			}
		}
	}
}

func (s *Sub) add(id string) {
	s.mu.Lock()
	if !s.all {
		if len(s.pending) >= maxPending {
			s.all = true
		} else {
			s.pending[id] = struct{}{}
		}
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Sub) setAll() {
	s.mu.Lock()
	s.all = true
	s.mu.Unlock()
	s.signal()
}

func (s *Sub) signal() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}
