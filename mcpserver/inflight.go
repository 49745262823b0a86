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
type budget struct {
	max int64

	mu   sync.Mutex
	used int64
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

// held is what one request has taken from the budget; the guard gives it
// back once the request is answered. A nil *held takes nothing.
type held struct {
	b *budget
	n atomic.Int64
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

func (h *held) release() { h.b.give(h.n.Swap(0)) }

// errBusy is the error of a reply that does not fit the budget.
var errBusy = &jsonrpc.Error{Code: codeInternalError, Message: "Server busy: too many bytes in flight; try again"}

// writeBusy refuses a request whose body does not fit the budget.
func writeBusy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, nil, codeInternalError, "Server busy: too many request bytes in flight; try again")
}
