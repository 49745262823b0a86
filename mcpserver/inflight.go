package mcpserver

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DefaultMaxInflightBytes bounds the bytes that the requests handled at
// once hold, unless Options say otherwise: their bodies, and the tasks
// that replies and notices carry (tasks/get, a 2025-11-25 tasks/result,
// notifications/tasks).
const DefaultMaxInflightBytes = 64 << 20

// budget is the bytes that all the requests handled at once may hold:
// each one takes its body's bytes as they arrive (see readBody) and, for a
// reply that carries a task (tasks/get, a 2025-11-25 tasks/result), the
// task's size before it encodes the reply, and gives both back when it is
// done. A request that does not fit is refused at once (HTTP 503 with
// Retry-After while its body is read; a -32603 "busy" error for a
// tasks/get): waiting would hold the memory the budget is for. Two
// replies wait instead, read again after busyRetry, as an error would
// mean what it must not: a 2025-11-25 tasks/result, whose error a client
// takes for the tool's, and a task subscription's notice.
//
// A request that stays (a stream: a subscriptions/listen, a 2025-11-25
// tasks/result; a tools/call that runs its tool inline, for as long as the
// tool runs) keeps its body's bytes for as long as it lasts, and such
// requests may hold at most half of the budget together: however many
// stay, the other requests keep the other half. Those of one principal
// may hold at most half of that half (see shares): however many one
// principal keeps open, it leaves room for the others' streams and inline
// calls.
type budget struct {
	max int64

	mu      sync.Mutex
	used    int64
	staying int64  // of used, what requests that stay hold
	stayOf  shares // staying, by principal
}

// newBudget returns a budget of max bytes.
func newBudget(max int64) *budget {
	return &budget{max: max, stayOf: shares{each: halfOf(max / 2)}}
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

// stay counts n bytes that are taken already as those of a request of
// principal that stays, and reports false, counting nothing, if such
// requests would then hold more than half of the budget, or those of the
// principal more than its share of that half (one is admitted whatever its
// size, so that a small budget does not refuse them all).
func (b *budget) stay(principal string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.staying > 0 && b.staying+n > b.max/2 || !b.stayOf.fits(principal, n) {
		return false
	}
	b.staying += n
	b.stayOf.add(principal, n)
	return true
}

func (b *budget) leave(principal string, n int64) {
	b.mu.Lock()
	b.staying -= n
	b.stayOf.add(principal, -n)
	b.mu.Unlock()
}

// held is what one request of principal has taken from the budget; the
// guard gives it back once the request is answered. A nil *held takes
// nothing.
type held struct {
	b         *budget
	principal string
	n         atomic.Int64
	stayed    atomic.Int64 // of n, what counts as a request's that stays (see stay)
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

// stay counts what the request holds as a request's that stays (see
// budget.stay), once, before it stays; it reports false if the half of the
// budget for such requests is full. It runs before release: on the guard's
// goroutine, or on go-sdk's handler of the request, which go-sdk's
// stateless transport waits for before the guard's ServeHTTP returns.
func (h *held) stay() bool {
	if h == nil || h.stayed.Load() > 0 {
		return true
	}
	n := h.n.Load()
	if !h.b.stay(h.principal, n) {
		return false
	}
	h.stayed.Store(n)
	return true
}

func (h *held) release() {
	if n := h.stayed.Swap(0); n > 0 {
		h.b.leave(h.principal, n)
	}
	h.b.give(h.n.Swap(0))
}

// errStayBusy refuses a tools/call whose tool would run inline when the
// requests that stay hold their half of the budget, or those of its
// principal their share of it (see budget).
var errStayBusy = &jsonrpc.Error{Code: codeInternalError, Message: "Server busy: too many bytes held by running tool calls and open streams; try again"}

// busyRetry is how soon a reply that waits for room in the budget (a
// task subscription's notice, a 2025-11-25 tasks/result) tries again.
const busyRetry = 250 * time.Millisecond

// errBusy is the error of a reply that does not fit the budget.
var errBusy = &jsonrpc.Error{Code: codeInternalError, Message: "Server busy: too many bytes in flight; try again"}

// writeBusy refuses a request (id, nil before its body is read) that does
// not fit the budget: HTTP 503, Retry-After and -32603 with msg.
func writeBusy(w http.ResponseWriter, id []byte, msg string) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, id, codeInternalError, msg)
}
