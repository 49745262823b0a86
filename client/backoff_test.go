package client

import (
	"testing"
	"time"
)

// TestBackoff: the pause doubles from base at each retry up to ceiling
// (which a base above it replaces), and is spread by ±20%.
func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n             int
		base, ceiling time.Duration
		want          time.Duration // before the spread
	}{
		{1, time.Second, 5 * time.Second, time.Second},
		{2, time.Second, 5 * time.Second, 2 * time.Second},
		{3, time.Second, 5 * time.Second, 4 * time.Second},
		{4, time.Second, 5 * time.Second, 5 * time.Second},
		{1000, time.Second, 5 * time.Second, 5 * time.Second},
		{1, 20 * time.Millisecond, 5 * time.Second, 20 * time.Millisecond},
		{3, 20 * time.Millisecond, 5 * time.Second, 80 * time.Millisecond},
		{1, 30 * time.Second, 30 * time.Second, 30 * time.Second},
		{5, 30 * time.Second, 30 * time.Second, 30 * time.Second},
	} {
		lo, hi := tc.want-tc.want/5, tc.want+tc.want/5
		seen := map[time.Duration]bool{}
		for range 200 {
			d := backoff(tc.n, tc.base, tc.ceiling)
			if d < lo || d > hi {
				t.Fatalf("backoff(%d, %s, %s) = %s; want %s to %s", tc.n, tc.base, tc.ceiling, d, lo, hi)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("backoff(%d, %s, %s) is always %v; want it spread", tc.n, tc.base, tc.ceiling, seen)
		}
	}
}
