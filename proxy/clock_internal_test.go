package proxy

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestUpstreamClock: the upstream timeout counts only the time the call
// waits for its upstream: a pause (a question to the client) stops it and
// a resume goes on with what was left, however many pauses; a resume
// without a pause, or a pause after the timeout, changes nothing.
func TestUpstreamClock(t *testing.T) {
	const timeout = 300 * time.Millisecond
	type step struct {
		wait   time.Duration // then
		action string        // "pause", "resume" or "" (none)
	}
	for _, c := range []struct {
		name    string
		steps   []step
		expires time.Duration // when the call must be ended, from its start
	}{
		{"no pause", nil, timeout},
		{"one pause", []step{{200 * time.Millisecond, "pause"}, {time.Hour, "resume"}}, time.Hour + timeout},
		{"two pauses", []step{{100 * time.Millisecond, "pause"}, {time.Minute, "resume"}, {100 * time.Millisecond, "pause"}, {time.Minute, "resume"}},
			2*time.Minute + timeout},
		{"resume without a pause", []step{{100 * time.Millisecond, "resume"}}, timeout},
		{"pause twice", []step{{100 * time.Millisecond, "pause"}, {time.Minute, "pause"}, {time.Minute, "resume"}}, 2*time.Minute + timeout},
		{"pause after the timeout", []step{{time.Second, "pause"}, {time.Minute, "resume"}}, timeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var at atomic.Int64 // nanoseconds from start; 0: not expired
				clock := newUpstreamClock(timeout, func() { at.Store(int64(time.Since(start))) })
				defer clock.stop()
				for _, s := range c.steps {
					time.Sleep(s.wait)
					switch s.action {
					case "pause":
						clock.pause()
					case "resume":
						clock.resume()
					}
				}
				time.Sleep(max(c.expires-time.Since(start), 0) + time.Hour)
				synctest.Wait()
				if got := time.Duration(at.Load()); got != c.expires {
					t.Errorf("expired at %s, want %s", got, c.expires)
				}
			})
		})
	}
}
