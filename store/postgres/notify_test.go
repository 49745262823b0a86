package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/store"
)

// eventWait bounds how long a test waits for an event that must come.
const eventWait = 10 * time.Second

// testChannel returns a NOTIFY channel of the test's own: channels are per
// database, and other tests notify on theirs at the same time.
func testChannel() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mcptasks_test_" + hex.EncodeToString(b[:])
}

// twoStores opens a listening store and a writing one on one fresh schema
// and channel, as two replicas would.
func twoStores(t *testing.T) (listener, writer *Store, channel string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	channel = testChannel()
	return open(t, dsn, &Options{NotifyChannel: channel}), open(t, dsn, &Options{NotifyChannel: channel}), channel
}

// listen starts listening on s until t ends.
func listen(t *testing.T, s *Store) <-chan store.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events, err := s.Listen(ctx)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	return events
}

// next returns the next event, failing t if none comes in time.
func next(t *testing.T, events <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the event channel closed")
		}
		return ev
	case <-time.After(eventWait):
		t.Fatalf("no event within %v", eventWait)
	}
	return store.Event{}
}

func wantEvent(t *testing.T, events <-chan store.Event, want store.Event) {
	t.Helper()
	if got := next(t, events); got != want {
		t.Fatalf("event = %+v, want %+v", got, want)
	}
}

func TestListen_Events(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, w, _ := twoStores(t)
	events := listen(t, l)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	fence := func(attempt int, now time.Time) store.FenceParams {
		return store.FenceParams{ID: "t1", Attempt: attempt, Now: now}
	}

	// Create notifies; a duplicate does not.
	if err := w.Create(ctx, newTask("t1")); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: "t1"})
	if err := w.Create(ctx, newTask("t1")); err == nil {
		t.Fatal("duplicate Create succeeded")
	}

	// Answers notify when they accept keys, and only then. Each silent
	// write is followed by a Create, whose event must come next: one
	// session's notifications arrive in commit order.
	cs, err := w.Claim(ctx, store.ClaimParams{Owner: "w1", Now: at(0), LeaseExpiresAt: at(time.Minute)})
	if err != nil || len(cs) != 1 {
		t.Fatalf("Claim = %d, %v", len(cs), err)
	}
	if _, err := w.RequestInput(ctx, store.RequestInputParams{FenceParams: fence(1, at(time.Second)),
		Requests: map[string]json.RawMessage{"a": json.RawMessage(`{}`), "b": json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	// What a poll could see changed: input is requested.
	wantEvent(t, events, store.Event{Kind: store.EventUpdated, TaskID: "t1"})
	if _, err := w.Answer(ctx, store.AnswerParams{ID: "t1", Principal: "alice", Now: at(2 * time.Second),
		Responses: map[string]json.RawMessage{"zzz": json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Create(ctx, newTask("marker1")); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: "marker1"})
	if _, err := w.Answer(ctx, store.AnswerParams{ID: "t1", Principal: "alice", Now: at(3 * time.Second),
		Responses: map[string]json.RawMessage{"a": json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventAnswered, TaskID: "t1"})

	// A cancel request on a held task notifies its worker; asking again
	// changes nothing and is silent.
	for range 2 {
		if _, err := w.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: "alice", Now: at(4 * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	wantEvent(t, events, store.Event{Kind: store.EventCancelled, TaskID: "t1"})
	if err := w.Create(ctx, newTask("marker2")); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: "marker2"})

	// A task nobody holds is cancelled at once: no worker to tell, but
	// what a poll sees changed.
	if _, err := w.RequestCancel(ctx, store.CancelParams{ID: "marker1", Principal: "alice", Now: at(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventUpdated, TaskID: "marker1"})
	if err := w.Create(ctx, newTask("marker3")); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: "marker3"})

	// A held task cancelled at once tells its worker too, so that it
	// stops its handler now, not at its next heartbeat.
	if _, err := w.Claim(ctx, store.ClaimParams{Owner: "w1", Now: at(6 * time.Second), LeaseExpiresAt: at(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.RequestCancel(ctx, store.CancelParams{ID: "marker2", Principal: "alice", Now: at(7 * time.Second), AtOnce: true}); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventCancelled, TaskID: "marker2"})

	// The listener's own writes come back too.
	if err := l.Create(ctx, newTask("own")); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: "own"})
}

// TestListen_RolledBack checks that a write that fails sends nothing.
func TestListen_RolledBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, w, _ := twoStores(t)
	events := listen(t, l)
	bad := newTask("bad")
	bad.Args = json.RawMessage(`{`) // rejected by the json column, after the insert began
	if err := w.Create(ctx, bad); err == nil {
		t.Fatal("Create with invalid JSON succeeded")
	}
	if err := w.Create(ctx, newTask("good")); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: "good"})
}

// TestListen_DisableNotify checks that a store with DisableNotify sends no
// events but still receives those of others.
func TestListen_DisableNotify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	channel := testChannel()
	quiet := open(t, dsn, &Options{NotifyChannel: channel, DisableNotify: true})
	noisy := open(t, dsn, &Options{NotifyChannel: channel})
	events := listen(t, quiet)

	if err := quiet.Create(ctx, newTask("t1")); err != nil {
		t.Fatal(err)
	}
	if err := quiet.Create(ctx, newTask("t1")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate Create = %v, want ErrExists", err)
	}
	if _, err := quiet.Claim(ctx, store.ClaimParams{Owner: "w1", Now: t0, LeaseExpiresAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := quiet.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: "alice", Now: t0}); err != nil {
		t.Fatal(err)
	}
	if err := noisy.Create(ctx, newTask("marker")); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: "marker"})
}

// listenerPID returns the backend of the connection listening on channel,
// waiting for one to be listening if it is not yet, other than not.
func listenerPID(t *testing.T, s *Store, channel string, not int32) int32 {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(eventWait)
	for {
		var pid int32
		err := s.pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE query = $1 AND state = 'idle' AND pid <> $2 AND pid <> pg_backend_pid()`,
			"LISTEN "+pgx.Identifier{channel}.Sanitize(), not).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection listens on %s within %v", channel, eventWait)
		}
		time.Sleep(20 * time.Millisecond) // polling the server against a deadline
	}
}

// TestListen_Reconnects checks that Listen survives the loss of its
// connection: it says so (EventDown), reconnects, says that events may
// have been lost meanwhile (EventResync), and later events arrive.
func TestListen_Reconnects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, w, channel := twoStores(t)
	events := listen(t, l)
	pid := listenerPID(t, w, channel, 0)

	for round := range 2 {
		var ok bool
		if err := w.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
		}
		wantEvent(t, events, store.Event{Kind: store.EventDown})
		pid = listenerPID(t, w, channel, pid)
		wantEvent(t, events, store.Event{Kind: store.EventResync})
		id := []string{"after1", "after2"}[round]
		if err := w.Create(ctx, newTask(id)); err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: id})
	}
}

func TestListen_Stops(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	channel := testChannel()

	t.Run("ContextDone", func(t *testing.T) {
		s := open(t, dsn, &Options{NotifyChannel: channel})
		ctx, cancel := context.WithCancel(context.Background())
		events, err := s.Listen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		waitClosed(t, events)
	})

	t.Run("StoreClosed", func(t *testing.T) {
		s, err := Open(context.Background(), dsn, &Options{NotifyChannel: channel})
		if err != nil {
			t.Fatal(err)
		}
		events, err := s.Listen(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Close waited for the listener: the channel is already closed.
		select {
		case _, ok := <-events:
			if ok {
				t.Fatal("an event after Close")
			}
		default:
			t.Fatal("the event channel is open after Close returned")
		}
		if _, err := s.Listen(context.Background()); err == nil {
			t.Error("Listen on a closed store succeeded")
		}
	})
}

func waitClosed(t *testing.T, events <-chan store.Event) {
	t.Helper()
	timeout := time.After(eventWait)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("the event channel is still open %v after ctx was done", eventWait)
		}
	}
}

func TestParseEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		payload string
		want    store.Event
		ok      bool
	}{
		{"created:abc", store.Event{Kind: store.EventCreated, TaskID: "abc"}, true},
		{"answered:a:b", store.Event{Kind: store.EventAnswered, TaskID: "a:b"}, true},
		{"cancelled:x", store.Event{Kind: store.EventCancelled, TaskID: "x"}, true},
		{"created:", store.Event{}, false},
		{"created", store.Event{}, false},
		{"deleted:x", store.Event{}, false},
		{"", store.Event{}, false},
	}
	for _, tt := range tests {
		got, ok := parseEvent(tt.payload)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseEvent(%q) = %+v, %v; want %+v, %v", tt.payload, got, ok, tt.want, tt.ok)
		}
	}
}

// TestListen_Overflow checks that an event that finds the channel full is
// not lost silently: a resync takes its place, before later events.
func TestListen_Overflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	channel := testChannel()
	l := open(t, dsn, &Options{NotifyChannel: channel, EventBuffer: 1})
	w := open(t, dsn, &Options{NotifyChannel: channel})
	events := listen(t, l)
	for _, id := range []string{"a", "b"} {
		if err := w.Create(ctx, newTask(id)); err != nil {
			t.Fatal(err)
		}
	}
	wantEvent(t, events, store.Event{Kind: store.EventCreated, TaskID: "a"})
	// b was dropped or not, depending on how fast the test read a.
	if got := next(t, events); got != (store.Event{Kind: store.EventCreated, TaskID: "b"}) && got.Kind != store.EventResync {
		t.Fatalf("event = %+v, want b or a resync", got)
	}
	if err := w.Create(ctx, newTask("c")); err != nil {
		t.Fatal(err)
	}
	for {
		if got := next(t, events); got.TaskID == "c" {
			break
		}
	}
}
