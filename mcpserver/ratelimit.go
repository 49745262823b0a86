package mcpserver

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// maxPollEntries bounds the polls a pollLimiter remembers (about 100 bytes
// each): past it, stale entries are dropped at once and, if that is not
// enough, random ones, whose next poll is then let through.
const maxPollEntries = 100_000

// pollLimiter remembers when each principal last polled each task.
type pollLimiter struct {
	min time.Duration
	now func() time.Time
	max int // maxPollEntries, or less in tests

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
	t, seen := l.last[key]
	if seen && now.Sub(t) < l.min {
		return false, l.min - now.Sub(t) // before any eviction, which could forget this very poll
	}
	if now.After(l.prune) || len(l.last) >= l.max { // bound the map: forget pollers gone for a while
		for k, t := range l.last {
			if now.Sub(t) > l.min {
				delete(l.last, k)
			}
		}
		l.prune = now.Add(10 * l.min)
	}
	if !seen { // a new key: make room if the map is still full of recent polls (ids made up by the thousand)
		for k := range l.last {
			if len(l.last) < l.max {
				break
			}
			delete(l.last, k)
		}
	}
	l.last[key] = now
	return true, 0
}

// pollAllowed applies the poll limit (Options.MinPollInterval) to a
// tasks/get of taskID by principal, in either era: it reports false, having
// answered the request, for a poll that came too soon. Only ids that could
// be a task's are remembered: the others are answered not found without a
// store read, and keeping them would let the limiter grow with their length.
func (s *Server) pollAllowed(w http.ResponseWriter, id []byte, principal, taskID string) bool {
	if s.polls == nil || !task.ValidID(taskID) {
		return true
	}
	ok, wait := s.polls.allow(principal, taskID)
	if !ok {
		writeTooFast(w, id, wait)
	}
	return ok
}

// writeTooFast answers a refused poll: HTTP 429 with Retry-After and a
// JSON-RPC error.
func writeTooFast(w http.ResponseWriter, id []byte, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	writeError(w, http.StatusTooManyRequests, id, CodePollTooFast,
		"Polling too fast: wait "+wait.Round(time.Millisecond).String()+" before the next tasks/get of this task")
}
