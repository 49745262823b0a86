package postgres

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/store"
)

// replyCutter is a TCP proxy to Postgres that, once armed, loses the
// reply of the next statement it carries: it drops the server's messages
// from the statement's BindComplete to its ReadyForQuery (by then the
// statement has committed), and then closes both connections, as a
// network that breaks after COMMIT does.
type replyCutter struct {
	ln    net.Listener
	armed atomic.Bool
	cut   chan struct{} // receives once for each reply lost
	// onCut, if set, is called once a reply is lost, before the
	// connections close.
	onCut func()
}

func newReplyCutter(t *testing.T, target string) *replyCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &replyCutter{ln: ln, cut: make(chan struct{}, 1)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			go func() { _, _ = io.Copy(server, client); server.Close() }()
			go c.relay(server, client)
		}
	}()
	return c
}

// wasCut fails t unless a reply was lost since the last call.
func (c *replyCutter) wasCut(t *testing.T) {
	t.Helper()
	select {
	case <-c.cut:
	default:
		t.Fatal("no reply was cut")
	}
}

// relay copies the server's messages to the client, message by message.
func (c *replyCutter) relay(server, client net.Conn) {
	defer client.Close()
	defer server.Close()
	head := make([]byte, 5) // type, length (counting itself)
	dropping := false
	for {
		if _, err := io.ReadFull(server, head); err != nil {
			return
		}
		body := make([]byte, int(binary.BigEndian.Uint32(head[1:]))-4)
		if _, err := io.ReadFull(server, body); err != nil {
			return
		}
		if head[0] == '2' && c.armed.CompareAndSwap(true, false) { // BindComplete
			dropping = true
		}
		if dropping {
			if head[0] == 'Z' { // ReadyForQuery: committed, and lost
				if c.onCut != nil {
					c.onCut()
				}
				c.cut <- struct{}{}
				return
			}
			continue
		}
		if _, err := client.Write(append(head, body...)); err != nil {
			return
		}
	}
}

// cutStores returns two stores of one schema: direct, and proxied, whose
// one connection goes through cutter.
func cutStores(t *testing.T) (direct, proxied *Store, cutter *replyCutter) {
	t.Helper()
	dsn := pgtest.DSN(t)
	direct = open(t, dsn, nil)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cutter = newReplyCutter(t, u.Host)
	u.Host = cutter.ln.Addr().String()
	return direct, open(t, u.String(), &Options{MaxConns: 1}), cutter
}

// TestClaim_LostReplyContextEnded: a claim whose reply is lost while its
// context ends (a timeout, or Shutdown cancelling the claim loop) still
// returns the tasks it leased: the lookups by its token run on a context
// of their own. Before, they ran on the ended one, failed at once, and
// left the tasks leased to a worker that never ran them.
func TestClaim_LostReplyContextEnded(t *testing.T) {
	t.Parallel()
	direct, proxied, cutter := cutStores(t)
	if err := direct.Create(context.Background(), newTask("t")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cutter.onCut = cancel
	cutter.armed.Store(true)
	cs, err := proxied.Claim(ctx, store.ClaimParams{Owner: "w1", Now: t0, LeaseExpiresAt: t0.Add(time.Minute), Limit: 10})
	cutter.wasCut(t)
	if err != nil || len(cs) != 1 || cs[0].ID != "t" || cs[0].LeaseOwner != "w1" {
		t.Errorf("claim whose reply was lost as its context ended: %v, %v; want the task it leased", cs, err)
	}
}

// TestClaim_LostReply: a claim that committed but whose reply was lost
// returns the tasks it leased, and only those, with their lost flags, instead of an error
// that left them leased to a worker that never ran them (a lease later, the
// next claim took the first run for a lost one: a tool that is not re-run
// failed "worker lost" without having run).
func TestClaim_LostReply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, proxied, cutter := cutStores(t)

	// fresh never ran; lost was held by a worker whose lease ran out.
	for _, id := range []string{"fresh", "lost"} {
		if err := direct.Create(ctx, newTask(id)); err != nil {
			t.Fatal(err)
		}
	}
	const lease = time.Minute
	if cs, err := direct.Claim(ctx, store.ClaimParams{Owner: "gone", Now: t0, LeaseExpiresAt: t0.Add(lease), Limit: 2}); err != nil || len(cs) != 2 {
		t.Fatalf("first claim: %v %v", cs, err)
	}
	if err := direct.Release(ctx, store.FenceParams{ID: "fresh", Attempt: 1, Now: t0}); err != nil {
		t.Fatal(err)
	}

	now := t0.Add(lease)
	cutter.armed.Store(true)
	cs, err := proxied.Claim(ctx, store.ClaimParams{Owner: "w1", Now: now, LeaseExpiresAt: now.Add(lease), Limit: 10})
	cutter.wasCut(t)
	if err != nil {
		t.Fatalf("claim whose reply was lost after COMMIT: %v; want the tasks it leased", err)
	}
	got := map[string]bool{}
	for _, c := range cs {
		got[c.ID] = c.Lost
		if c.LeaseOwner != "w1" || c.Attempt != 2 {
			t.Errorf("task %s: owner %q attempt %d, want w1 at attempt 2", c.ID, c.LeaseOwner, c.Attempt)
		}
	}
	if len(got) != 2 || got["fresh"] || !got["lost"] {
		t.Errorf("claimed (id: lost) %v, want fresh: false, lost: true", got)
	}

	// A claim that leased nothing, its reply lost: the error, as the
	// lookup finds nothing it leased, not even a task that the same owner
	// holds with the same lease expiry (created claimed, as engine.Create
	// makes them, in the same millisecond), which it already runs.
	held := newTask("held")
	store.ApplyClaim(held, store.ClaimParams{Owner: "w1", Now: now, LeaseExpiresAt: now.Add(2 * lease)})
	if err := direct.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	cutter.armed.Store(true)
	if cs, err := proxied.Claim(ctx, store.ClaimParams{Owner: "w1", Now: now, LeaseExpiresAt: now.Add(2 * lease), Limit: 10}); err == nil || len(cs) != 0 {
		t.Errorf("claim of nothing, reply lost: %v %v; want the error", cs, err)
	}
	cutter.wasCut(t)
}
