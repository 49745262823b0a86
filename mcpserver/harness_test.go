package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/fixtures"
	"github.com/mcptasks/mcptasks/internal/tasktools"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/changefeed"
	"github.com/mcptasks/mcptasks/store/memory"
)

// This file holds what the wire and auth tests share: an in-process server,
// a minimal stateless 2026-07-28 HTTP client that reads JSON and SSE
// replies, and the normalisation of volatile values.

const (
	wireVersion      = "2026-07-28"
	legacyVersion    = "2025-11-25"
	tasksExtensionID = "io.modelcontextprotocol/tasks"
	// testStep paces the demo tools (failing_job works one step).
	testStep = 50 * time.Millisecond
	// waitTimeout bounds every poll for a task status.
	waitTimeout = 5 * time.Second
	// pollEvery is the pause between two polls of a wait.
	pollEvery = 10 * time.Millisecond
)

// metaMacros are the _meta objects that request bodies name instead of
// spelling them out. $META declares the Tasks extension and form
// elicitation; $META_NOTASKS declares no capability at all; $META_ELICIT
// declares form elicitation only.
var metaMacros = map[string]string{
	"$META": `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"wire-test","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`,
	"$META_NOTASKS": `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"wire-test","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`,
	"$META_ELICIT": `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"wire-test","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`,
}

// serverConfig configures one in-process server.
type serverConfig struct {
	// maxBodyBytes and maxInflightBytes are the Options fields (defaults
	// if zero).
	maxBodyBytes, maxInflightBytes int64
	// tokens, if set, wraps the handler with tokens.RequireBearer.
	tokens mcpserver.Tokens
	// verifier, if set, wraps the handler with go-sdk's
	// auth.RequireBearerToken.
	verifier auth.TokenVerifier
	// noFastPath serves tasks/* through go-sdk.
	noFastPath bool
	// tracerProvider traces the server and the engine (no tracing if nil).
	tracerProvider trace.TracerProvider
	// store keeps the tasks (a fresh memory store if nil).
	store store.Store
	// replicas is the number of servers on the store (1 if zero); they
	// share the session key, as replicas behind one endpoint do.
	replicas int
	// allowedOrigins is mcpserver.Options.AllowedOrigins.
	allowedOrigins []string
	// maxJSONDepth and maxArgumentsBytes are the Options fields.
	maxJSONDepth      int
	maxArgumentsBytes int64
	// maxSubscribedTasks, maxSubscriptions and listenKeepAlive are the
	// Options fields.
	maxSubscribedTasks int
	maxSubscriptions   int
	listenKeepAlive    time.Duration
	// maxStreams and maxInlineCalls are the Options fields.
	maxStreams     int
	maxInlineCalls int
	// register, if set, adds more tools to the server.
	register func(*mcpserver.Server) error
	// suspendAfter is engine.Options.SuspendAfter.
	suspendAfter time.Duration
}

// routes are the two ways the server answers tasks/*: its fast path and
// go-sdk's handler (serverConfig.noFastPath). A test that runs on both
// must see the same behaviour.
var routes = []struct {
	name       string
	noFastPath bool
}{{"fast path", false}, {"go-sdk", true}}

// testSessionKey signs the 2025-11-25 session ids of every test server.
var testSessionKey = []byte("wire-test-session-key-0123456789abcdef")

// startServer starts a server with the tools mcptasks serves by default
// (the fixtures of packages fixtures and tasktools) on a fresh memory
// store, and stops it when t ends.
func startServer(t *testing.T, cfg serverConfig) *testClient {
	t.Helper()
	st := cfg.store
	if st == nil {
		st = memory.New()
	}
	srv := mcpserver.New(&mcp.Implementation{Name: "mcptasks-wire-test", Version: "0.0.0-test"}, &mcpserver.Options{
		ServerOptions:    fixtures.ServerOptions(),
		MaxBodyBytes:     cfg.maxBodyBytes,
		MaxInflightBytes: cfg.maxInflightBytes,
		DisableFastPath:  cfg.noFastPath,
		TracerProvider:   cfg.tracerProvider,
		SessionKey:       testSessionKey,
		AllowedOrigins:   cfg.allowedOrigins,

		MaxJSONDepth:      cfg.maxJSONDepth,
		MaxArgumentsBytes: cfg.maxArgumentsBytes,

		Store:              st,
		Engine:             &engine.Options{Workers: 4, SuspendAfter: cfg.suspendAfter},
		ChangeFeed:         changefeed.New(st, nil),
		MaxSubscribedTasks: cfg.maxSubscribedTasks,
		MaxSubscriptions:   cfg.maxSubscriptions,
		ListenKeepAlive:    cfg.listenKeepAlive,
		MaxStreams:         cfg.maxStreams,
		MaxInlineCalls:     cfg.maxInlineCalls,
	})
	fixtures.RegisterCore(srv.MCPServer())
	if err := tasktools.Register(srv, &tasktools.Options{Step: testStep}); err != nil {
		t.Fatalf("tasktools.Register: %v", err)
	}
	if cfg.register != nil {
		if err := cfg.register(srv); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	var h http.Handler = srv.Handler()
	if cfg.tokens != nil {
		h = cfg.tokens.RequireBearer(h)
	}
	if cfg.verifier != nil {
		h = auth.RequireBearerToken(cfg.verifier, nil)(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.Close()
		// A done context cancels handlers still running (60 s
		// slow_compute) instead of waiting for them.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = srv.Shutdown(ctx)
	})
	return &testClient{base: hs.URL, http: hs.Client(), srv: srv}
}

// startReplicas starts cfg.replicas servers (at least one) on one store.
func startReplicas(t *testing.T, cfg serverConfig) []*testClient {
	t.Helper()
	if cfg.store == nil {
		cfg.store = memory.New()
	}
	cs := []*testClient{startServer(t, cfg)}
	for len(cs) < cfg.replicas {
		cs = append(cs, startServer(t, cfg))
	}
	return cs
}

// testClient sends raw HTTP requests to one server.
type testClient struct {
	base string
	http *http.Client
	srv  *mcpserver.Server
}

// rawRequest is one HTTP request as a transcript spells it.
type rawRequest struct {
	method string // HTTP method
	path   string
	header http.Header
	body   []byte
	// readMessages, if set, reads that many SSE messages of a stream that
	// stays open, and no more: they are the reply.
	readMessages int
}

// rawResponse is one HTTP response, with the JSON-RPC messages it carried.
type rawResponse struct {
	status int
	header http.Header
	// class is "json", "sse", "empty", or else the media type.
	class string
	body  []byte
	// messages are the JSON body, or the data of each SSE event.
	messages []json.RawMessage
}

// readEvents reads the SSE events of r until n of them carried data, and
// returns their lines.
func readEvents(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	var out bytes.Buffer
	br := bufio.NewReader(r)
	data := false // the event being read has data
	for n > 0 {
		line, err := br.ReadBytes('\n')
		out.Write(line)
		switch trimmed := bytes.TrimRight(line, "\r\n"); {
		case bytes.HasPrefix(trimmed, []byte("data:")):
			data = true
		case len(trimmed) == 0 && data:
			n--
			data = false
		}
		if err != nil && n > 0 {
			t.Fatalf("read response: %v, %d message(s) short: %s", err, n, out.Bytes())
		}
	}
	return out.Bytes()
}

// do sends req. Content-Type and Accept default to what a 2026-07-28
// client sends.
func (c *testClient) do(t *testing.T, req *rawRequest) *rawResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, req.method, c.base+req.path, bytes.NewReader(req.body))
	if err != nil {
		t.Fatalf("build request: %v", err)
	}
	for k, vs := range req.header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	if h := hr.Header.Get("Host"); h != "" { // Go sends Request.Host, not a Host header
		hr.Host = h
		hr.Header.Del("Host")
	}
	if hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if hr.Header.Get("Accept") == "" {
		hr.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", req.method, req.path, err)
	}
	defer resp.Body.Close()
	var body []byte
	if req.readMessages > 0 {
		body = readEvents(t, resp.Body, req.readMessages)
	} else if body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("read response: %v", err)
	}
	r := &rawResponse{status: resp.StatusCode, header: resp.Header, body: body}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case len(bytes.TrimSpace(body)) == 0:
		r.class = "empty"
	case mt == "application/json":
		r.class = "json"
		r.messages = []json.RawMessage{bytes.TrimSpace(body)}
	case mt == "text/event-stream":
		r.class = "sse"
		r.messages = sseData(body)
	default:
		r.class = mt
	}
	return r
}

// sseData returns the data of each event of an SSE stream.
func sseData(body []byte) []json.RawMessage {
	var out []json.RawMessage
	var data []string
	flush := func() {
		if len(data) > 0 {
			out = append(out, json.RawMessage(strings.Join(data, "\n")))
			data = nil
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	flush()
	return out
}

// rpc sends one JSON-RPC request with the standard 2026-07-28 headers.
// name is the Mcp-Name value ("" for none); token, if set, is sent as a
// bearer token.
func (c *testClient) rpc(t *testing.T, token, method, name, body string) *rawResponse {
	t.Helper()
	h := http.Header{}
	h.Set("MCP-Protocol-Version", wireVersion)
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(expandMeta(body))})
}

// reply decodes the one JSON-RPC response of r.
func (r *rawResponse) reply(t *testing.T) *rpcReply {
	t.Helper()
	for _, m := range r.messages {
		var rep rpcReply
		if err := json.Unmarshal(m, &rep); err == nil && (rep.Result != nil || rep.Error != nil) {
			rep.raw = m
			return &rep
		}
	}
	t.Fatalf("HTTP %d %s response carries no JSON-RPC response: %s", r.status, r.class, r.body)
	return nil
}

// rpcReply is a JSON-RPC response.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw json.RawMessage
}

// taskView is what the tests read of a task result.
type taskView struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
}

// getTask sends tasks/get for id with a well-formed request and returns the
// reply.
func (c *testClient) getTask(t *testing.T, token, id string) (*rawResponse, *rpcReply) {
	t.Helper()
	return c.getTaskIn(t, token, id, "")
}

// getTaskIn is getTask in the 2025-11-25 session if one is given.
func (c *testClient) getTaskIn(t *testing.T, token, id, session string) (*rawResponse, *rpcReply) {
	t.Helper()
	if session != "" {
		h := http.Header{}
		h.Set("MCP-Protocol-Version", legacyVersion)
		h.Set("Mcp-Session-Id", session)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"get","method":"tasks/get","params":{"taskId":%q}}`, id)
		resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(body)})
		return resp, resp.reply(t)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"get","method":"tasks/get","params":{"_meta":$META,"taskId":%q}}`, id)
	resp := c.rpc(t, token, "tasks/get", id, body)
	return resp, resp.reply(t)
}

// waitStatus polls tasks/get until the task has status (and, if msg is not
// nil, that statusMessage), for at most waitTimeout. Every poll must
// succeed and validate against the schema: the first one, sent right after
// creation, checks that creation was durable.
func (c *testClient) waitStatus(t *testing.T, token, id, status string, msg *string) json.RawMessage {
	t.Helper()
	return c.waitStatusIn(t, token, id, "", status, msg)
}

// waitStatusIn is waitStatus in the 2025-11-25 session if one is given.
func (c *testClient) waitStatusIn(t *testing.T, token, id, session, status string, msg *string) json.RawMessage {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last taskView
	for {
		resp, rep := c.getTaskIn(t, token, id, session)
		if rep.Error != nil {
			t.Fatalf("waiting for %s: tasks/get failed: HTTP %d %s", status, resp.status, rep.raw)
		}
		if err := validateExchange("tasks/get", rep.raw); session == "" && err != nil {
			t.Fatalf("waiting for %s: %v\n%s", status, err, rep.raw)
		}
		last = taskView{}
		if err := json.Unmarshal(rep.Result, &last); err != nil {
			t.Fatalf("waiting for %s: %v", status, err)
		}
		if last.Status == status && (msg == nil || last.StatusMessage == *msg) {
			return rep.Result
		}
		if last.Status != status && isTerminal(last.Status) {
			t.Fatalf("waiting for %s: the task ended %s: %s", status, last.Status, rep.Result)
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still %s (%q) after %s", status, last.Status, last.StatusMessage, waitTimeout)
		}
		time.Sleep(pollEvery) // bounded polling, not a wait for state
	}
}

func isTerminal(s string) bool { return s == "completed" || s == "failed" || s == "cancelled" }

var metaRE = regexp.MustCompile(`\$META(_[A-Z]+)?\b`)

// expandMeta replaces the $META macros of s.
func expandMeta(s string) string {
	return metaRE.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := metaMacros[m]; ok {
			return v
		}
		return m
	})
}

// normalizer replaces the volatile values of responses with stable names:
// task ids with $TASK1, $TASK2… in order of appearance, timestamps with
// $TIME and the server version with $VERSION.
type normalizer struct {
	ids []string
	// legacy marks the ids of 2025-11-25 tasks; session is the
	// Mcp-Session-Id that initialize returned last ($SESSION).
	legacy  map[string]bool
	session string
	// origin is the server's own origin, http://127.0.0.1:PORT.
	origin string
}

var taskRefRE = regexp.MustCompile(`\$TASK([0-9]+)`)

var base64RE = regexp.MustCompile(`\$BASE64\(([^()]*)\)`)

// expand replaces $TASKn, $BASE64(…), $ORIGIN and the $META macros in
// transcript text with the values they stand for.
func (n *normalizer) expand(s string) (string, error) {
	var err error
	s = strings.ReplaceAll(s, "$ORIGIN", n.origin)
	s = taskRefRE.ReplaceAllStringFunc(s, func(m string) string {
		i, _ := strconv.Atoi(m[len("$TASK"):])
		if i < 1 || i > len(n.ids) {
			err = fmt.Errorf("%s is not known yet (%d tasks seen)", m, len(n.ids))
			return m
		}
		return n.ids[i-1]
	})
	s = strings.ReplaceAll(s, "$SESSION", n.session)
	s = base64RE.ReplaceAllStringFunc(s, func(m string) string {
		inner := base64RE.FindStringSubmatch(m)[1]
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(inner)) + "?="
	})
	return expandMeta(s), err
}

// learn records the task id of a result that carries one.
func (n *normalizer) learn(msg json.RawMessage) {
	var m struct {
		Result struct {
			TaskID string `json:"taskId"`
			Task   struct {
				TaskID string `json:"taskId"`
			} `json:"task"` // a 2025-11-25 CreateTaskResult
		} `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return
	}
	id := m.Result.TaskID
	if lid := m.Result.Task.TaskID; lid != "" {
		id = lid
		if n.legacy == nil {
			n.legacy = map[string]bool{}
		}
		n.legacy[id] = true
	}
	if id == "" || slices.Contains(n.ids, id) {
		return
	}
	n.ids = append(n.ids, id)
}

// normalize returns msg as indented JSON with volatile values replaced.
// Keys come out sorted.
func (n *normalizer) normalize(msg json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	v = n.walk("", v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

func (n *normalizer) walk(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = n.walk(k, e)
		}
		if si, ok := v["io.modelcontextprotocol/serverInfo"].(map[string]any); ok {
			if _, ok := si["version"]; ok {
				si["version"] = "$VERSION"
			}
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = n.walk("", e)
		}
		return v
	case string:
		if key == "createdAt" || key == "lastUpdatedAt" {
			return "$TIME"
		}
		for i, id := range n.ids {
			v = strings.ReplaceAll(v, id, fmt.Sprintf("$TASK%d", i+1))
		}
		return v
	}
	return v
}

// canonical returns msg re-encoded with sorted keys, for byte comparisons
// that ignore key order.
func canonical(t *testing.T, msg json.RawMessage) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("canonical: %v: %s", err, msg)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("canonical: %v", err)
	}
	return string(b)
}
