package mcpserver

import (
	"context"
	"encoding/json"
	"sync"
)

// legacyCalls are the 2025-11-25 requests over HTTP that go-sdk serves on
// this process (inline tools/call above all), by principal, session and
// request id, so that the session's notifications/cancelled ends the one
// it names:
// that era's transport says that a client cancels a request so, and that
// a disconnection is no cancellation. The principal is in the key because
// a request may reach go-sdk with a session id that nothing verified (a
// body serveLegacy could not read): another principal's request must not
// take the place of one. A cancellation that reaches another replica than
// its request finds nothing there. The zero value is ready.
type legacyCalls struct {
	mu sync.Mutex
	m  map[string]*legacyCall
}

// legacyCall is one request of legacyCalls.
type legacyCall struct{ cancel context.CancelFunc }

// track returns the context of the principal's request of the session
// with the id, carrying requestKey, which cancel ends; done forgets the
// request.
func (l *legacyCalls) track(parent context.Context, principal, session string, id json.RawMessage) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	key, c := legacyCallKey(principal, session, id), &legacyCall{cancel: cancel}
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*legacyCall{}
	}
	l.m[key] = c
	l.mu.Unlock()
	return context.WithValue(ctx, requestKey{}, ctx), func() {
		l.mu.Lock()
		if l.m[key] == c {
			delete(l.m, key)
		}
		l.mu.Unlock()
		cancel()
	}
}

// cancel ends the principal's request of the session with the id, if it
// is in flight here.
func (l *legacyCalls) cancel(principal, session string, id json.RawMessage) {
	l.mu.Lock()
	c := l.m[legacyCallKey(principal, session, id)]
	l.mu.Unlock()
	if c != nil {
		c.cancel()
	}
}

// legacyCallKey is the key of a request in legacyCalls.
func legacyCallKey(principal, session string, id json.RawMessage) string {
	return principal + "\x00" + session + "\x00" + idKey(id)
}
