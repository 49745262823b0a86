package mcpserver

// shares keeps each principal to its share of something that all of them
// take from: the inline tool calls (half of Options.MaxInlineCalls), the
// bytes that requests that stay hold (half of the half of
// Options.MaxInflightBytes that they may hold), the open streams that are
// not task subscriptions (Options.MaxStreams). Without it, one principal
// could take all of a server-wide bound, and every other principal's
// requests would be refused. LocalPrincipal, the one principal
// of a server without authentication, has no other to refuse: it has no
// share, and only the server-wide bounds hold it (as the console's local
// account has no share of its live pages).
//
// A shares is not safe for concurrent use: the bound that owns it guards
// it with its own lock, so that the share and the server-wide bound are
// checked and counted together. The zero value bounds nothing.
type shares struct {
	each int64            // most one principal may hold; 0: no bound
	of   map[string]int64 // what each principal holds, those that hold some only
}

// halfOf returns the share of one principal of a server-wide bound n: half
// of it, so that one principal leaves the other half to the others, and at
// least 1.
func halfOf(n int64) int64 { return max(n/2, 1) }

// fits reports whether principal may take n more. A principal that holds
// nothing may take any n, which the server-wide bound alone then decides:
// a request larger than a share is still served, alone.
func (s *shares) fits(principal string, n int64) bool {
	if s.each <= 0 || principal == LocalPrincipal {
		return true
	}
	held := s.of[principal]
	return held == 0 || held+n <= s.each
}

// add counts n more (or, negative, fewer) held by principal.
func (s *shares) add(principal string, n int64) {
	if s.each <= 0 || principal == LocalPrincipal {
		return
	}
	if s.of == nil {
		s.of = map[string]int64{}
	}
	if held := s.of[principal] + n; held > 0 {
		s.of[principal] = held
	} else {
		delete(s.of, principal)
	}
}
