package console

import (
	"bufio"
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store/changefeed"
	"github.com/mcptasks/mcptasks/task"
)

// manualFeed is a Feed that says "changed" when the test pokes it.
type manualFeed struct {
	mu   sync.Mutex
	subs map[chan struct{}]bool
}

func (f *manualFeed) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[chan struct{}]bool{}
	}
	f.subs[ch] = true
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}

func (f *manualFeed) poke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		notify(ch)
	}
}

// liveClient signs in to the console served by srv.
func liveClient(t *testing.T, srv *httptest.Server, token string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.PostForm(srv.URL+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return c
}

// events reads the events of a stream: name and data, one at a time.
type events struct {
	t *testing.T
	r *bufio.Reader
}

func openStream(t *testing.T, c *http.Client, u string) (*events, *http.Response) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return &events{t: t, r: bufio.NewReader(res.Body)}, res
}

// next returns the next event, skipping comments.
func (e *events) next() (name, data string) {
	e.t.Helper()
	var lines []string
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			e.t.Fatalf("stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && name != "":
			return name, strings.Join(lines, "\n")
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			lines = append(lines, strings.TrimPrefix(line, "data: "))
		}
	}
}

// TestLive_List checks that a live list sends its new content when tasks
// changed, and only then.
func TestLive_List(t *testing.T) {
	forEach(t, false, func(t *testing.T, b backend) {
		feed := &manualFeed{}
		h := newHarness(t, b, Options{Feed: feed}, false)
		asks := h.put(asking(newTask(0, "export_report", "bob"), "Overwrite?"))
		other := h.put(asking(newTask(time.Second, "export_report", "bob"), "Delete?"))
		srv := httptest.NewServer(h.con)
		t.Cleanup(srv.Close)
		c := liveClient(t, srv, victorToken)

		ev, res := openStream(t, c, srv.URL+"/live/tasks?status=input_required")
		if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("live stream = %d %q", res.StatusCode, ct)
		}
		name, data := ev.next()
		if name != "update" || !strings.Contains(data, asks.ID) || !strings.Contains(data, other.ID) || strings.Contains(data, "<html") {
			t.Fatalf("first event = %s %.200q, want the list's table with both tasks", name, data)
		}
		feed.poke() // nothing changed: nothing is sent
		if _, err := h.con.canceler.CancelAsOperator(context.Background(), asks.ID); err != nil {
			t.Fatal(err)
		}
		// The held task has a cancel request: the list shows it.
		feed.poke()
		name, data = ev.next()
		if name != "update" || !strings.Contains(data, "cancel requested") {
			t.Fatalf("event after the cancel = %s %.300q, want the cancel request shown", name, data)
		}
	})
}

// TestLive_Detail checks that a task's live page follows it to its end,
// and tells the browser to stop when it is gone.
func TestLive_Detail(t *testing.T) {
	t.Parallel()
	feed := &manualFeed{}
	h := newHarness(t, sqliteBackend, Options{Feed: feed}, false)
	r := newTask(0, "render", "carol")
	r.TTL = 90 * time.Minute
	h.put(r)
	srv := httptest.NewServer(h.con)
	t.Cleanup(srv.Close)
	c := liveClient(t, srv, aliceToken)
	ev, _ := openStream(t, c, srv.URL+"/live/tasks/"+r.ID)
	if _, data := ev.next(); !strings.Contains(data, "Cancel task") {
		t.Fatalf("first event lacks the cancel button: %.300q", data)
	}
	h.con.canceler.CancelAsOperator(context.Background(), r.ID)
	feed.poke()
	if _, data := ev.next(); !strings.Contains(data, `<span class="status cancelled">cancelled</span>`) || strings.Contains(data, "Cancel task") {
		t.Fatalf("event after the cancel = %.300q, want the task cancelled", data)
	}
	if _, err := h.st.DeleteExpired(context.Background(), t0.Add(2*time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	feed.poke()
	if name, _ := ev.next(); name != "end" {
		t.Fatalf("event after the task was deleted = %s, want end", name)
	}
}

// TestLive_SignedOut checks that a live page stops streaming once its
// session ended: signed out in another tab, expired or evicted.
func TestLive_SignedOut(t *testing.T) {
	t.Parallel()
	feed := &manualFeed{}
	h := newHarness(t, sqliteBackend, Options{Feed: feed}, false)
	r := h.put(newTask(0, "render", "carol"))
	srv := httptest.NewServer(h.con)
	t.Cleanup(srv.Close)
	c := liveClient(t, srv, aliceToken)
	ev, _ := openStream(t, c, srv.URL+"/live/tasks/"+r.ID)
	if name, _ := ev.next(); name != "update" {
		t.Fatalf("first event = %s, want update", name)
	}
	u, _ := url.Parse(srv.URL)
	for _, ck := range c.Jar.Cookies(u) {
		h.con.sessions.remove(ck.Value) // as a sign-out elsewhere does
	}
	if _, err := h.con.canceler.CancelAsOperator(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	feed.poke()
	if name, data := ev.next(); name != "signedout" || strings.Contains(data, "cancel") {
		t.Fatalf("event after the session ended = %s %.200q, want signedout and no task data", name, data)
	}
}

func TestLive_Bounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{Feed: &manualFeed{}, MaxLive: 1}, false)
	srv := httptest.NewServer(h.con)
	t.Cleanup(srv.Close)
	c := liveClient(t, srv, victorToken)
	ev, _ := openStream(t, c, srv.URL+"/live/overview")
	ev.next()
	_, res := openStream(t, c, srv.URL+"/live/tasks")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("a second live page with MaxLive 1 = %d, want 503 with Retry-After", res.StatusCode)
	}
	// One account holds at most half of MaxLive; another still gets one.
	h4 := newHarness(t, memoryBackend, Options{Feed: &manualFeed{}, MaxLive: 4}, false)
	srv4 := httptest.NewServer(h4.con)
	t.Cleanup(srv4.Close)
	victor := liveClient(t, srv4, victorToken)
	for i := range 2 {
		if _, res := openStream(t, victor, srv4.URL+"/live/tasks"); res.StatusCode != http.StatusOK {
			t.Fatalf("victor's live page %d = %d, want 200", i+1, res.StatusCode)
		}
	}
	if _, res := openStream(t, victor, srv4.URL+"/live/tasks"); res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("victor's third live page with MaxLive 4 = %d, want 503", res.StatusCode)
	}
	if _, res := openStream(t, liveClient(t, srv4, aliceToken), srv4.URL+"/live/tasks"); res.StatusCode != http.StatusOK {
		t.Errorf("alice's live page while victor holds his half = %d, want 200", res.StatusCode)
	}
	// Without a session, a stream is refused, not sent to the sign-in form.
	_, res = openStream(t, http.DefaultClient, srv.URL+"/live/tasks")
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a live page without a session = %d, want 401", res.StatusCode)
	}
}

func TestPollFeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch, stop := PollFeed(time.Second).Subscribe()
		defer stop()
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if len(ch) != 0 {
			t.Fatal("PollFeed said changed before its interval")
		}
		time.Sleep(3 * time.Millisecond)
		synctest.Wait()
		if len(ch) != 1 {
			t.Fatal("PollFeed said nothing after its interval")
		}
		time.Sleep(10 * time.Second) // the reader is slow: one value waits
		synctest.Wait()
		if len(ch) != 1 {
			t.Fatalf("%d values wait, want them coalesced into 1", len(ch))
		}
	})
}

// TestStoreFeed_Events checks that on Postgres a create reaches the live
// pages at once through the change feed, without waiting for a poll.
func TestStoreFeed_Events(t *testing.T) {
	t.Parallel()
	st := postgresBackend.open(t)
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cf := changefeed.New(st, nil)
	ran := make(chan struct{})
	go func() { defer close(ran); cf.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	feed := NewStoreFeed(cf, time.Hour)
	ch, stop := feed.Subscribe()
	defer stop()
	// The feed listens from its own goroutine: create tasks until one's
	// event arrives (the first may come before the LISTEN).
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		if err := st.Create(ctx, &task.Record{ID: task.NewID(), Principal: "bob", Tool: "echo", Status: task.Working, CreatedAt: t0, UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
			return
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no change signalled for %d creates", i+1)
		}
	}
}

// TestLive_CarriageReturn checks that text with a carriage return (a
// status message may hold one) cannot cut an event's data lines.
func TestLive_CarriageReturn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{Feed: &manualFeed{}}, false)
	r := newTask(0, "render", "carol")
	r.StatusMessage = "frame 1\rframe 2\r\nframe 3"
	h.put(r)
	srv := httptest.NewServer(h.con)
	t.Cleanup(srv.Close)
	ev, _ := openStream(t, liveClient(t, srv, victorToken), srv.URL+"/live/tasks/"+r.ID)
	if _, data := ev.next(); !strings.Contains(data, "frame 1\nframe 2\n\nframe 3") {
		t.Errorf("the event lost text around the carriage returns: %.400q", data)
	}
}
