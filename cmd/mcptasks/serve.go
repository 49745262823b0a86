package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/fixtures"
	"github.com/mcptasks/mcptasks/internal/tasktools"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/store/sqlite"
)

// version is the version reported in serverInfo.
const version = "0.1.0"

type serveFlags struct {
	listen       string
	store        string
	authTokens   string
	workers      int
	lease        time.Duration
	maxBodyBytes int64
	drainTimeout time.Duration
	demoStep     time.Duration
	logLevel     string
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve task-backed MCP tools over Streamable HTTP",
		Long: `serve answers MCP 2026-07-28 requests at http://LISTEN/mcp and runs the
tools' tasks on a pool of workers. It serves the conformance fixtures and the
export_report demo tool.

SIGTERM or Ctrl-C drains: the listener closes, tasks that wait for input are
released to be resumed later, running tasks get --drain-timeout to finish,
and the process exits 0. Tasks still running then are reclaimed by the next
process once their lease expires.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context(), &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "`address` to listen on; the MCP endpoint is /mcp")
	fl.StringVar(&f.store, "store", "sqlite:mcptasks.db", "where tasks are kept: sqlite:PATH (durable) or memory: (lost on exit)")
	fl.StringVar(&f.authTokens, "auth-tokens", "", "`file` of \"TOKEN PRINCIPAL\" lines; requests must then send Authorization: Bearer TOKEN and see only their principal's tasks (default: no auth, one local principal)")
	fl.IntVar(&f.workers, "workers", engine.DefaultWorkers, "maximum number of tool handlers running at once")
	fl.DurationVar(&f.lease, "lease", engine.DefaultLease, "how long a worker's claim on a task lasts without a heartbeat; a crashed worker's tasks are resumed after it")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", mcpserver.DefaultMaxBodyBytes, "largest request body accepted; larger ones get HTTP 413")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 10*time.Second, "on SIGTERM, how long running tasks get to finish before the process exits")
	fl.DurationVar(&f.demoStep, "demo-step", time.Second, "pace of the built-in demo tools (export_report works 1.5 steps, asks, works 1.5 steps)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}

func serve(ctx context.Context, f *serveFlags) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	if f.workers < 1 {
		return fmt.Errorf("--workers must be at least 1, got %d", f.workers)
	}
	if f.lease < 3*time.Millisecond {
		return fmt.Errorf("--lease must be positive, got %s", f.lease)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	var tokens mcpserver.Tokens
	if f.authTokens != "" {
		file, err := os.Open(f.authTokens)
		if err != nil {
			return fmt.Errorf("--auth-tokens: %w", err)
		}
		tokens, err = mcpserver.ParseTokens(f.authTokens, file)
		file.Close()
		if err != nil {
			return fmt.Errorf("--auth-tokens: %w", err)
		}
	}

	st, err := openStore(ctx, f.store)
	if err != nil {
		return err
	}
	defer st.Close()

	srv := mcpserver.New(&mcp.Implementation{Name: "mcptasks", Version: version}, &mcpserver.Options{
		ServerOptions: fixtures.ServerOptions(),
		MaxBodyBytes:  f.maxBodyBytes,
		Logger:        log,
	})
	fixtures.RegisterCore(srv.MCPServer())
	if err := tasktools.Register(srv, &tasktools.Options{Step: f.demoStep}); err != nil {
		return err
	}
	eng, err := engine.New(st, srv.EngineTools(), &engine.Options{Workers: f.workers, Lease: f.lease, Logger: log})
	if err != nil {
		return err
	}

	var h http.Handler = srv.Handler(eng)
	if tokens != nil {
		h = tokens.RequireBearer(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	eng.Start(context.WithoutCancel(ctx))
	log.Info("serving", "url", "http://"+ln.Addr().String()+"/mcp", "store", f.store, "workers", f.workers)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("draining", "timeout", f.drainTimeout)
	dctx, cancel := context.WithTimeout(context.Background(), f.drainTimeout)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("http shutdown", "err", err)
	}
	if err := eng.Shutdown(dctx); err != nil {
		log.Warn("tasks still running at the drain deadline; they resume after their lease expires", "err", err)
	}
	log.Info("stopped")
	return nil
}

// openStore opens the store named by a --store value.
func openStore(ctx context.Context, spec string) (store.Store, error) {
	scheme, rest, _ := strings.Cut(spec, ":")
	switch scheme {
	case "memory":
		return memory.New(), nil
	case "sqlite":
		if rest == "" {
			return nil, fmt.Errorf("--store %q: want sqlite:PATH, e.g. sqlite:mcptasks.db", spec)
		}
		st, err := sqlite.Open(ctx, rest, nil)
		if err != nil {
			return nil, fmt.Errorf("--store %q: %w", spec, err)
		}
		return st, nil
	}
	return nil, fmt.Errorf("--store %q: unknown kind %q; use sqlite:PATH or memory:", spec, scheme)
}
