package mcpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// CheckOrigin reports whether origin may be listed in
// [Options.AllowedOrigins]: a browser origin, scheme://host[:port], such
// as https://app.example.com, with no path.
func CheckOrigin(origin string) error {
	if err := http.NewCrossOriginProtection().AddTrustedOrigin(origin); err != nil {
		return fmt.Errorf("origin %q: want scheme://host[:port] with no path, e.g. https://app.example.com", origin)
	}
	return nil
}

// newCrossOrigin returns the cross-origin protection of the origins an
// operator allows; it panics on an invalid one, naming the field.
func newCrossOrigin(allowed []string) *http.CrossOriginProtection {
	cop := http.NewCrossOriginProtection()
	for i, o := range allowed {
		if err := CheckOrigin(o); err != nil {
			panic(fmt.Sprintf("mcpserver: Options.AllowedOrigins[%d]: %v", i, err))
		}
		_ = cop.AddTrustedOrigin(o) // checked above
	}
	return cop
}

// Protect returns h behind the checks that every request to the server
// passes first (see Options.AllowedOrigins): a request that reached a
// loopback listener under a Host that is not a loopback name, or that a
// browser sent from another origin, gets HTTP 403. Handler and the
// operational handlers are behind them already; Protect is for what is
// served beside them, such as an authenticating wrapper of Handler, which
// must not answer a page of another origin, even with a 401. As go-sdk
// does, it takes a connection that reached a loopback address for one
// of a loopback listener (a wildcard listener reached over loopback too).
func (s *Server) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refused := s.checkOrigin(r); refused != "" {
			writeError(w, http.StatusForbidden, nil, codeInvalidRequest, refused)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// checkOrigin refuses what a web page may send but the server must not
// serve, the defence against DNS rebinding and cross-site requests
// (TASKS-SPEC §2.12): a request that reached a loopback listener under a
// Host that is not a loopback name (as go-sdk refuses it), and a browser
// request, of any method, from an origin that is neither the server's own
// (the Host the request was sent to, or Sec-Fetch-Site: same-origin or
// none) nor one of Options.AllowedOrigins. Requests without Origin and
// Sec-Fetch-Site headers come from programs, not browsers, and pass.
func (s *Server) checkOrigin(r *http.Request) string {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil && loopbackAddr(la) && !isLoopback(r.Host) {
		return fmt.Sprintf("Forbidden: Host %q is not a loopback name; this server listens on loopback only", r.Host)
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		// CrossOriginProtection passes the methods it calls safe: not
		// here, where a GET reads metrics and a stream may come to GET.
		unsafe := *r
		unsafe.Method = http.MethodPost
		r = &unsafe
	}
	if s.origins.Check(r) != nil {
		origin := r.Header.Get("Origin")
		if origin == "" {
			return "Forbidden: cross-site browser request (Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site") + ")"
		}
		return fmt.Sprintf("Forbidden: requests from origin %q are not allowed", origin)
	}
	return ""
}

// LoopbackOnly returns a handler that serves h only to requests whose Host
// names a loopback host (localhost or a loopback IP), as the MCP endpoint
// does on a loopback listener: the others get HTTP 403. It keeps a web
// page that rebinds its own name to 127.0.0.1 (DNS rebinding) away from a
// listener meant for this machine, such as a profiling one.
func LoopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopback(r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not a loopback name", r.Host), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackAddr reports whether the listener's address a is a loopback
// one; a TCP address is read as it is, without formatting it.
func loopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return isLoopback(a.String())
}

// isLoopback reports whether hostport (a Host header, or an address)
// names a loopback host: localhost or a loopback IP.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
