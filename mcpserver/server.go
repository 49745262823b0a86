// Package mcpserver serves task-backed tools over MCP 2026-07-28 on top of
// go-sdk: it decides per call whether a tools/call becomes a task, answers
// tasks/get, tasks/update and tasks/cancel, and guards their HTTP headers.
package mcpserver

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/task"
)

// DefaultMaxBodyBytes bounds request bodies unless Options say otherwise.
const DefaultMaxBodyBytes = 4 << 20

// LocalPrincipal is the principal of every request when no authentication
// is configured.
const LocalPrincipal = "local"

// Options configure a [Server]. The zero value is usable.
type Options struct {
	// ServerOptions are passed to go-sdk's mcp.NewServer. The Tasks
	// extension is added to their capabilities.
	ServerOptions *mcp.ServerOptions
	// Principal names who makes a request; tasks are bound to it. The
	// default is the authenticated user (the UserID of the request's
	// TokenInfo), or [LocalPrincipal] for unauthenticated requests.
	Principal func(extra *mcp.RequestExtra) string
	// MaxBodyBytes bounds request bodies (DefaultMaxBodyBytes if zero).
	MaxBodyBytes int64
	// MinPollInterval, if positive, limits how often a principal may
	// tasks/get one task: a faster poll gets HTTP 429 with Retry-After and
	// the JSON-RPC error CodePollTooFast. Off by default: clients are told
	// pollIntervalMs, and the conformance suite polls every 100-200 ms.
	MinPollInterval time.Duration
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// pages may call the server besides its own: a request with an Origin
	// header of another origin gets HTTP 403, the defence against DNS
	// rebinding and cross-site requests. Requests without Origin (programs
	// rather than browsers) are served. [New] panics on an entry that
	// [CheckOrigin] refuses.
	AllowedOrigins []string
	// DisableFastPath serves tasks/get, tasks/update and tasks/cancel
	// through go-sdk's handler like every other method, at several times
	// the cost; the answers are the same, as SSE instead of JSON.
	DisableFastPath bool
	// Logger receives logs (discarded if nil).
	Logger *slog.Logger
	// TracerProvider, if set, traces task-creating tools/call requests
	// and tasks/get, tasks/update and tasks/cancel: a server span each,
	// whose parent is the W3C trace context of the request's traceparent
	// and tracestate headers or, without them, of params._meta. A created
	// task keeps its span's traceparent, for the worker's span (see
	// engine.Options.TracerProvider). Nil means no tracing, at no cost.
	TracerProvider trace.TracerProvider
}

// Server is an MCP server whose tools may run as durable tasks. Register
// tools with [AddTool], build the engine from [Server.EngineTools], then
// serve [Server.Handler].
type Server struct {
	impl *mcp.Implementation
	// resultMeta is the _meta of every result, {serverInfo: impl}, encoded.
	resultMeta json.RawMessage
	mcp        *mcp.Server
	opts       Options
	log        *slog.Logger
	tools      map[string]*toolEntry
	eng        *engine.Engine
	origins    *http.CrossOriginProtection
	polls      *pollLimiter // nil without Options.MinPollInterval
	trc        trace.Tracer // nil without Options.TracerProvider
}

// New returns a Server for the implementation impl.
func New(impl *mcp.Implementation, opts *Options) *Server {
	s := &Server{impl: impl, tools: map[string]*toolEntry{}}
	// An Implementation is plain data: it always encodes.
	s.resultMeta, _ = json.Marshal(mcp.Meta{mcp.MetaKeyServerInfo: impl})
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxBodyBytes == 0 {
		s.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	s.origins = newCrossOrigin(s.opts.AllowedOrigins)
	if s.opts.Principal == nil {
		s.opts.Principal = defaultPrincipal
	}
	if s.opts.MinPollInterval > 0 {
		s.polls = &pollLimiter{min: s.opts.MinPollInterval, now: time.Now, last: map[string]time.Time{}}
	}
	if s.opts.TracerProvider != nil {
		s.trc = s.opts.TracerProvider.Tracer(tracerName)
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
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
	so.Capabilities = caps
	if so.Logger == nil {
		so.Logger = s.opts.Logger
	}
	s.mcp = mcp.NewServer(impl, so)
	s.mcp.AddReceivingMiddleware(s.middleware)
	s.addTaskMethods()
	return s
}

// MCPServer returns the underlying go-sdk server, for registering plain
// tools, prompts and resources.
func (s *Server) MCPServer() *mcp.Server { return s.mcp }

// EngineTools returns the engine tools of every task-capable tool added so
// far, to pass to engine.New.
func (s *Server) EngineTools() []*engine.Tool {
	var ts []*engine.Tool
	for _, t := range s.tools {
		ts = append(ts, t.engine)
	}
	return ts
}

// Handler returns the HTTP handler of the MCP endpoint, serving stateless
// 2026-07-28 with tasks run by eng. eng must have been built from
// [Server.EngineTools].
func (s *Server) Handler(eng *engine.Engine) http.Handler {
	s.eng = eng
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: s.opts.MaxBodyBytes,
		Logger:              s.opts.Logger,
	})
	return s.guard(h)
}

func defaultPrincipal(extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	return LocalPrincipal
}

// httpPrincipal returns the principal of an HTTP request that the server
// answers without go-sdk.
func (s *Server) httpPrincipal(r *http.Request) string {
	return s.opts.Principal(&mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header})
}
