// Package console is the operator console: web pages, served from assets
// embedded in the binary, to see, search and act on the tasks of a store,
// behind a sign-in of its own.
//
// Operators sign in with a token of [Tokens] (roles viewer and operator),
// kept afterwards by a session cookie; without tokens the console serves
// only a loopback address, and everyone who reaches it is the operator
// "local". Every form that changes something carries the session's CSRF
// token, and cross-origin writes are refused. The pages are the overview
// (the queue, counts by status and tool, tasks created and finished per
// minute, claim latency), the list of tasks (filters, searches, pages that
// stay fast at millions of tasks; see store.Lister), and a task's detail
// (arguments, timeline, questions and answers, result, trace id), which
// an operator may cancel. The list, the detail and the overview update
// live: see [Feed].
package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Defaults for the zero values of [Options].
const (
	// DefaultSessionTTL is how long a sign-in lasts.
	DefaultSessionTTL = 12 * time.Hour
	// DefaultOverviewTTL is how long the overview's counts are reused
	// before the store is asked again.
	DefaultOverviewTTL = 5 * time.Second
	// DefaultPollInterval is how often a live page re-reads the store
	// when no event says that something changed.
	DefaultPollInterval = time.Second
	// DefaultMaxLive bounds the live pages open at once.
	DefaultMaxLive = 64
)

// Limits that are not options.
const (
	// maxSessions bounds the sessions kept; the oldest goes first.
	maxSessions = 10_000
	// maxAccountSessions bounds the sessions of one account, so that
	// one account signing in again and again (a viewer's token in a
	// script) ends only its own oldest sessions, not everyone's.
	maxAccountSessions = 64
	// maxFormBytes bounds the body of a form.
	maxFormBytes = 8 << 10
)

// Canceller cancels a task on an operator's behalf, whoever its principal
// is; *engine.Engine implements it (engine.Engine.CancelAsOperator).
type Canceller interface {
	CancelAsOperator(ctx context.Context, id string) (*task.Record, error)
}

// Options configure a [Console]. The zero value is usable.
type Options struct {
	// Tokens are the operators who may sign in. Nil means no sign-in:
	// everyone who reaches the console is the operator "local", and the
	// console answers only requests addressed to a loopback host (so that
	// no other site can reach it by DNS rebinding); the listener must be
	// a loopback address (see CheckListen).
	Tokens *Tokens
	// Redact shows tool arguments, answers, step results, results, the
	// requests of questions and error data with every value replaced by
	// "…" (their keys and shape stay). Messages written for people (status
	// messages, a question's message, an error's message) are shown.
	Redact bool
	// Feed says when tasks may have changed, for the live pages; nil
	// means re-reading every DefaultPollInterval (see NewStoreFeed).
	Feed Feed
	// Logger receives the console's log: sign-ins and every action with
	// the operator's name, never task data. Nil means discard.
	Logger *slog.Logger
	// Now returns the current time (time.Now if nil).
	Now func() time.Time
	// SessionTTL is how long a sign-in lasts (DefaultSessionTTL if zero).
	SessionTTL time.Duration
	// OverviewTTL is how long the overview's counts are reused
	// (DefaultOverviewTTL if zero).
	OverviewTTL time.Duration
	// MaxLive bounds the live pages open at once (DefaultMaxLive if
	// zero), and half of it those of one account (but the local account
	// of a console without tokens), so that one account cannot hold them
	// all; more get HTTP 503 and re-connect later.
	MaxLive int
}

// Console is the operator console, an http.Handler.
type Console struct {
	st       store.Store
	ls       store.Lister
	canceler Canceller
	opts     Options
	log      *slog.Logger
	sessions *sessions
	pages    map[string]*template.Template
	handler  http.Handler
	overview overviewCache

	liveMu   sync.Mutex
	live     int             // open live pages
	liveOf   map[Account]int // open live pages by account
	liveEach int             // most open live pages of one account
}

var _ http.Handler = (*Console)(nil)

// New returns the console of st, which must implement store.Lister, with c
// cancelling tasks.
func New(st store.Store, c Canceller, opts *Options) (*Console, error) {
	ls, ok := st.(store.Lister)
	if !ok {
		return nil, fmt.Errorf("console: the store (%T) cannot list tasks", st)
	}
	if c == nil {
		return nil, errors.New("console: the Canceller is nil: pass the engine")
	}
	con := &Console{st: st, ls: ls, canceler: c}
	if opts != nil {
		con.opts = *opts
	}
	o := &con.opts
	switch {
	case o.SessionTTL < 0:
		return nil, fmt.Errorf("console: Options.SessionTTL is %v: use zero for the default or a positive duration", o.SessionTTL)
	case o.OverviewTTL < 0:
		return nil, fmt.Errorf("console: Options.OverviewTTL is %v: use zero for the default or a positive duration", o.OverviewTTL)
	case o.MaxLive < 0:
		return nil, fmt.Errorf("console: Options.MaxLive is %d: use zero for the default or a positive number", o.MaxLive)
	}
	o.SessionTTL = or(o.SessionTTL, DefaultSessionTTL)
	o.OverviewTTL = or(o.OverviewTTL, DefaultOverviewTTL)
	o.MaxLive = or(o.MaxLive, DefaultMaxLive)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Feed == nil {
		o.Feed = PollFeed(DefaultPollInterval)
	}
	con.log = o.Logger
	if con.log == nil {
		con.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if con.pages, err = parsePages(); err != nil {
		return nil, err
	}
	con.sessions = newSessions(o.SessionTTL, maxSessions, maxAccountSessions, o.Now)
	con.liveOf, con.liveEach = map[Account]int{}, max(o.MaxLive/2, 1)
	con.overview.ttl = o.OverviewTTL
	con.handler = http.NewCrossOriginProtection().Handler(con.routes())
	return con, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// routes returns the console's mux.
func (c *Console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", staticHandler())
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.signedIn(c.logout))
	mux.HandleFunc("GET /{$}", c.signedIn(c.overviewPage))
	mux.HandleFunc("GET /tasks", c.signedIn(c.listPage))
	mux.HandleFunc("GET /tasks/{id}", c.signedIn(c.detailPage))
	mux.HandleFunc("POST /tasks/{id}/cancel", c.signedIn(c.cancel))
	mux.HandleFunc("GET /live/overview", c.signedIn(c.liveOverview))
	mux.HandleFunc("GET /live/tasks", c.signedIn(c.liveList))
	mux.HandleFunc("GET /live/tasks/{id}", c.signedIn(c.liveDetail))
	return mux
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if c.opts.Tokens == nil && !loopbackHost(hostOnly(r.Host)) {
		// A page of another site that re-pointed its own name at
		// 127.0.0.1 (DNS rebinding) would otherwise read the console.
		http.Error(w, "This console answers only at a loopback address (127.0.0.1, [::1] or localhost).", http.StatusForbidden)
		return
	}
	c.handler.ServeHTTP(w, r)
}

// hostOnly returns the host of a Host header, without its port.
func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return hostport
}

// signedIn wraps h so that it runs with the request's session. Without
// tokens every request gets one (a cookie carries it, and its CSRF token)
// for the local operator, but for what another site's page loads (an
// image, a script, a frame: anything but a top-level page), which gets
// HTTP 403: such loads by the thousand would otherwise make sessions until
// the operator's own was evicted. With tokens, a request without a session is sent to the
// sign-in page, or gets HTTP 401 if it is not a page.
func (c *Console) signedIn(h func(w http.ResponseWriter, r *http.Request, se *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		se := c.sessions.fromRequest(r)
		if se == nil && c.opts.Tokens == nil && r.Header.Get("Sec-Fetch-Site") == "cross-site" && r.Header.Get("Sec-Fetch-Dest") != "document" {
			http.Error(w, "Forbidden: another site's page may not load the console.", http.StatusForbidden)
			return
		}
		if se == nil && c.opts.Tokens == nil {
			se = c.sessions.create(localAccount)
			c.sessions.setCookie(w, r, se)
		}
		if se == nil {
			switch {
			case r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream":
				http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			case r.Method == http.MethodPost:
				// A form of a page whose session has ended (expired, or
				// signed out in another tab): nothing is done, and the
				// operator signs in and comes back to the page, whose
				// form they may send again (POST /tasks/{id}/cancel is
				// sent from /tasks/{id}).
				http.Redirect(w, r, "/login?next="+urlQueryEscape(path.Dir(r.URL.Path)), http.StatusSeeOther)
			default:
				http.Error(w, "Sign in first.", http.StatusUnauthorized)
			}
			return
		}
		h(w, r, se)
	}
}
