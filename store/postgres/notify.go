package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcptasks/mcptasks/store"
)

// Reconnection delays of Listen: the first retry waits about
// minReconnectDelay, and each failure doubles the wait up to
// maxReconnectDelay.
const (
	minReconnectDelay = 100 * time.Millisecond
	maxReconnectDelay = 5 * time.Second
)

// notify sends the event kind:id on the store's channel in tx; Postgres
// delivers it when tx commits, and drops it if tx rolls back.
//
// A transaction that notifies takes a database-wide lock at commit, so
// notifying commits are serialized, fsync included: they lose group
// commit. See [Options.DisableNotify].
func (s *Store) notify(ctx context.Context, tx pgx.Tx, kind store.EventKind, id string) error {
	if s.opts.DisableNotify {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, s.opts.NotifyChannel, string(kind)+":"+id); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// parseEvent reads a payload of notify.
func parseEvent(payload string) (store.Event, bool) {
	kind, id, ok := strings.Cut(payload, ":")
	if !ok || id == "" {
		return store.Event{}, false
	}
	switch k := store.EventKind(kind); k {
	case store.EventCreated, store.EventAnswered, store.EventCancelled, store.EventUpdated:
		return store.Event{Kind: k, TaskID: id}, true
	}
	return store.Event{}, false
}

// Listen implements [store.Listener]. It opens a connection of its own,
// outside the pool, that LISTENs on the store's channel, and delivers the
// events of every process that writes to the database (this one too) on
// the returned channel, until ctx is done or the store is closed; then it
// closes the channel.
//
// The channel is buffered ([Options.EventBuffer]); an event that finds it
// full is dropped, and the channel receives [store.EventResync] in its
// place as soon as it has room, before any later event. When the
// connection drops, the channel receives [store.EventDown], and Listen
// reconnects with a growing delay (about 100ms at first, doubling up to
// 5s); events sent meanwhile are lost, and once the connection is back the
// channel receives EventResync. Listen does not coalesce events: a
// consumer that reacts to bursts debounces them itself.
//
// The first connection is made before Listen returns, so an unreachable
// database is an error. The connection needs a session of its own: through
// a pooler in transaction mode (PgBouncer) LISTEN does not work.
func (s *Store) Listen(ctx context.Context) (<-chan store.Event, error) {
	// Count the listener before Close may wait for the count.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("postgres: listen: the store is closed")
	}
	s.listeners.Add(1)
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.closing, cancel)
	conn, err := s.listenConn(ctx)
	if err != nil {
		stop()
		cancel()
		s.listeners.Done()
		return nil, fmt.Errorf("postgres: listen: %w", err)
	}
	events := make(chan store.Event, s.opts.EventBuffer)
	go func() {
		defer s.listeners.Done()
		defer close(events)
		defer cancel()
		defer stop()
		s.listen(ctx, conn, events)
	}()
	return events, nil
}

// listenConn opens a connection that listens on the store's channel.
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.opts.NotifyChannel}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}

// listen delivers the notifications of conn to events until ctx is done,
// reconnecting when the connection fails.
func (s *Store) listen(ctx context.Context, conn *pgx.Conn, events chan<- store.Event) {
	// send delivers a control event, waiting for room: it must not be
	// lost.
	send := func(kind store.EventKind) bool {
		select {
		case events <- store.Event{Kind: kind}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	lost := false
	for {
		if lost {
			if !send(store.EventResync) {
				closeConn(conn)
				return
			}
			lost = false
		}
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			if ev, ok := parseEvent(n.Payload); ok {
				select {
				case events <- ev:
				default: // full: a resync takes its place
					lost = true
				}
			}
			continue
		}
		closeConn(conn)
		if ctx.Err() != nil || !send(store.EventDown) {
			return
		}
		if conn = s.reconnect(ctx); conn == nil {
			return
		}
		lost = true
	}
}

// reconnect opens a new listening connection, waiting longer after each
// failure, until it succeeds or ctx is done (then it returns nil).
func (s *Store) reconnect(ctx context.Context) *pgx.Conn {
	delay := minReconnectDelay
	for {
		// Jitter spreads the replicas that lost their connections at once.
		wait := delay/2 + rand.N(delay/2+1)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if conn, err := s.listenConn(ctx); err == nil {
			return conn
		}
		delay = min(2*delay, maxReconnectDelay)
	}
}

// closeConn closes conn, waiting at most a second for a goodbye to the
// server.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
