package mcpserver

import (
	"context"
	"encoding/json"
	"sync"
)

// cancellable are requests in flight that a notifications/cancelled may
// end, by key: the stdio bridge's (by id), and the 2025-11-25 requests over
// HTTP that go-sdk serves on this process (by principal, session and id,
// see legacyCallKey). The zero value is ready.
type cancellable struct {
	mu sync.Mutex
	m  map[string]*cancelEntry
}

// cancelEntry is one request of cancellable.
type cancelEntry struct{ cancel context.CancelFunc }

// track returns the context of the request with the key: parent's, which
// cancel also ends, carrying requestKey (see there). done forgets the
// request; a request of the same key tracked since is left alone.
func (l *cancellable) track(parent context.Context, key string) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancel(parent)
	c := &cancelEntry{cancel: cancel}
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*cancelEntry{}
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

// cancel ends the request with the key, if it is in flight here.
func (l *cancellable) cancel(key string) {
	l.mu.Lock()
	c := l.m[key]
	l.mu.Unlock()
	if c != nil {
		c.cancel()
	}
}

// legacyCallKey is the key of a 2025-11-25 request over HTTP: the era's
// transport says that a client cancels a request with the session's
// notifications/cancelled, and that a disconnection is no cancellation. A
// cancellation that reaches another replica than its request finds nothing
// there. The principal is in the key because a request may reach go-sdk
// with a session id that nothing verified (a body serveLegacy could not
// read): another principal's request must not take the place of one.
func legacyCallKey(principal, session string, id json.RawMessage) string {
	return principal + "\x00" + session + "\x00" + idKey(id)
}
