// Package mcpserver serves MCP tools whose calls may run as durable tasks
// (the Tasks extension of MCP 2026-07-28), on top of go-sdk.
//
// A server is built in four steps: [New] with the [Options] that name its
// store, [AddTool] for each tool (a handler of go-sdk's shape, as
// [mcp.AddTool] takes), [Server.Start], then [Server.Handler] served over
// HTTP (or [Server.ServeStdio]); [Server.Shutdown] drains it. Plain go-sdk
// tools, prompts and resources go on [Server.MCPServer].
//
//	st, err := sqlite.Open(ctx, "tasks.db", nil)
//	…
//	srv := mcpserver.New(&mcp.Implementation{Name: "reports", Version: "1.0"}, &mcpserver.Options{Store: st})
//	err = mcpserver.AddTool(srv, &mcp.Tool{Name: "export"}, mcpserver.ToolOptions{}, export)
//	…
//	if err := srv.Start(ctx); err != nil { … }
//	defer srv.Shutdown(context.WithoutCancel(ctx))
//	http.ListenAndServe("127.0.0.1:8080", srv.Handler())
//
// Each call of a tool is decided by its [TaskMode]: inline, or as a task
// for a client that declares the extension (the zero [ToolOptions] is
// [TaskOptional]). A handler reaches its call through its ctx: [Elicit]
// asks the user (an MRTR round inline, a task input request inside a
// task), [SetStatus] reports progress, [Step] keeps work that a re-run
// must not repeat, [CallFrom] says which it is, and context.Cause(ctx)
// tells a cancel ([ErrCancelRequested]) from a draining server
// ([ErrShutdown]). A task whose handler waits for an answer longer than
// engine.Options.SuspendAfter (at once past engine.Options.MaxHeld
// waiting so) is suspended and its handler run again once
// answered (unless [ToolOptions.Hold]): [Elicit] then returns the stored
// answer and [Step] the stored results. [Server.HealthHandler],
// [Server.ReadyHandler] and [Server.MetricsHandler] serve the operational
// endpoints.
//
// The server answers tasks/get, tasks/update and tasks/cancel, pushes task
// changes to subscriptions/listen when [Options.ChangeFeed] is set, guards
// their HTTP headers, serves the experimental tasks of MCP 2025-11-25 on
// the same engine (legacy*.go), and both over stdio.
package mcpserver

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/changefeed"
	"github.com/mcptasks/mcptasks/task"
)

// DefaultMaxBodyBytes bounds request bodies unless Options say otherwise.
const DefaultMaxBodyBytes = 4 << 20

// LocalPrincipal is the principal of every request when no authentication
// is configured.
const LocalPrincipal = "local"

// Options configure a [Server]. Store is required; the other fields have
// sane zero values.
type Options struct {
	// Store keeps the tasks: sqlite.Open for a durable file on one
	// machine, postgres.Open for replicas, memory.New for tests. The
	// server owns it: [Server.Shutdown] closes it.
	Store store.Store
	// Engine configures the engine that [Server.Start] builds on Store:
	// workers, lease, TTL and poll defaults. Its Logger and TracerProvider
	// default to the server's; its Observer to the server's metrics.
	Engine *engine.Options
	// Registry receives the server's Prometheus metrics (see
	// [Server.MetricsHandler]); nil means a registry of the server's own,
	// with Go's runtime and process collectors.
	Registry *prometheus.Registry
	// ServerOptions are passed to go-sdk's mcp.NewServer. The Tasks
	// extension is added to their capabilities.
	ServerOptions *mcp.ServerOptions
	// Principal names who makes a request; tasks are bound to it. The
	// default is the authenticated user (the UserID of the request's
	// TokenInfo), or [LocalPrincipal] for unauthenticated requests. It must
	// not return "": the HTTP handler refuses a request without a
	// principal (HTTP 500), as the default has none for an authenticated
	// request whose TokenInfo has no UserID.
	Principal func(extra *mcp.RequestExtra) string
	// MaxBodyBytes bounds request bodies (DefaultMaxBodyBytes if zero).
	MaxBodyBytes int64
	// MaxInflightBytes bounds the bytes that the requests handled at once
	// hold, across all connections: their bodies, and the tasks that
	// replies and notices carry (DefaultMaxInflightBytes if zero; at least
	// MaxBodyBytes). A body's bytes are taken as they arrive, so a body
	// declared and not sent holds at most its first 16 KiB. A request
	// whose body does not fit gets HTTP 503, Retry-After and -32603; a
	// tasks/get whose task does not fit gets -32603. Clients retry both. A
	// 2025-11-25 tasks/result, and a task subscription's notice, whose
	// task does not fit waits, and is sent once it fits. Requests that
	// stay (streams: subscriptions/listen, a 2025-11-25 tasks/result; a
	// tools/call that runs its tool inline) hold their bodies while they
	// last, and may hold at most half of it together, and those of one
	// principal half of that half: past that a new stream gets HTTP 503
	// and an inline call -32603, the other requests keep the other half,
	// and the other principals' streams and inline calls theirs.
	// LocalPrincipal, the one principal of a server without
	// authentication, is held by the half alone.
	MaxInflightBytes int64
	// MaxJSONDepth bounds how deeply a request body's JSON may nest
	// (DefaultMaxJSONDepth if zero). A deeper body is refused with -32602
	// and HTTP 400 before anything decodes it.
	MaxJSONDepth int
	// MaxArgumentsBytes bounds the arguments of a tools/call
	// (DefaultMaxArgumentsBytes if zero); larger ones get -32602.
	MaxArgumentsBytes int64
	// MinPollInterval, if positive, limits how often a principal may
	// tasks/get one task: a faster poll gets HTTP 429 with Retry-After and
	// the JSON-RPC error CodePollTooFast. Off by default: clients are told
	// pollIntervalMs, and the conformance suite polls every 100-200 ms.
	// It may not be longer than the poll interval any task tool suggests
	// (Start refuses it).
	MinPollInterval time.Duration
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// pages may call the server besides its own: a request with an Origin
	// header of another origin gets HTTP 403, the defence against DNS
	// rebinding and cross-site requests. Requests without Origin (programs
	// rather than browsers) are served. [New] panics on an entry that
	// [CheckOrigin] refuses.
	AllowedOrigins []string
	// ChangeFeed tells task subscriptions (subscriptions/listen with
	// notifications.taskIds) which tasks changed: a feed of Store's
	// (changefeed.New(st, nil)), which the server runs from [Server.Start]
	// to [Server.Shutdown]; others (the console, a read cache) may watch
	// it too. Nil
	// means the server offers no task notifications: such a listen is
	// acknowledged with an empty taskIds and ends at once (clients poll).
	ChangeFeed *changefeed.Feed
	// MaxSubscriptions bounds the task subscriptions a principal may hold
	// open at once (DefaultMaxSubscriptions if zero); MaxSubscribedTasks
	// the task ids they may name together, and one of them alone
	// (DefaultMaxSubscribedTasks if zero). Past them a listen gets HTTP
	// 429 and CodeTooManySubscriptions, or -32602 for one listen that
	// names too many ids. The body of a task subscription, held while it
	// is open, may be at most 64 KiB plus 128 bytes per MaxSubscribedTasks
	// (HTTP 413).
	MaxSubscriptions   int
	MaxSubscribedTasks int
	// MaxStreams bounds the other streams a principal may hold open at
	// once (DefaultMaxStreams if zero): subscriptions/listen without
	// taskIds (a go-sdk client keeps one open for its whole session) and
	// 2025-11-25 tasks/result, together. Past it one gets HTTP 429 and
	// CodeTooManySubscriptions. The body of such a stream, held while it
	// is open, may be at most 64 KiB (HTTP 413). LocalPrincipal, the one
	// principal of a server without authentication, is not counted: the
	// half of MaxInflightBytes for requests that stay holds it.
	MaxStreams int
	// MaxInlineCalls bounds the tools/call requests running at once on
	// this server (DefaultMaxInlineCalls if zero): those that run their
	// tool inline, in the request, which the workers' bound does not
	// count, above all. A command tool's call runs a process, a proxied
	// one may start an upstream: without a bound, a burst of calls would
	// exhaust the machine's processes or threads. Past it a call gets
	// -32603, which says to try again. One principal may run at most half
	// of them (at least one), so that its slow calls cannot refuse the
	// others'; LocalPrincipal, the one principal of a server without
	// authentication, may run them all.
	MaxInlineCalls int
	// ListenKeepAlive is how often an idle task subscription sends an SSE
	// comment, so that proxies keep it open (DefaultListenKeepAlive if
	// zero).
	ListenKeepAlive time.Duration
	// DisableFastPath serves tasks/get, tasks/update and tasks/cancel
	// through go-sdk's handler like every other method, at several times
	// the cost; the answers are the same, as SSE instead of JSON.
	DisableFastPath bool
	// Logger receives logs (discarded if nil).
	Logger *slog.Logger
	// SessionKey signs the Mcp-Session-Id of MCP 2025-11-25 sessions,
	// which carry the session's capabilities and principal, so that any
	// replica that has the key serves any session. Replicas behind one
	// endpoint must share it; at least SessionKeySize bytes. Nil means a
	// random key: sessions then last as long as the process.
	SessionKey []byte
	// TracerProvider, if set, traces task-creating tools/call requests
	// and tasks/get, tasks/update and tasks/cancel: a server span each,
	// whose parent is the W3C trace context of the request's traceparent
	// and tracestate headers or, without them, of params._meta. A created
	// task keeps its span's traceparent, for the worker's span (see
	// engine.Options.TracerProvider). Nil means no tracing, at no cost.
	TracerProvider trace.TracerProvider
}

// Server is an MCP server whose tools may run as durable tasks. Add tools
// with [AddTool], then [Server.Start] it and serve [Server.Handler].
type Server struct {
	impl *mcp.Implementation
	// resultMeta is the _meta of every result, {serverInfo: impl}, encoded.
	resultMeta json.RawMessage
	mcp        *mcp.Server
	opts       Options
	log        *slog.Logger
	reg        *prometheus.Registry

	mu       sync.Mutex // guards tools until Start; they are read-only after
	tools    map[string]*toolEntry
	eng      atomic.Pointer[engine.Engine] // set by Start
	draining atomic.Bool                   // set by Shutdown
	stopFeed func()                        // stops Options.ChangeFeed and waits for it; set by Start

	origins *http.CrossOriginProtection
	limits  limits
	polls   *pollLimiter // nil without Options.MinPollInterval
	subs    *subLimiter  // Options.MaxSubscriptions, MaxSubscribedTasks, MaxStreams
	// ending is closed by EndSubscriptions.
	ending      chan struct{}
	endOnce     sync.Once
	inflight    *budget      // Options.MaxInflightBytes
	sessionKey  []byte       // signs 2025-11-25 session ids
	legacyCalls cancellable  // 2025-11-25 requests that notifications/cancelled may end
	inline      inlineCalls  // tools/call requests in flight, which Shutdown drains
	trc         trace.Tracer // nil without Options.TracerProvider
}

// New returns a Server for the implementation impl.
func New(impl *mcp.Implementation, opts *Options) *Server {
	s := &Server{impl: impl, tools: map[string]*toolEntry{}, ending: make(chan struct{})}
	// An Implementation is plain data: it always encodes.
	s.resultMeta, _ = json.Marshal(mcp.Meta{mcp.MetaKeyServerInfo: impl})
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxBodyBytes == 0 {
		s.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.opts.MaxInflightBytes == 0 {
		s.opts.MaxInflightBytes = DefaultMaxInflightBytes
	}
	s.inflight = newBudget(max(s.opts.MaxInflightBytes, s.opts.MaxBodyBytes))
	s.origins = newCrossOrigin(s.opts.AllowedOrigins)
	s.limits = limits{depth: s.opts.MaxJSONDepth, args: s.opts.MaxArgumentsBytes}
	if s.limits.depth <= 0 {
		s.limits.depth = DefaultMaxJSONDepth
	}
	if s.limits.args <= 0 {
		s.limits.args = DefaultMaxArgumentsBytes
	}
	if s.opts.Principal == nil {
		s.opts.Principal = defaultPrincipal
	}
	if s.opts.MinPollInterval > 0 {
		s.polls = &pollLimiter{min: s.opts.MinPollInterval, now: time.Now, max: maxPollEntries, last: map[string]time.Time{}}
	}
	if s.opts.MaxSubscriptions <= 0 {
		s.opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if s.opts.MaxSubscribedTasks <= 0 {
		s.opts.MaxSubscribedTasks = DefaultMaxSubscribedTasks
	}
	if s.opts.MaxInlineCalls <= 0 {
		s.opts.MaxInlineCalls = DefaultMaxInlineCalls
	}
	s.inline.setMax(s.opts.MaxInlineCalls)
	if s.opts.MaxStreams <= 0 {
		s.opts.MaxStreams = DefaultMaxStreams
	}
	s.subs = &subLimiter{maxSubs: s.opts.MaxSubscriptions, maxIDs: s.opts.MaxSubscribedTasks, held: map[string]subCount{},
		streams: shares{each: int64(s.opts.MaxStreams)}}
	s.sessionKey = sessionKey(s.opts.SessionKey)
	if s.opts.TracerProvider != nil {
		s.trc = s.opts.TracerProvider.Tracer(tracerName)
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.reg = s.opts.Registry
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if feed := s.opts.ChangeFeed; feed != nil {
		s.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcptasks_change_feed_up", Help: "1 while the store announces changes (Postgres: the change feed's LISTEN connection is up), 0 while subscriptions and the read cache fall back to re-reading."},
				func() float64 {
					if feed.Up() {
						return 1
					}
					return 0
				}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcptasks_task_subscriptions", Help: "Task subscriptions (subscriptions/listen with taskIds) open on this process."},
				func() float64 { return float64(s.Subscriptions()) }),
		)
	}
	so := &mcp.ServerOptions{}
	if s.opts.ServerOptions != nil {
		c := *s.opts.ServerOptions
		so = &c
	}
	caps := &mcp.ServerCapabilities{}
	if so.Capabilities != nil {
		c := *so.Capabilities
		caps = &c
	}
	caps.AddExtension(task.ExtensionID, nil)
	// Say that task-creating tools/call honour idempotency keys, so that
	// clients know a retry with the same key is safe (see idempotency.go).
	caps.Experimental = maps.Clone(caps.Experimental)
	if caps.Experimental == nil {
		caps.Experimental = map[string]any{}
	}
	caps.Experimental[task.MetaIdempotencyKey] = map[string]any{}
	so.Capabilities = caps
	if so.Logger == nil {
		so.Logger = s.opts.Logger
	}
	s.mcp = mcp.NewServer(impl, so)
	s.mcp.AddReceivingMiddleware(s.middleware)
	s.addTaskMethods()
	return s
}

// EndSubscriptions ends every open task subscription, and every later
// one right after its acknowledgement, with the listen's response, and
// every 2025-11-25 tasks/result still waiting for its task with -32603
// (send it again), as a server shutting down does (register it with
// http.Server.RegisterOnShutdown, which otherwise waits for the streams).
func (s *Server) EndSubscriptions() {
	s.endOnce.Do(func() { close(s.ending) })
}

// MCPServer returns the underlying go-sdk server, for registering plain
// tools, prompts and resources.
func (s *Server) MCPServer() *mcp.Server { return s.mcp }

// Handler returns the HTTP handler of the MCP endpoint, serving stateless
// 2026-07-28 (and the sessions of 2025-11-25) with the tasks of the engine
// that [Server.Start] builds. Before Start, it answers every request with
// HTTP 503 and -32603.
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: s.opts.MaxBodyBytes,
		Logger:              s.opts.Logger,
		// A 2026-07-28 POST is the whole call: a client that goes away (or
		// a stdio notifications/cancelled) ends the handler of an inline
		// call, whose answer nobody could read.
		PropagateRequestCancellation: true,
	})
	g := s.guard(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.eng.Load() == nil {
			writeError(w, http.StatusServiceUnavailable, nil, codeInternalError, "The server has not started; try again")
			return
		}
		g.ServeHTTP(w, r)
	})
}

// defaultPrincipal is the TokenInfo's UserID of an authenticated request,
// LocalPrincipal for the others. An authenticated request without a
// UserID has none (""), and is refused: it must not act as the one local
// principal, on every unauthenticated request's tasks.
func defaultPrincipal(extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil {
		return extra.TokenInfo.UserID
	}
	return LocalPrincipal
}

// httpPrincipal returns the principal of an HTTP request that the server
// answers without go-sdk.
func (s *Server) httpPrincipal(r *http.Request) string {
	return s.opts.Principal(&mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header})
}
