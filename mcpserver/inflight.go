package mcpserver

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DefaultMaxInflightBytes bounds the bytes that the requests handled at
// once hold, unless Options say otherwise: their bodies, and the tasks
// that tasks/get replies carry.
const DefaultMaxInflightBytes = 64 << 20

// budget is the bytes that all the requests handled at once may hold:
// each one takes its body's size before it reads it and, for tasks/get,
// the task's size before it encodes the reply, and gives both back when it
// is done. A request that does not fit is refused at once (HTTP 503 with
// Retry-After before its body is read; a -32603 "busy" error for a reply):
// waiting would hold the memory the budget is for.
//
// A request that stays open as a stream (a subscriptions/listen, a
// 2025-11-25 tasks/result) keeps its body's bytes for as long as it is
// open, and streams may hold at most half of the budget together: however
// many are open, the other requests keep the other half.
type budget struct {
	max int64

	mu      sync.Mutex
	used    int64
	streams int64 // of used, what open streams hold
}

// take reserves n bytes (at most the whole budget), or reports false.
func (b *budget) take(n int64) bool {
	n = min(n, b.max)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.used -= min(n, b.max)
	b.mu.Unlock()
}

// stream counts n bytes that are taken already as an open stream's, and
// reports false, counting nothing, if streams would then hold more than
// half of the budget (one stream is admitted whatever its size, so that a
// small budget does not refuse every stream).
func (b *budget) stream(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.streams > 0 && b.streams+n > b.max/2 {
		return false
	}
	b.streams += n
	return true
}

func (b *budget) unstream(n int64) {
	b.mu.Lock()
	b.streams -= n
	b.mu.Unlock()
}

// held is what one request has taken from the budget; the guard gives it
// back once the request is answered. A nil *held takes nothing.
type held struct {
	b        *budget
	n        atomic.Int64
	streamed int64 // of n, what counts as an open stream's (see stream)
}

type heldKey struct{}

// heldFrom returns the request's share of the budget, nil outside a
// request the guard let in.
func heldFrom(ctx context.Context) *held {
	h, _ := ctx.Value(heldKey{}).(*held)
	return h
}

func (h *held) take(n int64) bool {
	if h == nil {
		return true
	}
	if !h.b.take(n) {
		return false
	}
	h.n.Add(min(n, h.b.max))
	return true
}

// keep gives back what was taken beyond n, once the body's size is known.
func (h *held) keep(n int64) {
	n = min(n, h.b.max)
	if over := h.n.Load() - n; over > 0 {
		h.n.Add(-over)
		h.b.give(over)
	}
}

// stream counts what the request holds as an open stream's (see
// budget.stream), once, before the request stays open; it reports false if
// the streams' half of the budget is full.
func (h *held) stream() bool {
	if h == nil || h.streamed > 0 {
		return true
	}
	n := h.n.Load()
	if !h.b.stream(n) {
		return false
	}
	h.streamed = n
	return true
}

func (h *held) release() {
	if h.streamed > 0 {
		h.b.unstream(h.streamed)
		h.streamed = 0
	}
	h.b.give(h.n.Swap(0))
}

// errBusy is the error of a reply that does not fit the budget.
var errBusy = &jsonrpc.Error{Code: codeInternalError, Message: "Server busy: too many bytes in flight; try again"}

// writeBusy refuses a request whose body does not fit the budget.
func writeBusy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, nil, codeInternalError, "Server busy: too many request bytes in flight; try again")
}
