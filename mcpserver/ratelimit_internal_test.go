package mcpserver

import (
	"strconv"
	"testing"
	"time"
)

// TestPollLimiter_Bounded polls ten times as many made-up ids as the
// limiter may remember, all within one interval: it never remembers more
// than its bound, and still refuses a repeated poll it remembers.
func TestPollLimiter_Bounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 28, 10, 30, 0, 0, time.UTC)
	l := &pollLimiter{min: time.Hour, now: func() time.Time { return now }, max: 1000, last: map[string]time.Time{}}
	for i := range 10 * l.max {
		if ok, _ := l.allow("mallory", strconv.Itoa(i)); !ok {
			t.Fatalf("poll %d of a new id refused", i)
		}
		if len(l.last) > l.max {
			t.Fatalf("after %d polls the limiter remembers %d, more than its bound %d", i+1, len(l.last), l.max)
		}
	}
	if ok, _ := l.allow("alice", "t"); !ok {
		t.Fatal("alice's first poll refused")
	}
	if ok, wait := l.allow("alice", "t"); ok || wait <= 0 {
		t.Errorf("alice's second poll within the interval: allowed %v, wait %s; want refused", ok, wait)
	}
}
