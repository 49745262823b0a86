package mcpserver

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Defaults of the bounds on task subscriptions (Options.MaxSubscriptions,
// Options.MaxSubscribedTasks).
const (
	DefaultMaxSubscriptions   = 64
	DefaultMaxSubscribedTasks = 1000
)

// CodeTooManySubscriptions is the JSON-RPC error code of a task
// subscription refused because its principal holds too many open ones
// (Options.MaxSubscriptions, Options.MaxSubscribedTasks). It is an
// application code, outside the ranges the JSON-RPC and MCP specs reserve.
const CodeTooManySubscriptions = -31001

// subLimiter counts the open task subscriptions of each principal, and the
// task ids they name, against the bounds. Counting happens in the guard,
// before any store read, for both routes.
type subLimiter struct {
	maxSubs, maxIDs int

	mu   sync.Mutex
	held map[string]subCount // principals with open subscriptions only
	open int                 // subscriptions open, all principals
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

// Subscriptions returns how many task subscriptions are open, of every
// principal.
func (s *Server) Subscriptions() int {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	return s.subs.open
}

// writeTooManySubscriptions answers a task subscription past the bounds:
// HTTP 429, Retry-After, and CodeTooManySubscriptions.
func (l *subLimiter) writeTooMany(w http.ResponseWriter, id []byte) {
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusTooManyRequests, id, "error", &jsonrpc.Error{
		Code: CodeTooManySubscriptions,
		Message: fmt.Sprintf("Too many open task subscriptions for this principal (at most %d subscriptions naming %d task ids together); close one, or poll with tasks/get",
			l.maxSubs, l.maxIDs),
	})
}

// admitStream admits a request that stays open as a stream (a
// subscriptions/listen, a 2025-11-25 tasks/result), holding h, its share
// of the in-flight budget: its body must be within maxStreamBody (else
// HTTP 413), and it must fit in the half of the budget that requests that
// stay may hold together (else HTTP 503, Retry-After; see budget): a few
// streams with large bodies would otherwise hold the whole budget, and
// every other request would get HTTP 503. If not admitted, the refusal is
// written.
func (s *Server) admitStream(w http.ResponseWriter, h *held, id []byte, bodyLen int) bool {
	if limit := s.maxStreamBody(); int64(bodyLen) > limit {
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

// maxStreamBody bounds the body of a request that stays open as a stream:
// room for _meta and as many task ids as one subscription may name.
func (s *Server) maxStreamBody() int64 {
	return 64<<10 + 128*int64(s.opts.MaxSubscribedTasks)
}
