package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	webconsole "github.com/mcptasks/mcptasks/console"
	"github.com/mcptasks/mcptasks/mcpserver"
)

type serveFlags struct {
	runFlags
	listen            string
	authTokens        string
	maxBodyBytes      int64
	maxInflightBytes  int64
	maxJSONDepth      int
	maxArgumentsBytes int64
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	idleTimeout       time.Duration
	minPollInterval   time.Duration
	allowedOrigins    []string
	pprofListen       string
	stdio             bool
	noReadCache       bool
	maxSubscriptions  int
	maxStreams        int
	maxInlineCalls    int
	maxSubscribedIDs  int
	sessionKeyFile    string
	console           consoleFlags
	tools             *toolSet // what to serve; the built-in tools if nil
}

func newServeCmd() *cobra.Command { return newServeCmdWith(&serveFlags{}) }

// newServeCmdWith returns serve's command, parsing its flags into f.
func newServeCmdWith(f *serveFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve task-backed MCP tools over Streamable HTTP",
		Long: `serve answers MCP 2026-07-28 requests at http://LISTEN/mcp (or, with
--stdio, on stdin and stdout) and runs the tools' tasks on a pool of workers.
Clients of MCP 2025-11-25 (VS Code, the TypeScript SDK v1, mcp-go) get that
version's experimental tasks, on the same store. With --tools it serves the
command tools of a tools.yaml file (see examples/tools.yaml), and only those;
without --tools, or with --demo, it serves the conformance fixtures and the
demo tools (export_report, archive_logs, link_account). /healthz says the
process is up; /readyz says whether the store answers (HTTP 503 when not,
before start and while draining); /metrics serves Prometheus metrics (with
--auth-tokens, to a bearer token of the file).

SIGTERM or Ctrl-C drains: the listener closes, tasks that wait for input are
released to be resumed later, running tasks get --drain-timeout to finish,
and the process exits 0. Tasks still running then are reclaimed by the next
process once their lease expires.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return usageHint(cmd, serve(cmd.Context(), f)) },
	}
	fl := cmd.Flags()
	f.register(fl, "maximum number of tool handlers running at once; 0 serves requests without running any tool (workers elsewhere run them)")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "`address` to listen on; the MCP endpoint is /mcp")
	fl.StringVar(&f.authTokens, "auth-tokens", "", "`file` of \"TOKEN PRINCIPAL\" lines; requests must then send Authorization: Bearer TOKEN and see only their principal's tasks (default: no auth, one local principal)")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", mcpserver.DefaultMaxBodyBytes, "largest request body accepted; larger ones get HTTP 413")
	fl.Int64Var(&f.maxInflightBytes, "max-inflight-bytes", mcpserver.DefaultMaxInflightBytes, "most bytes the requests handled at once may hold, across all connections (their bodies, and the tasks that replies and notices carry); a request past it gets HTTP 503 with Retry-After, or -32603, and is retried by clients")
	fl.DurationVar(&f.readHeaderTimeout, "read-header-timeout", 10*time.Second, "a client must send its request headers within this time, or the connection is closed")
	fl.DurationVar(&f.readTimeout, "read-timeout", 30*time.Second, "a client must send its whole request (headers and body) within this time, or the connection is closed")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 2*time.Minute, "an idle keep-alive connection is closed after this time")
	fl.StringVar(&f.pprofListen, "pprof-listen", "", "if set, `address` of a second listener, on loopback, serving Go's runtime profiles at /debug/pprof/ (not the command line, which may carry secrets)")
	fl.BoolVar(&f.stdio, "stdio", false, "serve one client over stdin and stdout instead of HTTP (a host such as VS Code launches the process); logs go to stderr; when stdin ends, the requests in flight are answered, then the process drains and exits (default: HTTP on --listen)")
	fl.StringVar(&f.sessionKeyFile, "session-key-file", "", "`file` holding the secret (at least 32 bytes) that signs the Mcp-Session-Id of MCP 2025-11-25 clients; replicas behind one endpoint must share it (default: a random key per process, so a restart makes those clients initialize again)")
	fl.IntVar(&f.maxJSONDepth, "max-json-depth", mcpserver.DefaultMaxJSONDepth, "deepest nesting of JSON objects and arrays a request body may have; deeper bodies get HTTP 400 and -32602 before anything decodes them")
	fl.Int64Var(&f.maxArgumentsBytes, "max-arguments-bytes", mcpserver.DefaultMaxArgumentsBytes, "largest tools/call arguments accepted, in bytes; larger ones get -32602")
	f.console.register(fl, "console-", "", "if set, `address` of the operator console, a second listener (see mcptasks console --help); the --console-* flags configure it")
	fl.StringSliceVar(&f.allowedOrigins, "allowed-origins", nil, "comma-separated browser `origins` (scheme://host[:port]) whose pages may call the server besides its own; requests with another Origin header get HTTP 403, requests without one (programs) are served (default: none)")
	fl.BoolVar(&f.noReadCache, "no-read-cache", false, "with a postgres:// store, read every tasks/get from the database instead of from the cache that LISTEN/NOTIFY keeps true (README: Postgres read cache); the cache is off anyway while LISTEN is down")
	fl.IntVar(&f.maxInlineCalls, "max-inline-calls", mcpserver.DefaultMaxInlineCalls, "most tools/call requests running at once, those that run their tool inline (not as a task) above all: each command tool's call runs a process; past it a call gets -32603 (try again); with --auth-tokens, one principal may run at most half of them")
	fl.IntVar(&f.maxSubscriptions, "max-subscriptions", mcpserver.DefaultMaxSubscriptions, "most task subscriptions (subscriptions/listen with taskIds) one principal may hold open at once; past it a listen gets HTTP 429 and -31001")
	fl.IntVar(&f.maxStreams, "max-streams", mcpserver.DefaultMaxStreams, "most streams besides task subscriptions one principal may hold open at once, with --auth-tokens (without it, they are not counted): subscriptions/listen without taskIds (a go-sdk client keeps one per session) and 2025-11-25 tasks/result, whose bodies may be at most 64 KiB; past it one gets HTTP 429 and -31001")
	fl.IntVar(&f.maxSubscribedIDs, "max-subscribed-tasks", mcpserver.DefaultMaxSubscribedTasks, "most task ids one principal's open subscriptions may name together (and one subscription alone, else -32602)")
	fl.DurationVar(&f.minPollInterval, "min-poll-interval", 0, "if set, a principal's tasks/get of one task sooner than this after the previous one gets HTTP 429 with Retry-After and JSON-RPC error -31000; at most the poll interval suggested to clients (1s, or a tool's poll_interval) (default: no limit)")
	return cmd
}

// check refuses flag values serve cannot run with; proxy calls it before
// it connects to its upstream.
func (f *serveFlags) check() error {
	if err := f.runFlags.check(); err != nil {
		return err
	}
	if f.maxBodyBytes <= 0 {
		return usageError("--max-body-bytes must be positive, got %d", f.maxBodyBytes)
	}
	if f.maxInflightBytes < f.maxBodyBytes {
		return usageError("--max-inflight-bytes must be at least --max-body-bytes (%d), got %d", f.maxBodyBytes, f.maxInflightBytes)
	}
	if f.maxJSONDepth <= 0 {
		return usageError("--max-json-depth must be positive, got %d", f.maxJSONDepth)
	}
	if f.maxArgumentsBytes <= 0 {
		return usageError("--max-arguments-bytes must be positive, got %d", f.maxArgumentsBytes)
	}
	for name, d := range map[string]time.Duration{"--read-header-timeout": f.readHeaderTimeout, "--read-timeout": f.readTimeout, "--idle-timeout": f.idleTimeout} {
		if d <= 0 {
			return usageError("%s must be positive, got %s", name, d)
		}
	}
	if f.minPollInterval < 0 {
		return usageError("--min-poll-interval must be 0 (no limit) or more, got %s", f.minPollInterval)
	}
	if f.maxInlineCalls <= 0 {
		return usageError("--max-inline-calls must be positive, got %d", f.maxInlineCalls)
	}
	if f.maxSubscriptions <= 0 || f.maxSubscribedIDs <= 0 {
		return usageError("--max-subscriptions and --max-subscribed-tasks must be positive, got %d and %d", f.maxSubscriptions, f.maxSubscribedIDs)
	}
	if f.maxStreams <= 0 {
		return usageError("--max-streams must be positive, got %d", f.maxStreams)
	}
	for _, o := range f.allowedOrigins {
		if err := mcpserver.CheckOrigin(o); err != nil {
			return usageError("--allowed-origins: %w", err)
		}
	}
	return nil
}

// bound is what serve sets up before it builds its runtime: the files its
// flags name, read, and its addresses, listened on. proxy sets it up
// before it contacts its upstream, so that a port in use or a bad file
// stops it at once.
type bound struct {
	tokens        mcpserver.Tokens
	sessionKey    []byte
	ln            net.Listener // the MCP endpoint's; nil with --stdio
	pln           net.Listener // --pprof-listen's, if set
	consoleLn     net.Listener // --console-listen's, if set
	consoleTokens *webconsole.Tokens
}

// close closes b's listeners (once served, a no-op).
func (b *bound) close() {
	for _, ln := range []net.Listener{b.ln, b.pln, b.consoleLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// bind reads the files f names and listens on its addresses; f is
// checked (check).
func (f *serveFlags) bind() (_ *bound, err error) {
	b := &bound{}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	if f.authTokens != "" {
		file, err := os.Open(f.authTokens)
		if err != nil {
			return nil, fmt.Errorf("--auth-tokens: %w", err)
		}
		b.tokens, err = mcpserver.ParseTokens(f.authTokens, file)
		file.Close()
		if err != nil {
			return nil, fmt.Errorf("--auth-tokens: %w", err)
		}
	}
	if b.sessionKey, err = readSessionKey(f.sessionKeyFile); err != nil {
		return nil, err
	}
	if f.stdio {
		if b.tokens != nil {
			return nil, usageError("--auth-tokens applies to HTTP only; over --stdio the user who launched the process is the one principal")
		}
		if f.console.listen != "" {
			return nil, usageError("--console-listen applies to HTTP only; run mcptasks console --store … beside a --stdio process")
		}
		return b, nil
	}
	if f.console.listen == "" && (f.console.tokens != "" || f.console.redact) {
		return nil, usageError("--console-tokens and --console-redact configure the console: add --console-listen ADDR")
	}
	if f.console.listen != "" {
		if b.consoleTokens, b.consoleLn, err = f.console.listenConsole("console-"); err != nil {
			return nil, err
		}
	}
	if b.ln, err = net.Listen("tcp", f.listen); err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	if f.pprofListen != "" {
		if b.pln, err = net.Listen("tcp", f.pprofListen); err != nil {
			return nil, fmt.Errorf("--pprof-listen: %w", err)
		}
		if a, ok := b.pln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
			return nil, usageError("--pprof-listen %q: not a loopback address; profiles show the process's insides to anyone who reaches them: listen on 127.0.0.1", f.pprofListen)
		}
	}
	return b, nil
}

func serve(ctx context.Context, f *serveFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	b, err := f.bind()
	if err != nil {
		return err
	}
	return serveOn(ctx, f, b)
}

// serveOn serves on what bind set up, and closes it.
func serveOn(ctx context.Context, f *serveFlags, b *bound) error {
	defer b.close()
	ro := runtimeOptions{maxBody: f.maxBodyBytes, maxInflight: f.maxInflightBytes,
		maxJSONDepth: f.maxJSONDepth, maxArguments: f.maxArgumentsBytes, minPollInterval: f.minPollInterval, allowedOrigins: f.allowedOrigins,
		tools: f.tools, sessionKey: b.sessionKey, feed: true, noReadCache: f.noReadCache,
		maxSubscriptions: f.maxSubscriptions, maxSubscribedIDs: f.maxSubscribedIDs, maxStreams: f.maxStreams, maxInlineCalls: f.maxInlineCalls}
	if f.stdio {
		return serveStdio(ctx, f, ro)
	}
	tokens, ln := b.tokens, b.ln
	if b.pln != nil {
		ps := &http.Server{Handler: mcpserver.LoopbackOnly(pprofMux()), ReadHeaderTimeout: f.readHeaderTimeout}
		go ps.Serve(b.pln) // returns when pln is closed
	}
	rt, err := newRuntime(ctx, &f.runFlags, ro)
	if err != nil {
		return err
	}

	mux := rt.srv.Mux()
	if tokens != nil {
		mux = http.NewServeMux()
		// The Host and Origin checks come first: a page of another
		// origin gets 403, not a 401 that tells it what is here.
		mux.Handle("/mcp", rt.srv.Protect(tokens.RequireBearer(rt.srv.Handler())))
		mux.Handle("GET /metrics", rt.srv.Protect(tokens.RequireBearer(rt.srv.MetricsHandler())))
		mux.Handle("GET /healthz", rt.srv.HealthHandler())
		mux.Handle("GET /readyz", rt.srv.ReadyHandler())
	}
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: f.readHeaderTimeout,
		ReadTimeout:       f.readTimeout,
		IdleTimeout:       f.idleTimeout,
		ErrorLog:          slog.NewLogLogger(rt.log.Handler(), slog.LevelWarn),
	}
	// Open task subscriptions end with their response, so that Shutdown
	// need not wait for them.
	hs.RegisterOnShutdown(rt.srv.EndSubscriptions)
	if err := rt.start(ctx); err != nil {
		return err
	}
	rt.log.Info("serving", "url", listenURL(f.listen, ln.Addr())+"/mcp", "store", storeLabel(f.store), "workers", f.workers)
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && tokens == nil {
		// Not refused (a container listens on all addresses behind its
		// own network), but said: the Host check against DNS rebinding
		// holds on loopback listeners only.
		rt.log.Warn("listening beyond loopback without --auth-tokens: anyone who reaches the address acts as the one local principal, on every task")
	}
	if f.workers == 0 && memoryStore(f.store) {
		// Not refused: it measures the request path alone (bench/compare.sh).
		rt.log.Warn("--workers 0 with a memory store: no other process can reach it, so the tasks created here never run")
	}
	var cs *consoleServer
	if b.consoleLn != nil {
		if cs, err = f.console.startConsole(ctx, b.consoleLn, b.consoleTokens, rt.st, rt.feed, rt.srv.Engine(), rt.log); err != nil {
			ln.Close()
			rt.drainFor(f.drainTimeout)
			return err
		}
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		rt.log.Info("draining", "timeout", f.drainTimeout)
	}
	// One deadline for all of the drain, within --drain-timeout together:
	// the HTTP requests (inline calls among them), the console, then the
	// engine, which closes the store, so that no request still running
	// finds it closed. Running tasks go on meanwhile; what the requests
	// used of the timeout is theirs no more.
	dctx, cancel := context.WithTimeout(context.Background(), f.drainTimeout)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		rt.log.Warn("http shutdown", "err", err)
	}
	if cs != nil {
		cs.shutdown(dctx, rt.log)
	}
	rt.drain(dctx)
	return err
}

// serveStdio serves one client over stdin and stdout until stdin ends or
// ctx is done, then drains.
func serveStdio(ctx context.Context, f *serveFlags, ro runtimeOptions) error {
	rt, err := newRuntime(ctx, &f.runFlags, ro)
	if err != nil {
		return err
	}
	if err := rt.start(ctx); err != nil {
		return err
	}
	rt.log.Info("serving on stdio", "store", storeLabel(f.store), "workers", f.workers)
	// A host that closes its end of stdout must not kill the process
	// (SIGPIPE) before it drains: the write fails, and ServeStdio ends.
	signal.Ignore(syscall.SIGPIPE)
	err = rt.srv.ServeStdio(ctx, os.Stdin, os.Stdout)
	rt.log.Info("draining", "timeout", f.drainTimeout)
	rt.drainFor(f.drainTimeout)
	return err
}

// listenURL is the base URL (no trailing slash) of a listener on addr,
// asked for as listen: a listener on every address shows the host asked
// for (0.0.0.0 rather than the [::] the dual-stack socket reports, or
// 0.0.0.0 for a --listen with no host), with the port it got.
func listenURL(listen string, addr net.Addr) string {
	a, ok := addr.(*net.TCPAddr)
	if !ok || !a.IP.IsUnspecified() {
		return "http://" + addr.String()
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		host = "0.0.0.0"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// readSessionKey reads --session-key-file; "" means none.
func readSessionKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--session-key-file: %w", err)
	}
	key = bytes.TrimSpace(key)
	if len(key) < mcpserver.SessionKeySize {
		// A new file, not path: replicas may share path (and a key made
		// there in place would sign off the sessions of the others).
		return nil, fmt.Errorf("--session-key-file: %s holds %d bytes; it needs at least %d: make a new key, e.g. (umask 077; head -c 48 /dev/urandom | base64 > %s), and pass that file to every replica", path, len(key), mcpserver.SessionKeySize, shellQuote(newKeyFile(path)))
	}
	return key, nil
}

// newKeyFile is the file readSessionKey suggests for a new key: beside
// path, not path itself.
func newKeyFile(path string) string { return path + ".new" }

// pprofMux serves net/http/pprof's handlers on their usual paths.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	// Not /debug/pprof/cmdline: the command line may carry secrets
	// (--upstream-header, a --store URL's password).
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
