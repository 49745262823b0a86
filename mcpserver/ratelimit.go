package mcpserver

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// pollLimiter remembers when each principal last polled each task.
type pollLimiter struct {
	min time.Duration
	now func() time.Time

	mu    sync.Mutex
	last  map[string]time.Time
	prune time.Time // next time stale entries are dropped
}

// allow reports whether principal may poll the task now, and if not, how
// long to wait.
func (l *pollLimiter) allow(principal, taskID string) (bool, time.Duration) {
	now := l.now()
	key := principal + "\x00" + taskID
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.prune) { // bound the map: forget pollers gone for a while
		for k, t := range l.last {
			if now.Sub(t) > l.min {
				delete(l.last, k)
			}
		}
		l.prune = now.Add(10 * l.min)
	}
	if t, ok := l.last[key]; ok && now.Sub(t) < l.min {
		return false, l.min - now.Sub(t)
	}
	l.last[key] = now
	return true, 0
}

// writeTooFast answers a refused poll: HTTP 429 with Retry-After and a
// JSON-RPC error.
func writeTooFast(w http.ResponseWriter, id []byte, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	writeError(w, http.StatusTooManyRequests, id, CodePollTooFast,
		"Polling too fast: wait "+wait.Round(time.Millisecond).String()+" before the next tasks/get of this task")
}
