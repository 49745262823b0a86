package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/tasktools"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/proxy"
	"github.com/mcptasks/mcptasks/store/memory"
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
