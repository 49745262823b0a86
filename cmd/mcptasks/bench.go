package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcptasks/mcptasks/internal/loadgen"
)

// The tool bench calls by default, and its arguments.
const (
	benchTool     = "slow_compute"
	benchToolArgs = `{"seconds":0.001,"label":"bench"}`
)

// benchArgs are the arguments of tool when --args is not given: those of
// the default tool are for it alone.
func benchArgs(tool string) string {
	if tool == benchTool {
		return benchToolArgs
	}
	return "{}"
}

func newBenchCmd() *cobra.Command {
	var (
		cfg       loadgen.Config
		args      string
		asJSON    bool
		serverPID int
	)
	cmd := &cobra.Command{
		Use:   "bench URL",
		Short: "Measure an MCP server under load (requests/s, latency percentiles)",
		Long: `bench sends load to the MCP endpoint URL from --concurrency workers until
--duration has passed or --requests operations are done, and prints
requests/s, latency percentiles (p50, p90, p99, max), the error count and the
first error. Modes:

  create     task-creating tools/call of --tool (it must answer with a task)
  get        tasks/get, round-robin over --tasks tasks created first
  lifecycle  create, poll until terminal (honouring pollIntervalMs unless
             --ignore-poll-interval), answering input requests by accepting
  call       a plain synchronous tools/call (no Tasks extension declared)
  resume     create --tasks tasks of --tool and wait until each asks for
             input; then answer each (accepting) and poll it every 1 ms
             until completed: the latency is answer to completed

With --server-pid, the server's CPU time per request is reported too (Linux).
"mcptasks bench baseline" serves the two reference servers the figures in
BENCHMARKS.md are compared with.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			cfg.URL = a[0]
			if cfg.Token == "" {
				cfg.Token = os.Getenv(envToken) // read here, so that --help does not print it
			}
			if !cmd.Flags().Changed("args") {
				args = benchArgs(cfg.Tool)
			}
			cfg.Args = json.RawMessage(args)
			if !json.Valid(cfg.Args) {
				return fmt.Errorf("--args: not valid JSON: %s", args)
			}
			if err := cfg.Check(); err != nil {
				return usageError("%w", err)
			}
			var cpu0 time.Duration
			if serverPID > 0 {
				var err error
				if cpu0, err = loadgen.ProcessCPU(serverPID); err != nil {
					return fmt.Errorf("--server-pid: %w", err)
				}
			}
			r, err := loadgen.Run(cmd.Context(), cfg)
			if err != nil {
				// The flags passed Check: the server's or the connection's
				// (the tasks of get or resume not made, say).
				return &exitError{code: exitTransport, err: err}
			}
			var perReq time.Duration
			if serverPID > 0 && r.Requests > 0 {
				cpu1, err := loadgen.ProcessCPU(serverPID)
				if err != nil {
					return fmt.Errorf("--server-pid: %w", err)
				}
				perReq = (cpu1 - cpu0) / time.Duration(r.Requests)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(struct {
					*loadgen.Result
					ServerCPUPerRequestNs time.Duration `json:"serverCpuPerRequestNs,omitempty"`
				}{r, perReq})
			}
			fmt.Fprint(out, loadgen.Table(r))
			if perReq > 0 {
				fmt.Fprintf(out, "server CPU per request: %s (%d requests)\n", perReq.Round(time.Microsecond), r.Requests)
			}
			if r.Errors > 0 {
				// Not a usage error (2): the server's or the connection's.
				return &exitError{code: exitTransport, err: fmt.Errorf("%d of %d operations failed; the first: %s", r.Errors, r.Ops, r.FirstError)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Mode, "mode", loadgen.ModeGet, "what to send: create, get, lifecycle, resume or call")
	fl.IntVarP(&cfg.Concurrency, "concurrency", "c", 16, "concurrent workers, each with one request in flight")
	fl.DurationVarP(&cfg.Duration, "duration", "d", 10*time.Second, "how long to run")
	fl.IntVarP(&cfg.Requests, "requests", "n", 0, "stop after this many operations (0: only --duration bounds the run)")
	fl.StringVar(&cfg.Tool, "tool", benchTool, "tool to call (create, get, lifecycle, resume, call)")
	fl.StringVar(&args, "args", "", "JSON `object` of tool arguments (default: "+benchToolArgs+" for "+benchTool+", {} for any other --tool)")
	fl.IntVar(&cfg.Tasks, "tasks", 1000, "tasks the get mode creates first and polls round-robin; the tasks the resume mode creates and answers")
	fl.BoolVar(&cfg.Settle, "settle", false, "create: end the run only once the created tasks have done their work up to their first question or their end (the last task of each worker is polled until it is no longer working); the rate counts that time; against a server that runs no workers (--workers 0) it waits until interrupted")
	fl.BoolVar(&cfg.IgnorePollInterval, "ignore-poll-interval", false, "lifecycle: poll without waiting pollIntervalMs")
	fl.StringVar(&cfg.Token, "token", "", "bearer `token` (default $"+envToken+")")
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON instead of a table")
	fl.IntVar(&serverPID, "server-pid", 0, "PID of the server, to report its CPU time per request")
	cmd.AddCommand(newBaselineCmd())
	return cmd
}

func newBaselineCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "baseline plain|gosdk",
		Short: "Serve a reference server to compare mcptasks with",
		Long: `baseline serves one of the reference servers at http://LISTEN/mcp:

  plain  net/http and encoding/json answering every request with a fixed
         JSON-RPC result: the floor any Go server pays
  gosdk  go-sdk v1.8.0 alone, stateless, JSON replies, with a trivial
         synchronous tool, greet`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"plain", "gosdk"},
		RunE: func(cmd *cobra.Command, a []string) error {
			var h http.Handler
			switch a[0] {
			case "plain":
				h = loadgen.PlainHandler()
			case "gosdk":
				h = loadgen.GoSDKHandler()
			default:
				return fmt.Errorf("unknown baseline %q: use plain or gosdk", a[0])
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen: %w", err)
			}
			mux := http.NewServeMux()
			mux.Handle("/mcp", h)
			hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(cmd.ErrOrStderr(), "serving the %s baseline at http://%s/mcp\n", a[0], ln.Addr())
			go func() { <-cmd.Context().Done(); hs.Close() }()
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8090", "`address` to listen on")
	return cmd
}
