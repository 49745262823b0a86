package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/store/changefeed"
)

// Feed tells the live pages when tasks may have changed: each live page
// then reads what it shows again, and sends it to the browser if it
// differs from what it sent last. Feed is the seam between the console and
// the source of changes: a re-read every interval ([PollFeed]), or the
// store's change feed and a slower re-read ([NewStoreFeed]).
type Feed interface {
	// Subscribe returns a channel that receives a value when tasks may
	// have changed, and a function that ends the subscription. Values
	// coalesce: a reader that is slow misses none of the news, only how
	// many times it came.
	Subscribe() (changed <-chan struct{}, stop func())
}

// PollFeed is a Feed that says "maybe" every interval: a live page then
// shows a change at most the interval (and the time of one read) late.
type PollFeed time.Duration

// Subscribe implements Feed.
func (p PollFeed) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Duration(p))
		defer t.Stop()
		for {
			select {
			case <-t.C:
				notify(ch)
			case <-done:
				return
			}
		}
	}()
	return ch, sync.OnceFunc(func() { close(done) })
}

// notify sends on ch unless a value is waiting there already.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// StoreFeed is the Feed of a store's change feed ([changefeed.Feed]): a
// signal at once for each task the store announces as changed and at each
// of the change feed's resyncs, and a PollFeed for what stores do not
// announce (claims and leases, which the queue and worker views show).
type StoreFeed struct {
	feed *changefeed.Feed
	poll PollFeed
}

// NewStoreFeed returns the Feed of the change feed f, which the caller
// runs, polling besides every interval.
func NewStoreFeed(f *changefeed.Feed, interval time.Duration) *StoreFeed {
	return &StoreFeed{feed: f, poll: PollFeed(interval)}
}

// Subscribe implements Feed.
func (f *StoreFeed) Subscribe() (<-chan struct{}, func()) {
	ticks, stopPoll := f.poll.Subscribe()
	sub := f.feed.Subscribe(nil)
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ticks:
				notify(ch)
			case <-sub.C():
				sub.Take() // the pages read everything again: the ids do not matter
				notify(ch)
			case <-done:
				return
			}
		}
	}()
	return ch, sync.OnceFunc(func() {
		close(done)
		sub.Close()
		stopPoll()
	})
}

// takeLive takes a live page's place, of MaxLive in all and of half of it
// for the account (but the local one), or reports false.
func (c *Console) takeLive(a Account) bool {
	c.liveMu.Lock()
	defer c.liveMu.Unlock()
	if c.live >= c.opts.MaxLive || a != localAccount && c.liveOf[a] >= c.liveEach {
		return false
	}
	c.live++
	c.liveOf[a]++
	return true
}

// giveLive gives back the place takeLive took.
func (c *Console) giveLive(a Account) {
	c.liveMu.Lock()
	defer c.liveMu.Unlock()
	c.live--
	if c.liveOf[a]--; c.liveOf[a] == 0 {
		delete(c.liveOf, a)
	}
}

// keepAlive is how often an idle live stream sends a comment, so that
// proxies keep it open.
const keepAlive = 15 * time.Second

// stream serves a live page: an event stream that sends the page's content,
// as render makes it, whenever the feed says tasks may have changed and
// the content differs from what it sent last. render returns done when
// nothing will change any more (the task is gone): the stream then sends
// an "end" event, which tells the browser to stop. A session that ends
// while its stream is open gets a "signedout" event at the next change or
// keep-alive, and nothing more.
func (c *Console) stream(w http.ResponseWriter, r *http.Request, se *session, render func(ctx context.Context) (b []byte, done bool, err error)) {
	if !c.takeLive(se.account) {
		w.Header().Set("Retry-After", "10")
		http.Error(w, "Too many live pages are open; this one will try again.", http.StatusServiceUnavailable)
		return
	}
	defer c.giveLive(se.account)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	changed, stop := c.opts.Feed.Subscribe()
	defer stop()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	var last []byte
	failed := false
	// signedOut ends the stream of a session that ended since it opened
	// (sign-out, expiry, eviction): the browser goes to the sign-in page.
	signedOut := func() bool {
		if c.sessions.get(se.id) != nil {
			return false
		}
		fmt.Fprint(w, "event: signedout\ndata: \n\n")
		rc.Flush()
		return true
	}
	send := func() bool {
		if signedOut() {
			return false
		}
		b, done, err := render(r.Context())
		if err != nil {
			if !failed && r.Context().Err() == nil {
				c.log.Warn("console: live page could not read the store", "operator", se.account.Name, "path", r.URL.Path, "err", err)
			}
			failed = true
			return true
		}
		failed = false
		if done {
			fmt.Fprint(w, "event: end\ndata: \n\n")
			rc.Flush()
			return false
		}
		if bytes.Equal(b, last) {
			return true
		}
		last = b
		fmt.Fprint(w, "event: update\n")
		// A carriage return ends an event stream's line too: as a line
		// break, it would cut a "data:" line (task text may hold one).
		for _, line := range bytes.Split(bytes.ReplaceAll(b, []byte("\r"), []byte("\n")), []byte("\n")) {
			fmt.Fprintf(w, "data: %s\n", line)
		}
		fmt.Fprint(w, "\n")
		return rc.Flush() == nil
	}
	if !send() {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-changed:
			if !send() {
				return
			}
		case <-tick.C:
			if signedOut() {
				return
			}
			fmt.Fprint(w, ": keep-alive\n\n")
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// liveList streams the list page of r's query.
func (c *Console) liveList(w http.ResponseWriter, r *http.Request, se *session) {
	c.stream(w, r, se, func(context.Context) ([]byte, bool, error) {
		b, _, err := c.list(r)
		if err != nil {
			return nil, false, err
		}
		out, err := c.fragment("list", c.data(se, "Tasks", "tasks", b))
		return out, false, err
	})
}

// liveDetail streams the page of the task of r's path, until it is gone.
func (c *Console) liveDetail(w http.ResponseWriter, r *http.Request, se *session) {
	c.stream(w, r, se, func(context.Context) ([]byte, bool, error) {
		b, err := c.detail(r, se)
		if err != nil || b == nil {
			return nil, b == nil && err == nil, err
		}
		out, err := c.fragment("detail", c.data(se, "Task "+b.T.ID, "tasks", b))
		return out, false, err
	})
}

// liveOverview streams the overview.
func (c *Console) liveOverview(w http.ResponseWriter, r *http.Request, se *session) {
	c.stream(w, r, se, func(ctx context.Context) ([]byte, bool, error) {
		b, err := c.overview.get(ctx, c.opts.Now().UTC(), c.readOverview)
		if err != nil {
			return nil, false, err
		}
		out, err := c.fragment("overview", c.data(se, "Overview", "overview", b))
		return out, false, err
	})
}
