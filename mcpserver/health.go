package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcptasks/mcptasks/store"
)

// readyTimeout bounds the store's ping of a readiness check.
const readyTimeout = 2 * time.Second

// HealthHandler answers "ok" while the process serves HTTP at all: a
// liveness check (/healthz). It answers anyone: it tells nothing more.
func (s *Server) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
}

// ReadyHandler answers "ready" when the server may take requests: it has
// started, is not draining, and its store answers a ping within 2 s (for
// stores that can be pinged, store.Pinger). Otherwise it answers HTTP 503
// saying why (a store's error is logged, not sent: /readyz answers anyone),
// so that a load balancer sends requests elsewhere (/readyz).
func (s *Server) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case s.eng.Load() == nil:
			http.Error(w, "not started", http.StatusServiceUnavailable)
			return
		case s.draining.Load():
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		if p, ok := s.opts.Store.(store.Pinger); ok {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := p.Ping(ctx); err != nil {
				// The cause is logged, not sent: /readyz answers anyone,
				// and a driver's error names the database, its user and
				// address.
				s.log.Warn("readyz: store unavailable", "err", err)
				http.Error(w, "store unavailable", http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
}

// MetricsHandler serves the server's Prometheus metrics (/metrics): the
// engine's store calls and task flow, the live tasks by status, and those
// of [Options.Registry] (by default Go's runtime and the process). A
// scrape counts the live tasks in the store (at most once every 5 s), so
// at most two are served at once; more get HTTP 503. It is behind the
// Host and Origin checks of the MCP endpoint (see Protect): a page of
// another origin, or one that rebinds its name to a loopback listener,
// does not read it. Scrape a loopback listener under a loopback name
// (localhost, 127.0.0.1).
func (s *Server) MetricsHandler() http.Handler {
	return s.Protect(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{MaxRequestsInFlight: 2}))
}

// Mux returns a mux serving the MCP endpoint at /mcp and the operational
// endpoints at /healthz, /readyz and /metrics: everything a server needs
// in one handler.
func (s *Server) Mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler())
	mux.Handle("GET /healthz", s.HealthHandler())
	mux.Handle("GET /readyz", s.ReadyHandler())
	mux.Handle("GET /metrics", s.MetricsHandler())
	return mux
}
