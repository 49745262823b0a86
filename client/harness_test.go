package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/fixtures"
	"github.com/mcptasks/mcptasks/internal/tasktools"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
)

// This file holds what the tests share: the real server in-process, a
// clock the tests can move, and HTTP wrappers that observe or disturb the
// traffic.

const (
	// testStep paces the demo tools (failing_job works one step).
	testStep = 20 * time.Millisecond
	// testPoll is the engine's pollIntervalMs for every task.
	testPoll = 20 * time.Millisecond
	// testTimeout bounds every wait of a test.
	testTimeout = 20 * time.Second
)

// clock is the engine's time: real time plus an offset the test sets.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

type serverConfig struct {
	// wrap, if set, wraps the MCP handler (to observe or disturb traffic).
	wrap func(http.Handler) http.Handler
	// tokens, if set, requires bearer tokens.
	tokens mcpserver.Tokens
}

type testServer struct {
	url   string
	clock *clock
	eng   *engine.Engine
}

// startServer starts the real server (mcpserver + tasktools + core
// fixtures + memory store + engine) on httptest and stops it when t ends.
func startServer(t *testing.T, cfg serverConfig) *testServer {
	t.Helper()
	clk := &clock{}
	srv := mcpserver.New(&mcp.Implementation{Name: "client-test", Version: "0.0.0"}, &mcpserver.Options{
		ServerOptions: fixtures.ServerOptions(),
		Store:         memory.New(),
		Engine: &engine.Options{
			Workers: 64, DefaultPollInterval: testPoll, ClaimInterval: 50 * time.Millisecond, Now: clk.Now,
		},
	})
	fixtures.RegisterCore(srv.MCPServer())
	if err := tasktools.Register(srv, &tasktools.Options{Step: testStep}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eng := srv.Engine()
	var h http.Handler = srv.Handler()
	if cfg.tokens != nil {
		h = cfg.tokens.RequireBearer(h)
	}
	if cfg.wrap != nil {
		h = cfg.wrap(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // stop handlers still running (60 s slow_compute) at once
		_ = srv.Shutdown(ctx)
	})
	return &testServer{url: hs.URL + "/mcp", clock: clk, eng: eng}
}

// newClient returns a client of s with fast polling and opts applied.
func newClient(s *testServer, opts *client.Options) *client.Client {
	o := client.Options{}
	if opts != nil {
		o = *opts
	}
	if o.MinPollInterval == 0 {
		o.MinPollInterval = 5 * time.Millisecond
	}
	if o.DefaultPollInterval == 0 {
		o.DefaultPollInterval = testPoll
	}
	return client.New(s.url, &o)
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// text returns the text of the first content block of r.
func text(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// accept is an InputHandler that accepts every elicitation with content
// chosen per key, and counts its calls per key.
type accept struct {
	mu      sync.Mutex
	calls   map[string]int
	reqs    map[string]*client.InputRequest
	content func(key string) map[string]any
}

func newAccept(content func(key string) map[string]any) *accept {
	return &accept{calls: map[string]int{}, reqs: map[string]*client.InputRequest{}, content: content}
}

func (a *accept) HandleInput(_ context.Context, key string, req *client.InputRequest) (any, error) {
	a.mu.Lock()
	a.calls[key]++
	a.reqs[key] = req
	a.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept", Content: a.content(key)}, nil
}

func (a *accept) count(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[key]
}

// rpcMessage is a JSON-RPC request or response as the wrappers see it.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// recorded is one exchange seen by a recorder.
type recorded struct {
	header http.Header
	req    rpcMessage
}

// recorder wraps a handler and keeps every request.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m rpcMessage
		_ = json.Unmarshal(body, &m)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{header: req.Header.Clone(), req: m})
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

func (r *recorder) requests(method string) []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, x := range r.reqs {
		if x.req.Method == method {
			out = append(out, x)
		}
	}
	return out
}

// staleReplica wraps a handler so that, after each tasks/update of a
// task, the next n tasks/get of that task are answered with the last
// result from before the update, as a lagging replica would: the input
// requests just answered show up again.
type staleReplica struct {
	n     int
	mu    sync.Mutex
	last  map[string]json.RawMessage // task id -> last tasks/get result
	stale map[string]int             // task id -> stale replies still to give
	given atomic.Int64
}

func newStaleReplica(n int) *staleReplica {
	return &staleReplica{n: n, last: map[string]json.RawMessage{}, stale: map[string]int{}}
}

func (s *staleReplica) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m rpcMessage
		_ = json.Unmarshal(body, &m)
		var p struct {
			TaskID string `json:"taskId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		switch m.Method {
		case "tasks/get":
			s.mu.Lock()
			if s.stale[p.TaskID] > 0 && s.last[p.TaskID] != nil {
				s.stale[p.TaskID]--
				res := s.last[p.TaskID]
				s.mu.Unlock()
				s.given.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
				return
			}
			s.mu.Unlock()
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, req)
			if res := resultOf(rec); res != nil {
				s.mu.Lock()
				s.last[p.TaskID] = res
				s.mu.Unlock()
			}
			copyResponse(w, rec)
		case "tasks/update":
			next.ServeHTTP(w, req)
			s.mu.Lock()
			s.stale[p.TaskID] = s.n
			s.mu.Unlock()
		default:
			next.ServeHTTP(w, req)
		}
	})
}

// resultOf returns the JSON-RPC result of a recorded response (JSON or
// SSE), or nil.
func resultOf(rec *httptest.ResponseRecorder) json.RawMessage {
	body := rec.Body.Bytes()
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				last = []byte(strings.TrimSpace(d))
			}
		}
		body = last
	}
	var m rpcMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	return m.Result
}

func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// countingTransport counts the requests of each Mcp-Method the client has
// in flight, from sending to closing the reply body.
type countingTransport struct {
	mu       sync.Mutex
	inFlight map[string]int
	max      map[string]int
}

func newCountingTransport() *countingTransport {
	return &countingTransport{inFlight: map[string]int{}, max: map[string]int{}}
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	m := req.Header.Get("Mcp-Method")
	c.mu.Lock()
	c.inFlight[m]++
	c.max[m] = max(c.max[m], c.inFlight[m])
	c.mu.Unlock()
	done := func() {
		c.mu.Lock()
		c.inFlight[m]--
		c.mu.Unlock()
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		done()
		return nil, err
	}
	resp.Body = &closeHook{ReadCloser: resp.Body, f: done}
	return resp, nil
}

func (c *countingTransport) maxInFlight(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max[method]
}

type closeHook struct {
	io.ReadCloser
	once sync.Once
	f    func()
}

func (h *closeHook) Close() error {
	err := h.ReadCloser.Close()
	h.once.Do(h.f)
	return err
}
