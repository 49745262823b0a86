package mcpserver

import "testing"

// TestShares_Fits walks the rules of a principal's share: within it, past
// it, the first take whatever its size, LocalPrincipal and a zero share
// unbound, and a share given back in full forgotten.
func TestShares_Fits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		each      int64
		held      int64 // what alice holds before
		principal string
		n         int64
		want      bool
	}{
		{"within the share", 10, 4, "alice", 6, true},
		{"past the share", 10, 4, "alice", 7, false},
		{"another principal", 10, 10, "bob", 10, true},
		{"the first take, larger than the share", 10, 0, "alice", 50, true},
		{"the local principal", 10, 10, LocalPrincipal, 50, true},
		{"no share", 0, 10, "alice", 50, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := shares{each: tc.each}
			s.add("alice", tc.held)
			if got := s.fits(tc.principal, tc.n); got != tc.want {
				t.Errorf("shares{each: %d}, alice holding %d: fits(%q, %d) = %v, want %v", tc.each, tc.held, tc.principal, tc.n, got, tc.want)
			}
			s.add("alice", -tc.held)
			if len(s.of) != 0 {
				t.Errorf("after alice gave back all she held, shares remember %v", s.of)
			}
		})
	}
}

// TestHalfOf: a principal's share is half of the server-wide bound, and
// at least 1.
func TestHalfOf(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]int64{0: 1, 1: 1, 2: 1, 5: 2, 256: 128} {
		if got := halfOf(n); got != want {
			t.Errorf("halfOf(%d) = %d, want %d", n, got, want)
		}
	}
}
