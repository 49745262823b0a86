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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	webconsole "github.com/mcptasks/mcptasks/console"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/changefeed"
)

// defaultConsoleListen is the address of "mcptasks console".
const defaultConsoleListen = "127.0.0.1:8090"

// consoleFlags are the flags of the operator console: "mcptasks console"
// registers them as they are, serve with the prefix "console-".
type consoleFlags struct {
	listen string
	tokens string
	redact bool
}

func (f *consoleFlags) register(fl *pflag.FlagSet, prefix, listenDefault, listenHelp string) {
	fl.StringVar(&f.listen, prefix+"listen", listenDefault, listenHelp)
	fl.StringVar(&f.tokens, prefix+"tokens", "", "`file` of \"TOKEN NAME ROLE\" lines (ROLE: viewer or operator) of the operators who may sign in to the console; without it the console serves only a loopback address, and anyone who reaches it is an operator")
	fl.BoolVar(&f.redact, prefix+"redact", false, "show tool arguments, answers, step results, results, the requests of questions and error data in the console with their values hidden (keys and shape stay; messages written for people are shown)")
}

// consoleServer is a console being served.
type consoleServer struct {
	srv *http.Server
	url string
}

// listenConsole checks the flags (registered with prefix), reads the
// tokens and listens; startConsole serves on the listener.
func (f *consoleFlags) listenConsole(prefix string) (*webconsole.Tokens, net.Listener, error) {
	var toks *webconsole.Tokens
	if f.tokens != "" {
		file, err := os.Open(f.tokens)
		if err != nil {
			return nil, nil, fmt.Errorf("--%stokens: %w", prefix, err)
		}
		toks, err = webconsole.ParseTokens(f.tokens, file)
		file.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("--%stokens: %w", prefix, err)
		}
	}
	if err := webconsole.CheckListen(f.listen, toks != nil); err != nil {
		return nil, nil, fmt.Errorf("--%slisten: %w (--%stokens FILE)", prefix, err, prefix)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, nil, fmt.Errorf("--%slisten: %w", prefix, err)
	}
	return toks, ln, nil
}

// startConsole serves the console of st on ln until ctx is done, and
// returns the server to shut down.
func (f *consoleFlags) startConsole(ctx context.Context, ln net.Listener, toks *webconsole.Tokens, st store.Store, feed *changefeed.Feed, eng *engine.Engine, log *slog.Logger) (*consoleServer, error) {
	con, err := webconsole.New(st, eng, &webconsole.Options{
		Tokens: toks,
		Redact: f.redact,
		Feed:   webconsole.NewStoreFeed(feed, webconsole.DefaultPollInterval),
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	cs := &consoleServer{url: listenURL(f.listen, ln.Addr()) + "/", srv: &http.Server{
		Handler:           con,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second, // live pages are long answers, not long requests
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx }, // live pages end with the process
	}}
	go cs.srv.Serve(ln) // returns when shut down
	log.Info("console", "url", cs.url, "sign_in", toks != nil, "redact", f.redact)
	return cs, nil
}

// shutdown stops the console, giving requests until ctx is done.
func (cs *consoleServer) shutdown(ctx context.Context, log *slog.Logger) {
	if err := cs.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("console shutdown", "err", err)
	}
}

func newConsoleCmd() *cobra.Command {
	var (
		f        consoleFlags
		st       string
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the operator console of a store, without serving MCP",
		Long: `console serves the operator console: web pages to see, search and cancel
the tasks of a store (the store of running serve or worker processes), with
live updates. It serves no MCP requests and runs no tools; "serve
--console-listen ADDR" serves the same console beside the MCP endpoint.

Operators sign in with a token of --tokens (roles viewer and operator; only
operators cancel). Without --tokens the console listens only on a loopback
address, and anyone who reaches it is the operator "local".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageHint(cmd, serveConsole(cmd.Context(), &f, st, logLevel))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&st, "store", "sqlite:mcptasks.db", "the store whose tasks to show: sqlite:PATH of an existing file, or postgres://USER@HOST/DB (a memory: store is private to its process)")
	f.register(fl, "", defaultConsoleListen, "`address` to listen on")
	fl.StringVar(&logLevel, "log-level", "info", logLevelHelp)
	return cmd
}

// checkConsoleStore refuses a --store that cannot be another process's:
// a memory store, always empty here, and a SQLite file that does not
// exist, which opening would create empty in its place (a typo).
func checkConsoleStore(spec string) error {
	if memoryStore(spec) {
		return usageError("--store %s: a memory store is private to its process and always empty here; name the server's store (sqlite:PATH or postgres://…), or run serve --console-listen", spec)
	}
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok && path != "" {
		if _, err := os.Stat(path); err != nil {
			return usageError("--store %s: %w; the console shows an existing store: name the file serve writes", spec, err)
		}
	}
	return nil
}

// serveConsole is "mcptasks console".
func serveConsole(ctx context.Context, f *consoleFlags, storeSpec, logLevel string) error {
	log, err := newLogger(logLevel)
	if err != nil {
		return err
	}
	toks, ln, err := f.listenConsole("")
	if err != nil {
		return err
	}
	if err := checkConsoleStore(storeSpec); err != nil {
		ln.Close()
		return err
	}
	st, err := openStore(ctx, storeSpec, nil)
	if err != nil {
		ln.Close()
		return err
	}
	defer st.Close()
	// An engine that runs nothing: the console cancels through it.
	eng, err := engine.New(st, nil, &engine.Options{Workers: -1, Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	feed := changefeed.New(st, &changefeed.Options{Logger: log})
	fctx, stopFeed := context.WithCancel(ctx)
	fdone := make(chan struct{})
	go func() { defer close(fdone); feed.Run(fctx) }()
	defer func() { stopFeed(); <-fdone }()
	cs, err := f.startConsole(ctx, ln, toks, st, feed, eng, log)
	if err != nil {
		ln.Close()
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cs.shutdown(sctx, log)
	log.Info("stopped")
	return nil
}
