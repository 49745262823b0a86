package client

import (
	"math/rand/v2"
	"time"
)

// backoff returns the pause before retry n (1 for the first) of a request
// that keeps failing: base doubled at each retry up to ceiling, then
// spread by ±20% at random, so that the clients of a server that
// restarted do not all come back at the same instant.
func backoff(n int, base, ceiling time.Duration) time.Duration {
	d := min(base, ceiling)
	for i := 1; i < n && d < ceiling; i++ {
		d = min(2*d, ceiling)
	}
	spread := d / 5
	return d - spread + rand.N(2*spread+1)
}
