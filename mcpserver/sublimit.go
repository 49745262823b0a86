package mcpserver

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Defaults of the bounds on the streams of one principal: task
// subscriptions (Options.MaxSubscriptions, Options.MaxSubscribedTasks),
// and the other streams (Options.MaxStreams).
const (
	DefaultMaxSubscriptions   = 64
	DefaultMaxSubscribedTasks = 1000
	DefaultMaxStreams         = 256
)

// CodeTooManySubscriptions is the JSON-RPC error code of a stream refused
// because its principal holds too many open ones: task subscriptions
// (Options.MaxSubscriptions, Options.MaxSubscribedTasks), or the other
// streams (Options.MaxStreams). It is an application code, outside the
// ranges the JSON-RPC and MCP specs reserve.
const CodeTooManySubscriptions = -31001

// subLimiter counts the open task subscriptions of each principal, and the
// task ids they name, against the bounds, and its other streams (see
// Server.openStream). Counting happens in the guard, before any store
// read, for both routes.
type subLimiter struct {
	maxSubs, maxIDs int

	mu      sync.Mutex
	held    map[string]subCount // principals with open subscriptions only
	open    int                 // subscriptions open, all principals
	streams shares              // the other streams open, by principal (each: Options.MaxStreams)
}

type subCount struct{ subs, ids int }

// take reserves a subscription of n ids for principal; it reports false
// when that would pass a bound.
func (l *subLimiter) take(principal string, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.held[principal]
	if c.subs+1 > l.maxSubs || c.ids+n > l.maxIDs {
		return false
	}
	l.held[principal] = subCount{c.subs + 1, c.ids + n}
	l.open++
	return true
}

// release gives back what take reserved.
func (l *subLimiter) release(principal string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	c := l.held[principal]
	c.subs--
	c.ids -= n
	if c.subs <= 0 {
		delete(l.held, principal)
		return
	}
	l.held[principal] = c
}

// takeStream reserves a stream of principal that is not a task
// subscription; it reports false when the principal holds
// Options.MaxStreams of them. LocalPrincipal is not counted (see shares).
func (l *subLimiter) takeStream(principal string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.streams.fits(principal, 1) {
		return false
	}
	l.streams.add(principal, 1)
	return true
}

// releaseStream gives back what takeStream reserved.
func (l *subLimiter) releaseStream(principal string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streams.add(principal, -1)
}

// Subscriptions returns how many task subscriptions are open, of every
// principal.
func (s *Server) Subscriptions() int {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	return s.subs.open
}

// writeTooMany answers a stream past its principal's bounds (a task
// subscription's, or Options.MaxStreams): HTTP 429, Retry-After, and
// CodeTooManySubscriptions with msg.
func writeTooMany(w http.ResponseWriter, id []byte, msg string) {
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusTooManyRequests, id, "error", &jsonrpc.Error{Code: CodeTooManySubscriptions, Message: msg})
}

// writeTooManySubscriptions answers a task subscription past the bounds.
func (l *subLimiter) writeTooManySubscriptions(w http.ResponseWriter, id []byte) {
	writeTooMany(w, id, fmt.Sprintf("Too many open task subscriptions for this principal (at most %d subscriptions naming %d task ids together); close one, or poll with tasks/get",
		l.maxSubs, l.maxIDs))
}

// admitStream admits a request that stays open as a stream (a
// subscriptions/listen, a 2025-11-25 tasks/result), holding h, its share
// of the in-flight budget: its body must be within limit (else HTTP 413),
// and it must fit in the half of the budget that requests that stay may
// hold together, and in its principal's share of that half (else HTTP
// 503, Retry-After; see budget): a few streams with large bodies would
// otherwise hold the whole budget, and every other request would get HTTP
// 503. If not admitted, the refusal is written.
func (s *Server) admitStream(w http.ResponseWriter, h *held, id []byte, bodyLen int, limit int64) bool {
	if int64(bodyLen) > limit {
		writeError(w, http.StatusRequestEntityTooLarge, id, codeInvalidRequest,
			fmt.Sprintf("Request body too large for a request that stays open (%d bytes; at most %d)", bodyLen, limit))
		return false
	}
	if !h.stay() {
		writeBusy(w, id, "Server busy: too many open streams; try again")
		return false
	}
	return true
}

// openStream admits a stream of principal that is not a task
// subscription (a subscriptions/listen without taskIds, which a go-sdk
// client keeps open for its whole session; a 2025-11-25 tasks/result) as
// admitStream does, its body within streamMetaBody, and counts it against
// the Options.MaxStreams of h's principal (else HTTP 429). If admitted,
// the caller calls release once the stream ends; if not, the refusal is
// written.
func (s *Server) openStream(w http.ResponseWriter, h *held, id []byte, bodyLen int) (release func(), ok bool) {
	if !s.admitStream(w, h, id, bodyLen, streamMetaBody) {
		return nil, false
	}
	if !s.subs.takeStream(h.principal) {
		writeTooMany(w, id, fmt.Sprintf("Too many open streams for this principal (at most %d subscriptions/listen without taskIds and 2025-11-25 tasks/result together); close one",
			s.subs.streams.each))
		return nil, false
	}
	return func() { s.subs.releaseStream(h.principal) }, true
}

// streamMetaBody bounds the body of a stream that names no task ids: room
// for its _meta.
const streamMetaBody = 64 << 10

// maxStreamBody bounds the body of a task subscription: room for _meta
// and as many task ids as one subscription may name.
func (s *Server) maxStreamBody() int64 {
	return streamMetaBody + 128*int64(s.opts.MaxSubscribedTasks)
}
