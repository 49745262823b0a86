package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/proxy"
)

type proxyFlags struct {
	command      bool
	url          string
	headers      []string
	protocol     string
	taskTools    []string
	taskMode     string
	rerun        bool
	maxAttempts  int
	ttl          time.Duration
	pollInterval time.Duration
	terminate    time.Duration
	timeout      time.Duration
	startTimeout time.Duration
}

// newProxyCmd is serve's command, serving an upstream's tools instead of
// the built-in ones: it has every flag of serve, and the same wiring.
func newProxyCmd() *cobra.Command {
	var sf serveFlags
	cmd := newServeCmdWith(&sf)
	var f proxyFlags
	cmd.Use = "proxy [flags] (--upstream-url URL | --upstream CMD [ARG...])"
	cmd.Short = "Serve the tools of an existing MCP server as durable tasks"
	cmd.Long = `proxy puts mcptasks in front of an existing MCP server (the upstream) and
serves its tools, and only those, at http://LISTEN/mcp as task-backed tools,
with the rest of serve's behaviour (store, workers, leases, auth, /healthz,
/readyz, /metrics, drain on SIGTERM).

The upstream is a command that speaks MCP over stdio, given last:

  mcptasks proxy [flags] --upstream CMD [ARG...]

(flags of proxy go before --upstream; everything after CMD is CMD's own
arguments, flags included; "--upstream -- CMD ..." works too), or a
Streamable HTTP endpoint:

  mcptasks proxy [flags] --upstream-url http://HOST:PORT/mcp

At start-up proxy connects once, lists the upstream's tools and serves them
under the same names, descriptions and schemas; restart it to pick up
changes. Every call then opens its own upstream session on the worker that
runs it: for a stdio upstream, one process per call, whose stderr goes to
proxy's stderr.

Tools matching --task-tools run as tasks (--task-mode optional: for clients
that declare the Tasks extension, inline for the others; required: tasks
only); the other tools are proxied inline. When the upstream asks a question
(elicitation), the task becomes input_required with keys upstream-1,
upstream-2, ..., and the tasks/update answer goes back to the upstream. A
call that runs inline declines the upstream's questions; sampling and roots
requests are refused. An upstream tool error completes the task with
isError; an upstream JSON-RPC error, or an upstream that dies or cannot be
reached, fails it with a message saying so.

A call that waits for the upstream longer than --upstream-timeout in all
(connecting and answering; the time its questions wait for answers does not
count) is cancelled upstream, and its task fails saying so.

A task whose worker was lost (a crash, a SIGKILL) fails, since an upstream
call may not be safe to repeat; with --rerun it is run again, upstream call
included, and questions answered before are answered from the store.

With several replicas on one Postgres store, run proxy with the same
upstream and flags on each: any of them may run a task that another one
created ("proxy --workers 0" serves requests and leaves the calls to the
others).`
	cmd.Example = `  mcptasks proxy --store sqlite:proxy.db --upstream npx -y @modelcontextprotocol/server-everything
  mcptasks proxy --task-tools 'render_*,export' --upstream ./slow-server --verbose

  # Beyond loopback, add --auth-tokens: without it, anyone who reaches the port calls the upstream with the credential of --upstream-header.
  mcptasks proxy --listen :8080 --auth-tokens tokens.txt --upstream-url http://127.0.0.1:9000/mcp --upstream-header 'Authorization: Bearer s3cret'`
	cmd.Args = cobra.ArbitraryArgs
	fl := cmd.Flags()
	fl.SetInterspersed(false)
	fl.BoolVar(&f.command, "upstream", false, "the arguments after the flags are the upstream: `CMD [ARG...]`, a server that speaks MCP over stdio, run once per call; put proxy's own flags before --upstream")
	fl.StringVar(&f.url, "upstream-url", "", "`URL` of an upstream server that speaks Streamable HTTP, e.g. http://127.0.0.1:9000/mcp")
	fl.StringArrayVar(&f.headers, "upstream-header", nil, "`\"NAME: VALUE\"` header sent with every request to --upstream-url, e.g. \"Authorization: Bearer TOKEN\" (repeatable)")
	fl.StringVar(&f.protocol, "upstream-protocol-version", "", "MCP `version` to ask the upstream for, e.g. 2025-11-25 (default: the newest the Go SDK speaks; it negotiates down)")
	fl.StringSliceVar(&f.taskTools, "task-tools", []string{"*"}, "comma-separated `globs` of the tools that may run as tasks (* matches any characters, ? one); the others are always proxied inline; \"\" for none")
	fl.Lookup("task-tools").DefValue = "*" // as typed, not pflag's [*]
	fl.StringVar(&f.taskMode, "task-mode", "optional", "`mode` of the --task-tools: optional (a task for clients that declare the Tasks extension, inline for others) or required (others get error -32021)")
	fl.BoolVar(&f.rerun, "rerun", false, "re-run a task whose worker was lost, upstream call included (only if the upstream's tools are safe to repeat); by default such a task fails")
	fl.IntVar(&f.maxAttempts, "max-attempts", 3, "with --rerun, fail a task once this many of its runs were lost with their worker (crashes; graceful restarts do not count)")
	fl.DurationVar(&f.ttl, "ttl", engine.DefaultTTL, "how long a task and its result are kept after it is created")
	fl.DurationVar(&f.pollInterval, "poll-interval", engine.DefaultPollInterval, "the polling interval (pollIntervalMs) suggested to clients")
	fl.DurationVar(&f.timeout, "upstream-timeout", 0, "how long one call may wait for the upstream in all (to connect, and for its answers to tools/call; not the time the upstream's questions wait for answers); past it the call is cancelled upstream and its task fails, naming the upstream and the timeout (default: --ttl, since a call that outlives its task is of no use)")
	fl.DurationVar(&f.startTimeout, "upstream-start-timeout", 2*time.Minute, "how long start-up waits for the upstream to connect and list its tools (a first \"npx -y\" may download the server); past it the proxy exits, saying so")
	fl.DurationVar(&f.terminate, "upstream-terminate-timeout", 5*time.Second, "when a call to a stdio upstream ends, how long its process gets to exit after its stdin is closed, before SIGTERM (and as long again before SIGKILL)")
	// Flags of serve that make no sense here.
	for _, name := range []string{"tools", "demo", "demo-step"} {
		if fl.Lookup(name) != nil {
			_ = fl.MarkHidden(name)
		}
	}
	cmd.RunE = func(c *cobra.Command, args []string) error {
		for _, name := range []string{"tools", "demo"} {
			if fl.Changed(name) {
				return usageHint(c, usageError("--%s: proxy serves only the upstream's tools", name))
			}
		}
		// The flags first, then the listeners (a port in use, a missing
		// --auth-tokens file), and only then the upstream, which a first
		// "npx -y" may take minutes to start.
		if err := sf.check(); err != nil {
			return usageHint(c, err)
		}
		log, _ := newLogger(sf.logLevel) // checked
		up, opts, err := f.upstream(args, log)
		if err != nil {
			return err
		}
		b, err := sf.bind()
		if err != nil {
			return usageHint(c, err)
		}
		p, err := f.connect(c.Context(), up, opts, log)
		if err != nil {
			b.close()
			return err
		}
		sf.tools = &toolSet{
			serverOptions: &mcp.ServerOptions{Instructions: p.Instructions()},
			register:      p.Register,
		}
		return usageHint(c, serveOn(c.Context(), &sf, b))
	}
	return cmd
}

// upstream checks the flags and returns the upstream they name and the
// proxy's options; it contacts nothing.
func (f *proxyFlags) upstream(args []string, log *slog.Logger) (*proxy.Upstream, *proxy.Options, error) {
	up := &proxy.Upstream{ProtocolVersion: f.protocol, TerminateTimeout: f.terminate}
	switch {
	case f.command && f.url != "":
		return nil, nil, errors.New("give either --upstream CMD or --upstream-url, not both")
	case f.command && len(args) == 0:
		return nil, nil, errors.New("--upstream: give the upstream command after it: --upstream CMD [ARG...]")
	case f.command:
		up.Command, up.Stderr = args, os.Stderr
	case f.url != "" && len(args) > 0:
		return nil, nil, fmt.Errorf("unexpected arguments %q: with --upstream-url, proxy takes none (did you mean --upstream CMD?)", args)
	case f.url != "":
		up.URL = f.url
		if len(f.headers) > 0 {
			h := http.Header{}
			for _, kv := range f.headers {
				k, v, ok := strings.Cut(kv, ":")
				if !ok || strings.TrimSpace(k) == "" {
					// Not the value: it may be a credential.
					return nil, nil, fmt.Errorf("--upstream-header: a value of %d characters without a colon: want \"NAME: VALUE\"", len(kv))
				}
				h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
			u, err := url.Parse(f.url)
			if err != nil {
				return nil, nil, fmt.Errorf("--upstream-url: %w", err)
			}
			up.HTTPClient = &http.Client{Transport: &headerTransport{h: h, scheme: u.Scheme, host: u.Host, rt: http.DefaultTransport}}
		}
	case len(args) > 0:
		return nil, nil, fmt.Errorf("unexpected arguments %q: put --upstream before the upstream command", args)
	default:
		return nil, nil, errors.New("no upstream: give --upstream CMD [ARG...] or --upstream-url URL")
	}
	if len(f.headers) > 0 && f.url == "" {
		return nil, nil, errors.New("--upstream-header needs --upstream-url")
	}

	var mode mcpserver.TaskMode
	switch f.taskMode {
	case "optional":
		mode = mcpserver.TaskOptional
	case "required":
		mode = mcpserver.TaskRequired
	default:
		return nil, nil, fmt.Errorf("--task-mode %q: want optional or required", f.taskMode)
	}
	sel, err := proxy.Select(f.taskTools, mode)
	if err != nil {
		return nil, nil, fmt.Errorf("--task-tools: %w", err)
	}
	if f.maxAttempts < 1 {
		return nil, nil, fmt.Errorf("--max-attempts must be at least 1, got %d", f.maxAttempts)
	}
	if f.ttl <= 0 {
		return nil, nil, fmt.Errorf("--ttl must be positive, got %s", f.ttl)
	}
	if f.pollInterval <= 0 {
		return nil, nil, fmt.Errorf("--poll-interval must be positive, got %s", f.pollInterval)
	}
	if f.terminate <= 0 {
		return nil, nil, fmt.Errorf("--upstream-terminate-timeout must be positive, got %s", f.terminate)
	}
	if f.startTimeout <= 0 {
		return nil, nil, fmt.Errorf("--upstream-start-timeout must be positive, got %s", f.startTimeout)
	}
	if f.timeout < 0 {
		return nil, nil, fmt.Errorf("--upstream-timeout must be 0 (the --ttl) or more, got %s", f.timeout)
	}
	if f.timeout == 0 {
		f.timeout = f.ttl
	}
	return up, &proxy.Options{
		Mode:            sel,
		Retry:           engine.RetryPolicy{Rerun: f.rerun, MaxAttempts: f.maxAttempts},
		TTL:             f.ttl,
		PollInterval:    f.pollInterval,
		UpstreamTimeout: f.timeout,
		ClientInfo:      &mcp.Implementation{Name: "mcptasks-proxy", Version: version},
		Logger:          log,
	}, nil
}

// connect connects to the upstream and lists its tools.
func (f *proxyFlags) connect(ctx context.Context, up *proxy.Upstream, opts *proxy.Options, log *slog.Logger) (*proxy.Proxy, error) {
	// An upstream that never answers initialize must not hang the proxy
	// without a word.
	startCtx, cancel := context.WithTimeout(ctx, f.startTimeout)
	defer cancel()
	p, err := proxy.New(startCtx, up, opts)
	if err != nil && ctx.Err() == nil && startCtx.Err() != nil {
		return nil, fmt.Errorf("%w: no answer within %s at start-up (--upstream-start-timeout): is it an MCP server, and up?", err, f.startTimeout)
	}
	if err != nil {
		return nil, err
	}
	for _, g := range f.taskTools {
		if !anyTool(p.Tools(), g) {
			log.Warn("--task-tools: a glob matches no upstream tool", "glob", g)
		}
	}
	log.Info("proxying", "upstream", p.Name(), "tools", len(p.Tools()), "taskTools", strings.Join(f.taskTools, ","), "taskMode", f.taskMode, "rerun", f.rerun)
	return p, nil
}

func anyTool(tools []*mcp.Tool, glob string) bool {
	for _, t := range tools {
		if proxy.Matches([]string{glob}, t.Name) {
			return true
		}
	}
	return false
}

// headerTransport adds --upstream-header headers to every request to the
// upstream's host, with the upstream's scheme, and to no other: a redirect
// elsewhere, or to plain http, must not carry the upstream's credentials
// (net/http drops its own Authorization on one; this transport would add
// it again).
type headerTransport struct {
	h      http.Header
	scheme string // the upstream URL's
	host   string // the upstream URL's host[:port]
	rt     http.RoundTripper
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != t.host || r.URL.Scheme != t.scheme {
		return t.rt.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range t.h {
		r.Header[k] = append([]string(nil), vs...)
	}
	return t.rt.RoundTrip(r)
}
