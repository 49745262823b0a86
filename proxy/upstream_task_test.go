package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/tasktools"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/proxy"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// serverOptions are the options of the servers of these tests: a fresh
// memory store and fast polling.
func serverOptions() *mcpserver.Options {
	return &mcpserver.Options{Store: memory.New(), Engine: &engine.Options{Workers: 4, DefaultPollInterval: 10 * time.Millisecond}}
}

// serveHTTP starts srv and serves it on httptest until t ends, and
// returns the endpoint.
func serveHTTP(t *testing.T, srv *mcpserver.Server) string {
	t.Helper()
	if err := srv.Start(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // stop handlers still running at once
		_ = srv.Shutdown(ctx)
	})
	return hs.URL
}

// TestProxyTaskUpstream: an upstream that serves tasks of its own (an
// mcptasks server, whose export_report always runs as a task and asks a
// question) is called in its era through mcptasks' client: the proxy's
// task follows the upstream's, and the upstream's question reaches the
// proxy's client. Both eras on both sides.
func TestProxyTaskUpstream(t *testing.T) {
	up := mcpserver.New(&mcp.Implementation{Name: "upstream", Version: "0"}, serverOptions())
	if err := tasktools.Register(up, &tasktools.Options{Step: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	upURL := serveHTTP(t, up)
	for _, tt := range []struct{ front, upstream string }{
		{client.ProtocolVersion, client.ProtocolVersion},
		{client.ProtocolVersion, client.LegacyProtocolVersion},
		{client.LegacyProtocolVersion, client.ProtocolVersion},
		{client.LegacyProtocolVersion, client.LegacyProtocolVersion},
	} {
		t.Run(tt.front+" in front of "+tt.upstream, func(t *testing.T) {
			p, err := proxy.New(t.Context(), &proxy.Upstream{URL: upURL, ProtocolVersion: tt.upstream}, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := mcpserver.New(&mcp.Implementation{Name: "proxy", Version: "0"}, serverOptions())
			if err := p.Register(srv); err != nil {
				t.Fatal(err)
			}
			asked := 0
			c := client.New(serveHTTP(t, srv), &client.Options{ProtocolVersion: tt.front, MinPollInterval: 10 * time.Millisecond,
				InputHandler: client.InputHandlerFunc(func(_ context.Context, key string, req *client.InputRequest) (any, error) {
					asked++
					if req.Elicit == nil || !strings.Contains(req.Elicit.Message, "Overwrite it with 3 rows?") {
						t.Fatalf("question %s: %+v", key, req.Elicit)
					}
					// Only the proxy's own task may be named (2025-11-25's
					// related-task), never the upstream's.
					if rel, ok := req.Elicit.Meta["io.modelcontextprotocol/related-task"].(map[string]any); ok && rel["taskId"] != req.TaskID || !ok && req.Elicit.Meta != nil {
						t.Errorf("question %s of task %s: _meta %v", key, req.TaskID, req.Elicit.Meta)
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"overwrite": true}}, nil
				})})
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			cr, err := c.CallTool(ctx, "export_report", map[string]any{"rows": 3})
			if err != nil || cr.Task == nil {
				t.Fatalf("CallTool: %+v, %v", cr, err)
			}
			res, err := cr.Task.Wait(ctx)
			if err != nil || resultText(res) != "Wrote 3 rows to report.csv" || asked != 1 {
				t.Errorf("result %q, %v; asked %d times", resultText(res), err, asked)
			}

			// A proxied task that is cancelled cancels the upstream's.
			cr, err = c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 60})
			if err != nil || cr.Task == nil {
				t.Fatalf("CallTool slow_compute: %+v, %v", cr, err)
			}
			if err := cr.Task.Cancel(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := cr.Task.Wait(ctx); err == nil {
				t.Error("the cancelled task completed")
			}
		})
	}
}

// TestProxyPlainUpstreamUnchanged: an HTTP upstream without tasks is still
// called through go-sdk's client.
func TestProxyPlainUpstreamUnchanged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	var calls []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.Header.Get("Mcp-Method"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	p, err := proxy.New(t.Context(), &proxy.Upstream{URL: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	front := mcpserver.New(&mcp.Implementation{Name: "proxy", Version: "0"}, serverOptions())
	if err := p.Register(front); err != nil {
		t.Fatal(err)
	}
	c := client.New(serveHTTP(t, front), nil)
	cr, err := c.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	res := cr.Result
	if cr.Task != nil {
		if res, err = cr.Task.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if resultText(res) != "hi" {
		t.Errorf("echo: %q", resultText(res))
	}
}

// startTaskUpstream serves an mcptasks server with the tasktools and the
// tools that register adds, and returns its store and endpoint. wrap, if
// set, wraps its handler.
func startTaskUpstream(t *testing.T, register func(*mcpserver.Server) error, wrap func(http.Handler) http.Handler) (*memory.Store, string) {
	t.Helper()
	st := memory.New()
	up := mcpserver.New(&mcp.Implementation{Name: "upstream", Version: "0"},
		&mcpserver.Options{Store: st, Engine: &engine.Options{Workers: 4, DefaultPollInterval: 10 * time.Millisecond}})
	if err := tasktools.Register(up, &tasktools.Options{Step: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if register != nil {
		if err := register(up); err != nil {
			t.Fatal(err)
		}
	}
	if err := up.Start(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = up.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = up.Shutdown(ctx)
	})
	return st, hs.URL
}

// startProxy serves a proxy of upURL, speaking version to it, and returns
// a client of the proxy and the proxy's server.
func startProxy(t *testing.T, upURL, version string, opts *proxy.Options) (*client.Client, *mcpserver.Server) {
	t.Helper()
	p, err := proxy.New(t.Context(), &proxy.Upstream{URL: upURL, ProtocolVersion: version}, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.New(&mcp.Implementation{Name: "proxy", Version: "0"}, serverOptions())
	if err := p.Register(srv); err != nil {
		t.Fatal(err)
	}
	return client.New(serveHTTP(t, srv), &client.Options{MinPollInterval: 10 * time.Millisecond}), srv
}

// TestProxyTaskUpstream_Timeout: the upstream timeout bounds a call that
// follows an upstream's task, as it bounds a plain call, and the
// upstream's task is cancelled.
func TestProxyTaskUpstream_Timeout(t *testing.T) {
	upStore, upURL := startTaskUpstream(t, nil, nil)
	for _, version := range []string{client.ProtocolVersion, client.LegacyProtocolVersion} {
		t.Run(version, func(t *testing.T) {
			c, _ := startProxy(t, upURL, version, &proxy.Options{UpstreamTimeout: 200 * time.Millisecond})
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			cr, err := c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 60, "label": version})
			if err != nil || cr.Task == nil {
				t.Fatalf("CallTool: %+v, %v", cr, err)
			}
			_, err = cr.Task.Wait(ctx)
			var te *client.TaskError
			if !errors.As(err, &te) || te.Err == nil || !strings.Contains(te.Err.Message, "upstream timeout") {
				t.Fatalf("Wait: %v, want the task failed by the upstream timeout", err)
			}
			waitUpstream(t, upStore, "slow_compute", version, task.Cancelled)
		})
	}
}

// waitUpstream waits until the upstream's task of tool, labelled label
// (its arguments hold it), has status.
func waitUpstream(t *testing.T, st store.Lister, tool, label string, status task.Status) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		page, err := st.List(context.Background(), store.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		var last []string
		for _, r := range page.Tasks {
			if r.Tool == tool && strings.Contains(string(r.Args), label) {
				if r.Status == status {
					return
				}
				last = append(last, string(r.Status))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream's %s tasks: %v, want one %s", tool, last, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProxyTaskUpstream_QuestionTakenBack: an upstream that serves tasks
// and takes its question back (its handler stops waiting, and goes on) is
// followed to its end: the proxy's client sees the question gone while it
// waits for this task's answer, and stops waiting. Before, the proxy waited
// for an answer nobody needed, and its task never ended.
func TestProxyTaskUpstream_QuestionTakenBack(t *testing.T) {
	withdraw := make(chan struct{})
	_, upURL := startTaskUpstream(t, func(up *mcpserver.Server) error {
		return mcpserver.AddTool(up, &mcp.Tool{Name: "ask_then_go_on"},
			mcpserver.ToolOptions{Task: mcpserver.TaskRequired, Requires: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				qctx, cancel := context.WithCancel(ctx)
				defer cancel()
				go func() {
					select {
					case <-withdraw:
						cancel()
					case <-qctx.Done():
					}
				}()
				if _, err := mcpserver.Elicit(qctx, "ok", &mcp.ElicitParams{Message: "Go on?", RequestedSchema: &jsonschema.Schema{Type: "object"}}); !errors.Is(err, context.Canceled) {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "went on"}}}, nil, nil
			})
	}, nil)
	c, _ := startProxy(t, upURL, client.ProtocolVersion, nil)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cr, err := c.CallTool(ctx, "ask_then_go_on", nil)
	if err != nil || cr.Task == nil {
		t.Fatalf("CallTool: %+v, %v", cr, err)
	}
	waitAsked(t, ctx, cr.Task)
	close(withdraw)
	for {
		st, err := cr.Task.Get(ctx)
		if err == nil && st.Status == task.Completed {
			if got := st.Result; got == nil || len(got.Content) != 1 || got.Content[0].(*mcp.TextContent).Text != "went on" {
				t.Errorf("result %+v, want the upstream's", got)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the proxied task did not end after the upstream took its question back: %+v, %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitAsked waits until the proxied task tk is input_required.
func waitAsked(t *testing.T, ctx context.Context, tk *client.Task) {
	t.Helper()
	for st, err := tk.Get(ctx); err != nil || st.Status != task.InputRequired; st, err = tk.Get(ctx) {
		if ctx.Err() != nil {
			t.Fatalf("the proxied task did not ask: %+v, %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProxyTaskUpstream_Released: a call released to another worker while
// the upstream's question waits (a drain, under Retry.Rerun) leaves the
// upstream's task going, and the re-run (here a second server on the same
// store, as another replica) follows that task, found again by the call's
// idempotency key: the upstream does the work once. Before, the release
// cancelled the upstream's task and the re-run made a second one; after a
// crash, the first ran on beside it. A 2025-11-25 upstream knows no keys:
// its task is cancelled at the release, as before, not left running.
func TestProxyTaskUpstream_Released(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    []task.Status // the upstream's export_report tasks, sorted
	}{
		{client.ProtocolVersion, []task.Status{task.Completed}},
		{client.LegacyProtocolVersion, []task.Status{task.Cancelled, task.Completed}},
	} {
		t.Run(tt.version, func(t *testing.T) {
			upStore, upURL := startTaskUpstream(t, nil, nil)
			st := memory.New()
			serve := func() (*client.Client, *mcpserver.Server) {
				p, err := proxy.New(t.Context(), &proxy.Upstream{URL: upURL, ProtocolVersion: tt.version},
					&proxy.Options{Retry: engine.RetryPolicy{Rerun: true}})
				if err != nil {
					t.Fatal(err)
				}
				srv := mcpserver.New(&mcp.Implementation{Name: "proxy", Version: "0"},
					&mcpserver.Options{Store: st, Engine: &engine.Options{Workers: 4, DefaultPollInterval: 10 * time.Millisecond}})
				if err := p.Register(srv); err != nil {
					t.Fatal(err)
				}
				return client.New(serveHTTP(t, srv), &client.Options{MinPollInterval: 10 * time.Millisecond}), srv
			}
			c, srv := serve()
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			cr, err := c.CallTool(ctx, "export_report", map[string]any{"rows": 3})
			if err != nil || cr.Task == nil {
				t.Fatalf("CallTool: %+v, %v", cr, err)
			}
			waitAsked(t, ctx, cr.Task)
			if err := srv.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}

			c2, _ := serve()
			tk := c2.Task(cr.Task.ID)
			waitAsked(t, ctx, tk)
			st2, err := tk.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			answers := map[string]any{}
			for key := range st2.InputRequests {
				answers[key] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"overwrite": true}}
			}
			if err := tk.Update(ctx, answers); err != nil {
				t.Fatal(err)
			}
			res, err := tk.Wait(ctx)
			if err != nil {
				t.Fatalf("the re-run: %v; want the upstream's result", err)
			}
			if got := resultText(res); got != "Wrote 3 rows to report.csv" {
				t.Fatalf("the re-run's result %q; want the upstream's", got)
			}
			page, err := upStore.List(context.Background(), store.ListParams{})
			if err != nil {
				t.Fatal(err)
			}
			var runs []task.Status
			for _, r := range page.Tasks {
				if r.Tool == "export_report" {
					runs = append(runs, r.Status)
				}
			}
			slices.Sort(runs)
			if !slices.Equal(runs, tt.want) {
				t.Errorf("the upstream's export_report tasks: %v; want %v", runs, tt.want)
			}
		})
	}
}

// TestProxyTaskUpstream_Sessions: each call to a 2025-11-25 upstream ends
// the session it opened (an HTTP DELETE), as does the probe of New.
func TestProxyTaskUpstream_Sessions(t *testing.T) {
	var inits, deletes atomic.Int32
	_, upURL := startTaskUpstream(t, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodDelete {
				deletes.Add(1)
			}
			if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
				inits.Add(1) // only initialize comes without a session
			}
			h.ServeHTTP(w, r)
		})
	})
	c, _ := startProxy(t, upURL, client.LegacyProtocolVersion, nil)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	for range 3 {
		cr, err := c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 0.01})
		if err != nil || cr.Task == nil {
			t.Fatalf("CallTool: %+v, %v", cr, err)
		}
		if _, err := cr.Task.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if i, d := inits.Load(), deletes.Load(); i < 4 || d != i {
		t.Errorf("the upstream saw %d sessions opened and %d ended; want every one ended (at least 4: the probe and 3 calls)", i, d)
	}
}

// TestProxyTaskUpstream_SyncCancel: a call that the upstream answers
// inline (a tool it never makes a task), cancelled through the proxy's
// task, stops the upstream's handler, in either era.
func TestProxyTaskUpstream_SyncCancel(t *testing.T) {
	started, stopped, release := make(chan struct{}, 2), make(chan error, 2), make(chan struct{})
	_, upURL := startTaskUpstream(t, func(up *mcpserver.Server) error {
		return mcpserver.AddTool(up, &mcp.Tool{Name: "block"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
					stopped <- ctx.Err()
				case <-release: // the test failed: let the upstream close
				}
				return nil, nil, ctx.Err()
			})
	}, nil)
	t.Cleanup(func() { close(release) }) // before the upstream's cleanup
	for _, version := range []string{client.ProtocolVersion, client.LegacyProtocolVersion} {
		t.Run(version, func(t *testing.T) {
			c, _ := startProxy(t, upURL, version, nil)
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			cr, err := c.CallTool(ctx, "block", map[string]any{})
			if err != nil || cr.Task == nil {
				t.Fatalf("CallTool: %+v, %v", cr, err)
			}
			select {
			case <-started:
			case <-ctx.Done():
				t.Fatal("the upstream's tool did not start")
			}
			if err := cr.Task.Cancel(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-stopped:
			case <-ctx.Done():
				t.Fatal("the upstream's tool ran on after the proxied task was cancelled")
			}
		})
	}
}

// TestProxyElicit_Released: a call whose task is released to another worker
// while the upstream's elicitation/create waits (a drain, under
// Retry.Rerun) ends its upstream call at once, so that the drain is not
// held and the upstream's work does not go on beside the re-run. The
// upstream's tool here keeps working after its question fails, until its
// call is cancelled.
func TestProxyElicit_Released(t *testing.T) {
	stopped, release := make(chan struct{}, 1), make(chan struct{})
	up := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "0"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "ask_then_work", Description: "Asks, then works until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			_, _ = req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Go on?", RequestedSchema: &jsonschema.Schema{Type: "object"}})
			select {
			case <-ctx.Done():
				stopped <- struct{}{}
			case <-release: // the test failed: let the upstream close
			}
			return nil, nil, ctx.Err()
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) }) // before hs.Close
	c, srv := startProxy(t, hs.URL, client.LegacyProtocolVersion, &proxy.Options{Retry: engine.RetryPolicy{Rerun: true}})
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cr, err := c.CallTool(ctx, "ask_then_work", nil)
	if err != nil || cr.Task == nil {
		t.Fatalf("CallTool: %+v, %v", cr, err)
	}
	waitAsked(t, ctx, cr.Task)
	// A drain deadline far off: a call still running at it would be cut
	// there, and Shutdown would say so.
	drain, stop := context.WithTimeout(ctx, waitTimeout/2)
	defer stop()
	if err := srv.Shutdown(drain); err != nil {
		t.Fatalf("Shutdown: %v; want the released call ended at once, within the drain", err)
	}
	select { // go-sdk delivers the cancel from a goroutine of its own
	case <-stopped:
	case <-ctx.Done():
		t.Error("the upstream's call was not cancelled")
	}
}

// TestProxyTaskUpstream_Unreachable: a call to an upstream that serves
// tasks, once it cannot be reached, fails with the message of any other
// upstream that cannot be reached (examples/proxy.md).
func TestProxyTaskUpstream_Unreachable(t *testing.T) {
	up := mcpserver.New(&mcp.Implementation{Name: "upstream", Version: "0"}, serverOptions())
	if err := tasktools.Register(up, &tasktools.Options{Step: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := up.Start(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	defer up.Shutdown(context.Background())
	hs := httptest.NewServer(up.Handler())
	p, err := proxy.New(t.Context(), &proxy.Upstream{URL: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs.Close() // the proxy learnt that it serves tasks; now it is gone
	srv := mcpserver.New(&mcp.Implementation{Name: "proxy", Version: "0"}, serverOptions())
	if err := p.Register(srv); err != nil {
		t.Fatal(err)
	}
	c := client.New(serveHTTP(t, srv), &client.Options{MinPollInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cr, err := c.CallTool(ctx, "slow_compute", map[string]any{"seconds": 1})
	if err != nil || cr.Task == nil {
		t.Fatalf("CallTool: %+v, %v", cr, err)
	}
	_, err = cr.Task.Wait(ctx)
	var te *client.TaskError
	if !errors.As(err, &te) || te.Err == nil || !strings.Contains(te.Err.Message, "cannot connect") {
		t.Errorf("the task of an unreachable upstream ended with %v, want failed with \"cannot connect\"", err)
	}
}
