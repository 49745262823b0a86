package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcptasks/mcptasks/cmdtool"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/fixtures"
	"github.com/mcptasks/mcptasks/internal/tasktools"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/changefeed"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/store/postgres"
	"github.com/mcptasks/mcptasks/store/sqlite"
)

// version is the version reported in serverInfo.
const version = "0.1.0"

// buildVersion is the version "mcptasks --version" prints: the main
// module's version that the Go toolchain recorded in the binary (a tag, or
// a pseudo-version of the commit it was built from), else version, the
// one serverInfo reports (a build outside a module, or "go run", which
// records "(devel)").
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return version
}

// runFlags are the flags shared by every command that runs tools: serve and
// worker. Each process must define the same tools.
type runFlags struct {
	store        string
	cacheBytes   int64
	workers      int
	lease        time.Duration
	suspendAfter time.Duration
	maxHeld      int
	maxHolding   int
	drainTimeout time.Duration
	demoStep     time.Duration
	demo         bool
	logLevel     string
	tools        toolsFlag
	otelEndpoint string
}

func (f *runFlags) register(fl *pflag.FlagSet, workersHelp string) {
	fl.StringVar(&f.store, "store", "sqlite:mcptasks.db", "where tasks are kept: sqlite:PATH (durable, one machine), postgres://USER@HOST/DB (durable, shared by replicas) or memory: (lost on exit)")
	fl.Int64Var(&f.cacheBytes, "cache-bytes", sqlite.DefaultCacheBytes, "with a sqlite: or postgres:// store, the most bytes of task records kept in memory to answer reads of tasks (tasks/get polls, a worker's re-reads) without reading the store (a record over a sixteenth of it is not kept)")
	fl.IntVar(&f.workers, "workers", engine.DefaultWorkers, workersHelp)
	fl.DurationVar(&f.lease, "lease", engine.DefaultLease, "how long a worker's claim on a task lasts without a heartbeat (sent every lease/3); a crashed worker's tasks are resumed after it")
	fl.DurationVar(&f.suspendAfter, "suspend-after", engine.DefaultSuspendAfter, "how long a task of a re-runnable tool (the demo tools that ask) may wait for input holding a handler and its lease before it is suspended: it then costs no memory and no work until it is answered, and its handler runs again with the stored answers; 0 suspends at once. Command tools (--tools) and proxied calls hold instead")
	fl.IntVar(&f.maxHeld, "max-held", engine.DefaultMaxHeld, "how many tasks of re-runnable tools may wait for input holding a handler and its lease at once (for up to --suspend-after); a task that asks while as many hold is suspended at once; 0 suspends every one at once")
	fl.IntVar(&f.maxHolding, "max-holding", engine.DefaultMaxHolding, "how many tasks of tools that hold (command tools, proxied calls: their process or upstream session stays) may wait for input without taking a worker; past it a task that waits keeps its worker, and new tasks wait for a free one; 0: every one keeps its worker")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 10*time.Second, "on SIGTERM, how long running tasks (and the requests being served, if any) get, together, to finish before they are stopped and the process exits (a command tool's process gets its grace on top)")
	fl.DurationVar(&f.demoStep, "demo-step", time.Second, "pace of the built-in demo tools (export_report works 1.5 steps, asks, works 1.5 steps)")
	fl.BoolVar(&f.demo, "demo", false, "serve the built-in demo tools and conformance fixtures beside the tools of --tools (without --tools they are served anyway)")
	fl.StringVar(&f.logLevel, "log-level", "info", logLevelHelp)
	fl.Var(&f.tools, "tools", "tools.yaml `file` of command tools to serve as task-backed tools (see examples/tools.yaml); checked at start-up, every process of a deployment needs the same file")
	fl.StringVar(&f.otelEndpoint, "otel-endpoint", "", "send OpenTelemetry traces (OTLP over HTTP) to the collector at this base `URL`, e.g. http://127.0.0.1:4318 (spans go to URL/v1/traces); default: the collector of OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT if set, else no tracing")
}

// toolsFlag is --tools. The file is loaded and checked when the flag is
// parsed, so a bad file stops the command before it opens the store or
// listens.
type toolsFlag struct {
	path string
	cfg  *cmdtool.Config
}

func (f *toolsFlag) String() string { return f.path }

func (f *toolsFlag) Type() string { return "file" }

func (f *toolsFlag) Set(path string) error {
	cfg, err := cmdtool.Load(path)
	if err != nil {
		return err
	}
	f.path, f.cfg = path, cfg
	return nil
}

// runtime is what serve and worker share: logs, the store, and the server
// with its tools, which runs them once started.
type runtime struct {
	log *slog.Logger
	st  store.Store // the server's; it closes it
	srv *mcpserver.Server
	tp  *sdktrace.TracerProvider // nil when tracing is off
	// feed is the store's change feed (serve only; nil for worker): task
	// subscriptions, the Postgres read cache and the console use it.
	feed *changefeed.Feed // run by srv from its Start to its Shutdown
}

// runtimeOptions are the settings of a runtime that are not flags of every
// command.
type runtimeOptions struct {
	maxBody                            int64         // request body bound of the MCP endpoint (serve)
	maxInflight                        int64         // bound on the bytes of requests in flight (serve)
	maxJSONDepth                       int           // nesting bound of request bodies (serve)
	maxArguments                       int64         // tools/call arguments bound (serve)
	minPollInterval                    time.Duration // optional poll limit (serve)
	allowedOrigins                     []string      // browser origins besides the server's own (serve)
	feed                               bool          // run the store's change feed (serve)
	noReadCache                        bool          // no read cache for a postgres store (serve)
	maxSubscriptions, maxSubscribedIDs int           // bounds of task subscriptions per principal (serve)
	maxStreams                         int           // bound of the other streams per principal (serve)
	maxInlineCalls                     int           // bound of the tools/call running at once (serve)
	tools                              *toolSet      // what to serve; the built-in tools if nil
	sessionKey                         []byte        // signs 2025-11-25 session ids (serve); random if nil
}

// defaultGCPercent is the garbage collector's target (GOGC) of serve,
// worker and proxy. Their live heap is small (about 10 MiB, even beside a
// million waiting tasks) and their allocation rate high, so Go's default
// of 100 collects every few MiB allocated: up to a sixth of a busy
// server's CPU (BENCHMARKS.md, "Garbage collection"). 400 lets the heap
// grow to five times the live heap between collections; the soft memory
// limit of gcSettings keeps the bound of the README's "Memory" section.
const defaultGCPercent = 400

// gcSettings returns the collector's settings for a process with the
// given bounds, each -1 where the environment set it (GOGC, GOMEMLIMIT),
// which the Go runtime has applied: the target defaultGCPercent, and a
// soft memory limit of one and a half times the largest live heap that
// the README's memory formula allows for (the read cache, and four times
// the in-flight budget). Near the limit the collector runs more often: at
// that largest live heap, as often as GOGC=50 would, so the process stays
// under the formula. Only handlers that hold more than the limit
// would make it collect without pause (the Go runtime caps that at half
// the CPU); set GOMEMLIMIT for them.
func gcSettings(getenv func(string) string, cacheBytes, inflightBytes int64) (percent int, limit int64) {
	percent, limit = -1, -1
	if getenv("GOGC") == "" {
		percent = defaultGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		limit = 3 * (cacheBytes + 4*inflightBytes) / 2
	}
	return percent, limit
}

// logLevelHelp is the help of every command's --log-level.
const logLevelHelp = "log level: debug, info, warn or error"

// parseLogLevel parses a --log-level value; a value it does not know is a
// usage error that lists the ones it does.
func parseLogLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return 0, usageError("--log-level %q: want debug, info, warn or error", s)
	}
	return level, nil
}

// newLogger returns the logger of a command, on stderr at the --log-level
// level (a usage error if it is not one).
func newLogger(level string) (*slog.Logger, error) {
	l, err := parseLogLevel(level)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// check refuses flag values that no runtime can take (a usage error).
func (f *runFlags) check() error {
	if _, err := parseLogLevel(f.logLevel); err != nil {
		return err
	}
	if err := checkStore(f.store); err != nil {
		return err
	}
	if f.workers < 0 {
		return usageError("--workers must be 0 or more, got %d", f.workers)
	}
	if f.lease < 30*time.Millisecond {
		return usageError("--lease must be at least 30ms, got %s", f.lease)
	}
	if f.suspendAfter < 0 {
		return usageError("--suspend-after must be 0 (at once) or more, got %s", f.suspendAfter)
	}
	if f.drainTimeout < 0 {
		return usageError("--drain-timeout must be 0 (cancel at once) or more, got %s", f.drainTimeout)
	}
	if f.maxHolding < 0 {
		return usageError("--max-holding must be 0 (none) or more, got %d", f.maxHolding)
	}
	if f.maxHeld < 0 {
		return usageError("--max-held must be 0 (none) or more, got %d", f.maxHeld)
	}
	if f.cacheBytes <= 0 {
		return usageError("--cache-bytes must be positive, got %d", f.cacheBytes)
	}
	if f.demoStep <= 0 {
		return usageError("--demo-step must be positive, got %s", f.demoStep)
	}
	return nil
}

// newRuntime validates f and builds the runtime.
func newRuntime(ctx context.Context, f *runFlags, o runtimeOptions) (_ *runtime, err error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	log, _ := newLogger(f.logLevel) // checked
	percent, limit := gcSettings(os.Getenv, f.cacheBytes, o.maxInflight)
	if percent >= 0 {
		debug.SetGCPercent(percent)
	}
	if limit >= 0 {
		debug.SetMemoryLimit(limit)
	}
	tp, otlpTo, err := newTracerProvider(ctx, f.otelEndpoint, os.Getenv)
	if err != nil {
		return nil, err
	}
	var tracing trace.TracerProvider // a nil interface when off, not a nil *TracerProvider
	if tp != nil {
		tracing = tp
		log.Info("tracing", "otlp_endpoint", otlpTo)
		defer func() {
			if err != nil {
				_ = tp.Shutdown(context.WithoutCancel(ctx))
			}
		}()
	}

	ts := o.tools
	if ts == nil {
		ts = f.builtinTools()
	}
	st, err := openStore(ctx, f.store, &sqlite.Options{CacheBytes: f.cacheBytes})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	var feed *changefeed.Feed
	if o.feed {
		feed = changefeed.New(st, &changefeed.Options{Logger: log})
		if pg, ok := st.(*postgres.Store); ok && !o.noReadCache {
			pg.UseReadCache(feed, 0, f.cacheBytes)
		}
	}
	srv := mcpserver.New(&mcp.Implementation{Name: "mcptasks", Version: version}, &mcpserver.Options{
		Store:             st,
		Engine:            &engine.Options{Workers: zeroIsNone(f.workers), Lease: f.lease, SuspendAfter: zeroIsNone(f.suspendAfter), MaxHeld: zeroIsNone(f.maxHeld), MaxHolding: zeroIsNone(f.maxHolding)},
		ServerOptions:     ts.serverOptions,
		MaxBodyBytes:      o.maxBody,
		MaxInflightBytes:  o.maxInflight,
		MaxJSONDepth:      o.maxJSONDepth,
		MaxArgumentsBytes: o.maxArguments,
		MinPollInterval:   o.minPollInterval,
		SessionKey:        o.sessionKey,
		AllowedOrigins:    o.allowedOrigins,
		Logger:            log,
		TracerProvider:    tracing,
		ChangeFeed:        feed,

		MaxSubscriptions:   o.maxSubscriptions,
		MaxInlineCalls:     o.maxInlineCalls,
		MaxSubscribedTasks: o.maxSubscribedIDs,
		MaxStreams:         o.maxStreams,
	})
	if err := ts.register(srv); err != nil {
		return nil, err
	}
	return &runtime{log: log, st: st, srv: srv, tp: tp, feed: feed}, nil
}

// start starts the server's engine: its workers and sweeper run until
// drain, whatever becomes of ctx.
func (rt *runtime) start(ctx context.Context) error {
	if err := rt.srv.Start(context.WithoutCancel(ctx)); err != nil {
		rt.st.Close()
		if errors.Is(err, mcpserver.ErrMinPollInterval) {
			return usageError("--min-poll-interval: %w", err)
		}
		return err
	}
	return nil
}

// toolSet is what a process serves: the options of its MCP server and the
// tools it registers on it.
type toolSet struct {
	serverOptions *mcp.ServerOptions
	register      func(*mcpserver.Server) error
}

// builtinTools is the tool set of serve and worker: the command tools of
// --tools, or, without --tools or with --demo, the conformance fixtures
// and the demo tools.
func (f *runFlags) builtinTools() *toolSet {
	demo := f.tools.cfg == nil || f.demo
	ts := &toolSet{}
	if demo {
		ts.serverOptions = fixtures.ServerOptions()
	}
	ts.register = func(srv *mcpserver.Server) error {
		if demo {
			fixtures.RegisterCore(srv.MCPServer())
			if err := tasktools.Register(srv, &tasktools.Options{Step: f.demoStep}); err != nil {
				return err
			}
		}
		if f.tools.cfg != nil {
			// A command runs as the server's user: it must not read the
			// server's environment (its secrets) through /proc.
			if err := hideFromCommands(); err != nil {
				return fmt.Errorf("--tools: hide the server's /proc from its commands: %w", err)
			}
			// Nor inherit the descriptors the server inherited.
			if err := closeInheritedOnExec(); err != nil {
				return fmt.Errorf("--tools: keep the server's inherited file descriptors from its commands: %w", err)
			}
			if err := cmdtool.Register(srv, f.tools.cfg); err != nil {
				return fmt.Errorf("--tools: %w", err)
			}
		}
		return nil
	}
	return ts
}

// drain stops the engine, giving running handlers until ctx is done, and
// closes the store.
func (rt *runtime) drain(ctx context.Context) {
	if err := rt.srv.Shutdown(ctx); err != nil {
		rt.log.Warn("drain", "err", err)
	}
	if rt.tp != nil {
		// After the engine: the spans of the runs that drained are sent too.
		ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
		defer cancel()
		if err := rt.tp.Shutdown(ctx); err != nil {
			rt.log.Warn("flush traces", "err", err)
		}
	}
	rt.log.Info("stopped")
}

// drainFor is drain within timeout.
func (rt *runtime) drainFor(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rt.drain(ctx)
}

// openStore opens the store named by a --store value; sqlite: stores get
// so, and the directory of their file is made if it is missing (a fresh
// workspace's .mcptasks/, say).
func openStore(ctx context.Context, spec string, so *sqlite.Options) (store.Store, error) {
	if err := checkStore(spec); err != nil {
		return nil, err
	}
	scheme, rest, _ := strings.Cut(spec, ":")
	switch scheme {
	case "memory":
		return memory.New(), nil
	case "sqlite":
		if err := os.MkdirAll(filepath.Dir(rest), 0o700); err != nil {
			return nil, fmt.Errorf("--store %q: %w", spec, err)
		}
		st, err := sqlite.Open(ctx, rest, so)
		if err != nil {
			return nil, fmt.Errorf("--store %q: %w", spec, err)
		}
		return st, nil
	default: // postgres, postgresql
		st, err := postgres.Open(ctx, spec, nil)
		if err != nil {
			return nil, fmt.Errorf("--store: %w", err)
		}
		return st, nil
	}
}

// checkStore refuses a --store value of no kind openStore opens (a usage
// error), without opening anything.
func checkStore(spec string) error {
	scheme, rest, _ := strings.Cut(spec, ":")
	switch scheme {
	case "memory", "postgres", "postgresql":
		return nil
	case "sqlite":
		if rest == "" {
			return usageError("--store %q: want sqlite:PATH, e.g. sqlite:mcptasks.db", spec)
		}
		return nil
	}
	if path, ok := bareStorePath(spec); ok {
		return usageError("--store %q: no kind; for a SQLite file, use --store %s (or postgres://… or memory:)", spec, shellQuote("sqlite:"+path))
	}
	return usageError("--store %q: unknown kind %q; use sqlite:PATH, postgres://… or memory: (with its colon)", storeLabel(spec), scheme)
}

// bareStorePath reports whether a --store value of no known kind looks
// like a file's path given without its sqlite: ("/tmp/x.db", "tasks.db",
// "./data/a:b.db"), and returns it.
func bareStorePath(spec string) (string, bool) {
	scheme, _, hasColon := strings.Cut(spec, ":")
	if spec == "" || strings.Contains(spec, "://") {
		return "", false
	}
	return spec, !hasColon || strings.ContainsAny(scheme, "/.")
}

// memoryStore reports whether a --store value names a memory store.
func memoryStore(spec string) bool { return strings.HasPrefix(spec, "memory:") }

// storeLabel is a --store value as logs and errors show it: the passwords
// of a URL masked, in its user part or its query (password, sslpassword).
func storeLabel(spec string) string {
	u, err := url.Parse(spec)
	if err != nil || u.Opaque != "" {
		return spec // sqlite:PATH, memory:
	}
	// The raw query, pair by pair: url.Query drops a pair it cannot
	// unescape, which would then be shown as it is.
	pairs := strings.Split(u.RawQuery, "&")
	for i, p := range pairs {
		if k, _, _ := strings.Cut(p, "="); strings.Contains(strings.ToLower(k), "password") { // password, sslpassword
			pairs[i] = k + "=xxxxx"
		}
	}
	u.RawQuery = strings.Join(pairs, "&")
	return u.Redacted()
}

// zeroIsNone maps the 0 of --workers and --max-held (none) and of
// --suspend-after (at once) to the engine's -1, for which 0 means the
// default.
func zeroIsNone[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}
