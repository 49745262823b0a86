package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

// fake is a scripted server: reply builds the response to each request.
type fake struct {
	mu     sync.Mutex
	seen   []*http.Request
	bodies []map[string]json.RawMessage
	reply  func(w http.ResponseWriter, n int, req map[string]json.RawMessage)
}

func startFake(t *testing.T, reply func(w http.ResponseWriter, n int, req map[string]json.RawMessage)) (*fake, string) {
	t.Helper()
	f := &fake{reply: reply}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		f.mu.Lock()
		n := len(f.seen)
		f.seen = append(f.seen, r)
		f.bodies = append(f.bodies, m)
		f.mu.Unlock()
		f.reply(w, n, m)
	}))
	t.Cleanup(hs.Close)
	return f, hs.URL
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func result(id json.RawMessage, r any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": r}
}

func rpcErr(id json.RawMessage, code int, msg string, data any) map[string]any {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": e}
}

func TestEncodeHeaderValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain-name_1.2", "plain-name_1.2"},
		{"", ""},
		{"us west 1", "us west 1"},
		{"file:///a%20b?x=1", "file:///a%20b?x=1"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"\tindented", "=?base64?CWluZGVudGVk?="},
		{"trailing ", "=?base64?dHJhaWxpbmcg?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"a\x7fb", "=?base64?YX9i?="},
		{"=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="},
	} {
		if got := client.EncodeHeaderValue(tc.in); got != tc.want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if back, ok := client.DecodeHeaderValue(client.EncodeHeaderValue(tc.in)); !ok || back != strings.TrimSpace(tc.in) && back != tc.in {
			t.Errorf("round trip of %q: %q, %v", tc.in, back, ok)
		}
	}
	if _, ok := client.DecodeHeaderValue("=?base64?!!!?="); ok {
		t.Error("bad base64 decoded")
	}
}

func TestRequestShapeAndHeaders(t *testing.T) {
	f, url := startFake(t, func(w http.ResponseWriter, _ int, req map[string]json.RawMessage) {
		writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "contents": []any{}}))
	})
	c := client.New(url, &client.Options{Token: "t0k", InputHandler: client.InputHandlerFunc(nil)})
	ctx := testContext(t)
	if _, err := c.ReadResource(ctx, "test://é/ü"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadResource(ctx, "test://plain"); err != nil {
		t.Fatal(err)
	}
	h := f.seen[0].Header
	for k, want := range map[string]string{
		"Mcp-Method":           "resources/read",
		"Mcp-Name":             client.EncodeHeaderValue("test://é/ü"),
		"MCP-Protocol-Version": "2026-07-28",
		"Accept":               "application/json, text/event-stream",
		"Content-Type":         "application/json",
		"Authorization":        "Bearer t0k",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(h.Get("Mcp-Name"), "=?base64?") {
		t.Errorf("non-ASCII Mcp-Name not encoded: %q", h.Get("Mcp-Name"))
	}
	if got := f.seen[1].Header.Get("Mcp-Name"); got != "test://plain" {
		t.Errorf("plain Mcp-Name: %q", got)
	}
	// Fresh ids, and the _meta every request carries.
	if string(f.bodies[0]["id"]) == string(f.bodies[1]["id"]) {
		t.Errorf("id reused: %s", f.bodies[0]["id"])
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(f.bodies[0]["params"], &p)
	if string(p.Meta[client.MetaProtocolVersion]) != `"2026-07-28"` ||
		string(p.Meta[client.MetaClientCapabilities]) != `{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}` ||
		!strings.Contains(string(p.Meta[client.MetaClientInfo]), `"name":"mcptasks-client"`) {
		t.Errorf("_meta: %v", p.Meta)
	}
}

func TestSSEReply(t *testing.T) {
	_, url := startFake(t, func(w http.ResponseWriter, _ int, req map[string]json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progress": 1}})
		other, _ := json.Marshal(result(json.RawMessage(`999999`), map[string]any{}))
		final, _ := json.Marshal(result(req["id"], map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "done"}}}))
		fmt.Fprintf(w, ": keep-alive\r\n\r\nevent: message\r\nid: 1\r\ndata: %s\r\n\r\n", note)
		fmt.Fprintf(w, "data: %s\n\n", other)
		// The response split over two data lines.
		half := strings.Index(string(final), `,"jsonrpc"`) + 1
		fmt.Fprintf(w, "data: %s\ndata: %s\n\n", final[:half], final[half:])
	})
	var notes []string
	c := client.New(url, &client.Options{OnNotification: func(m string, _ json.RawMessage) { notes = append(notes, m) }})
	res, err := c.CallTool(testContext(t), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if text(res.Result) != "done" || len(notes) != 1 || notes[0] != "notifications/progress" {
		t.Errorf("result %q, notifications %v", text(res.Result), notes)
	}
}

func TestReplyErrors(t *testing.T) {
	var mode string
	rejected := false
	f, url := startFake(t, func(w http.ResponseWriter, _ int, req map[string]json.RawMessage) {
		switch mode {
		case "unknown-result-type":
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "banana"}))
		case "task-on-read":
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "task", "taskId": "t"}))
		case "401-plain":
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "no", http.StatusUnauthorized)
		case "401-jsonrpc":
			writeJSON(w, 401, rpcErr(nil, -32600, "Unauthorized", nil))
		case "500-html":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(500)
			fmt.Fprint(w, "<h1>oops</h1>")
		case "huge":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"pad":"%s"}}`, req["id"], strings.Repeat("x", 4096))
		case "huge-sse":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", strings.Repeat("x", 4096))
		case "sse-eof":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, ": nothing\n\n")
		case "wrong-id":
			writeJSON(w, 200, result(json.RawMessage(`"nope"`), map[string]any{}))
		case "32022-then-ok":
			if !rejected {
				rejected = true
				writeJSON(w, 400, rpcErr(req["id"], -32022, "Unsupported protocol version", map[string]any{"supported": []string{"2026-07-28"}, "requested": "x"}))
				return
			}
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "tools": []any{}}))
		case "32022-other":
			writeJSON(w, 400, rpcErr(req["id"], -32022, "Unsupported protocol version", map[string]any{"supported": []string{"2099-01-01"}, "requested": "x"}))
		case "no-result-type":
			writeJSON(w, 200, result(req["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "legacy"}}}))
		case "input-loop":
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "input_required", "requestState": "again"}))
		}
	})
	// No retries of calls whose outcome is unknown: this fake answers
	// server/discover with the same error (TestCallTool_Retry tests them).
	c := client.New(url, &client.Options{MaxReplyBytes: 1024, CreateRetries: -1})
	ctx := testContext(t)
	check := func(m string, call func() error, want ...error) {
		t.Helper()
		mode = m
		err := call()
		for _, w := range want {
			if !errors.Is(err, w) {
				t.Errorf("%s: %v, want %v", m, err, w)
			}
		}
		if len(want) == 0 && err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	callTool := func() error { _, err := c.CallTool(ctx, "x", nil); return err }
	read := func() error { _, err := c.ReadResource(ctx, "u"); return err }
	list := func() error { _, err := c.ListTools(ctx); return err }
	check("unknown-result-type", callTool, client.ErrInvalidResult)
	check("task-on-read", read, client.ErrInvalidResult)
	check("401-plain", callTool, client.ErrUnauthorized)
	check("401-jsonrpc", callTool, client.ErrUnauthorized)
	var he *client.HTTPError
	if mode = "500-html"; !errors.As(callTool(), &he) || he.StatusCode != 500 {
		t.Errorf("500: %v", he)
	}
	check("huge", callTool, client.ErrReplyTooLarge)
	check("huge-sse", callTool, client.ErrReplyTooLarge)
	var te *client.TransportError
	if mode = "sse-eof"; !errors.As(callTool(), &te) {
		t.Errorf("SSE without a response: %v", te)
	}
	if mode = "wrong-id"; !errors.As(callTool(), &te) {
		t.Errorf("wrong id: %v", te)
	}
	f.mu.Lock()
	before := len(f.seen)
	f.mu.Unlock()
	check("32022-then-ok", list)
	if f.mu.Lock(); len(f.seen)-before != 2 {
		t.Errorf("-32022 retry: %d requests, want 2", len(f.seen)-before)
	}
	f.mu.Unlock()
	check("32022-other", list, client.ErrUnsupportedVersion)
	mode = "no-result-type"
	if res, err := c.CallTool(ctx, "x", nil); err != nil || text(res.Result) != "legacy" {
		t.Errorf("no resultType: %v %v", res, err)
	}
	check("input-loop", callTool, client.ErrTooManyRounds)
	// An unreachable server is a transport error wrapping the cause.
	_, err := client.New("http://127.0.0.1:1/mcp", nil).CallTool(ctx, "x", nil)
	if !errors.As(err, &te) {
		t.Errorf("unreachable: %v", err)
	}
	// A cancelled context is reported as such.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.CallTool(cctx, "x", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestParamHeaders(t *testing.T) {
	tools := []map[string]any{
		{"name": "ok", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
			"region":   map[string]any{"type": "string", "x-mcp-header": "Region"},
			"priority": map[string]any{"type": "integer", "x-mcp-header": "Priority"},
			"verbose":  map[string]any{"type": "boolean", "x-mcp-header": "Verbose"},
			"text":     map[string]any{"type": "string", "x-mcp-header": "Text"},
			"query":    map[string]any{"type": "string"},
			"nested":   map[string]any{"type": "object", "properties": map[string]any{"zone": map[string]any{"type": "string", "x-mcp-header": "Zone"}}},
		}}},
		{"name": "bad_number", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"s": map[string]any{"type": "number", "x-mcp-header": "S"}}}},
		{"name": "bad_dup", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
			"a": map[string]any{"type": "string", "x-mcp-header": "Dup"}, "b": map[string]any{"type": "string", "x-mcp-header": "dup"}}}},
		{"name": "bad_space", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "x-mcp-header": "A B"}}}},
		{"name": "bad_empty", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "x-mcp-header": ""}}}},
		{"name": "bad_non_ascii", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "x-mcp-header": "Région"}}}},
	}
	f, url := startFake(t, func(w http.ResponseWriter, _ int, req map[string]json.RawMessage) {
		var m string
		_ = json.Unmarshal(req["method"], &m)
		if m == "tools/list" {
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": tools}))
			return
		}
		writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "content": []any{}}))
	})
	c := client.New(url, nil)
	ctx := testContext(t)
	got, err := c.ListTools(ctx)
	if err != nil || len(got) != 1 || got[0].Name != "ok" {
		t.Fatalf("ListTools kept %v, %v; want only ok", got, err)
	}
	args := map[string]any{"region": "us-west1", "priority": 42, "verbose": false, "text": "Hello, 世界", "query": "SELECT 1",
		"nested": map[string]any{"zone": "z1"}}
	if _, err := c.CallTool(ctx, "ok", args); err != nil {
		t.Fatal(err)
	}
	h := f.seen[len(f.seen)-1].Header
	for k, want := range map[string]string{
		"Mcp-Param-Region": "us-west1", "Mcp-Param-Priority": "42", "Mcp-Param-Verbose": "false",
		"Mcp-Param-Text": client.EncodeHeaderValue("Hello, 世界"), "Mcp-Param-Zone": "z1", "Mcp-Param-Query": "",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	// Null and absent arguments get no header.
	if _, err := c.CallTool(ctx, "ok", map[string]any{"region": nil}); err != nil {
		t.Fatal(err)
	}
	for k := range f.seen[len(f.seen)-1].Header {
		if strings.HasPrefix(k, "Mcp-Param-") {
			t.Errorf("unexpected %s for a null argument", k)
		}
	}
}

// TestParamHeadersChanged: a server redeployed with another x-mcp-header
// on a tool the client listed before refuses the client's headers
// (-32020); the client lists the tools again and sends the call once more,
// with the new header and the same idempotency key. Before, it listed only
// if it had never listed, and failed until restarted. A server that
// refuses every call gets one new listing and one retry per call, and the
// refusal is returned.
func TestParamHeadersChanged(t *testing.T) {
	var (
		mu      sync.Mutex
		header  = "Region" // the tool's x-mcp-header now
		refuse  bool       // refuse every call
		lists   int        // tools/list served
		flapped bool       // a new header at every tools/list
	)
	var f *fake
	f, url := startFake(t, func(w http.ResponseWriter, n int, req map[string]json.RawMessage) {
		var m string
		_ = json.Unmarshal(req["method"], &m)
		f.mu.Lock()
		h := f.seen[n].Header
		f.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		switch m {
		case "tools/list":
			lists++
			if flapped {
				header = fmt.Sprintf("H%d", lists)
			}
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
				"tools": []any{map[string]any{"name": "archive", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
					"region": map[string]any{"type": "string", "x-mcp-header": header}}}}}}))
		case "tools/call":
			if refuse || h.Get("Mcp-Param-"+header) != "us" {
				writeJSON(w, 400, rpcErr(req["id"], client.CodeHeaderMismatch, "header mismatch", nil))
				return
			}
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "content": []any{}}))
		default:
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete"}))
		}
	})
	c := client.New(url, &client.Options{ProtocolVersion: client.ProtocolVersion})
	ctx := testContext(t)
	args := map[string]any{"region": "us"}
	calls := func(from int) (out []*http.Request, keys []string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, r := range f.seen[from:] {
			if r.Header.Get("Mcp-Method") != "tools/call" {
				continue
			}
			var p struct {
				Meta map[string]string `json:"_meta"`
			}
			_ = json.Unmarshal(f.bodies[from+i]["params"], &p)
			out, keys = append(out, r), append(keys, p.Meta[task.MetaIdempotencyKey])
		}
		return out, keys
	}
	seen := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.seen) }
	listed := func() int { mu.Lock(); defer mu.Unlock(); return lists }

	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "archive", args); err != nil {
		t.Fatalf("call with the listed header: %v", err)
	}

	mu.Lock()
	header = "Location" // the server is redeployed
	mu.Unlock()
	from := seen()
	if _, err := c.CallTool(ctx, "archive", args); err != nil {
		t.Fatalf("call after the header changed: %v", err)
	}
	sent, keys := calls(from)
	if len(sent) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("after the header changed: %d tools/call with keys %q; want 2 with one key", len(sent), keys)
	}
	if h := sent[1].Header; h.Get("Mcp-Param-Location") != "us" || h.Get("Mcp-Param-Region") != "" {
		t.Errorf("the retry carried Mcp-Param-Location %q, Mcp-Param-Region %q; want the new header only",
			h.Get("Mcp-Param-Location"), h.Get("Mcp-Param-Region"))
	}
	if n := listed(); n != 2 {
		t.Errorf("%d tools/list, want 2 (one again after the refusal)", n)
	}

	// A server that refuses whatever the headers: one listing and one
	// retry, then the refusal.
	mu.Lock()
	refuse, flapped = true, true
	mu.Unlock()
	from = seen()
	if _, err := c.CallTool(ctx, "archive", args); !errors.Is(err, client.ErrHeaderMismatch) {
		t.Errorf("a persistent mismatch: %v, want ErrHeaderMismatch", err)
	}
	if sent, _ := calls(from); len(sent) != 2 || listed() != 3 {
		t.Errorf("a persistent mismatch: %d tools/call, %d tools/list in all; want 2 and 3", len(sent), listed())
	}
	// With the headers the listing gives unchanged, the call is not sent
	// again.
	mu.Lock()
	flapped = false
	mu.Unlock()
	from = seen()
	if _, err := c.CallTool(ctx, "archive", args); !errors.Is(err, client.ErrHeaderMismatch) {
		t.Errorf("a mismatch with unchanged headers: %v, want ErrHeaderMismatch", err)
	}
	if sent, _ := calls(from); len(sent) != 1 || listed() != 4 {
		t.Errorf("a mismatch with unchanged headers: %d tools/call, %d tools/list in all; want 1 and 4", len(sent), listed())
	}
}

func TestInputHandlerErrors(t *testing.T) {
	_, url := startFake(t, func(w http.ResponseWriter, _ int, req map[string]json.RawMessage) {
		writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "input_required",
			"inputRequests": map[string]any{"k": map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "?"}}}}))
	})
	boom := errors.New("boom")
	c := client.New(url, &client.Options{InputHandler: client.InputHandlerFunc(func(context.Context, string, *client.InputRequest) (any, error) {
		return nil, boom
	})})
	if _, err := c.CallTool(testContext(t), "x", nil); !errors.Is(err, boom) {
		t.Errorf("handler error: %v", err)
	}
	c = client.New(url, &client.Options{InputHandler: client.InputHandlerFunc(func(context.Context, string, *client.InputRequest) (any, error) {
		return "not an object", nil
	})})
	if _, err := c.CallTool(testContext(t), "x", nil); err == nil || !strings.Contains(err.Error(), "JSON object") {
		t.Errorf("non-object answer: %v", err)
	}
}

// TestCallTool_Retry checks the idempotency key of tools/call: every call
// carries a new one, and a call whose outcome is unknown (-32603, HTTP
// 500, a connection cut after the request was sent) is sent again with
// the same key, but only to a server whose server/discover says it
// honours keys, and never after an error that is not ambiguous.
func TestCallTool_Retry(t *testing.T) {
	const created = `{"resultType":"task","taskId":"T1","status":"working","createdAt":"2026-07-28T10:30:00.000Z","lastUpdatedAt":"2026-07-28T10:30:00.000Z","ttlMs":60000}`
	tests := []struct {
		name     string
		fail     string // how the first two tools/call fail
		honours  bool   // discover lists the capability
		wantSent int    // tools/call requests
		wantTask bool
	}{
		{"InternalErrorHonoured", "-32603", true, 3, true},
		{"HTTP500Honoured", "500", true, 3, true},
		{"CutHonoured", "cut", true, 3, true},
		{"InternalErrorNotHonoured", "-32603", false, 1, false},
		{"CutNotHonoured", "cut", false, 1, false},
		{"InvalidParams", "-32602", true, 1, false},
		// The first two tries that reach the server are cut; the one
		// between them finds the server restarting (refused), which
		// leaves the outcome unknown: the retries go on.
		{"CutThenRefused", "cut,dial", true, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			f, url := startFake(t, func(w http.ResponseWriter, _ int, req map[string]json.RawMessage) {
				var method string
				_ = json.Unmarshal(req["method"], &method)
				if method == "server/discover" {
					caps := map[string]any{"tools": map[string]any{}}
					if tt.honours {
						caps["experimental"] = map[string]any{task.MetaIdempotencyKey: map[string]any{}}
					}
					writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "supportedVersions": []string{"2026-07-28"}, "capabilities": caps}))
					return
				}
				if calls.Add(1) <= 2 {
					switch tt.fail {
					case "-32603", "-32602":
						code := map[string]int{"-32603": -32603, "-32602": -32602}[tt.fail]
						writeJSON(w, 200, rpcErr(req["id"], code, "no", nil))
					case "500":
						http.Error(w, "upstream hiccup", http.StatusInternalServerError)
					case "cut", "cut,dial":
						conn, _, _ := http.NewResponseController(w).Hijack()
						conn.Close()
					}
					return
				}
				writeJSON(w, 200, result(req["id"], json.RawMessage(created)))
			})
			var opts client.Options
			if tt.fail == "cut,dial" {
				opts.HTTPClient = &http.Client{Transport: &refuseSecond{}}
			}
			res, err := client.New(url, &opts).CallTool(testContext(t), "x", nil)
			if got := res != nil && res.Task != nil && res.Task.ID == "T1"; got != tt.wantTask || (err == nil) != tt.wantTask {
				t.Errorf("CallTool = %+v, %v; want a task: %v", res, err, tt.wantTask)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			keys := map[string]bool{}
			sent := 0
			for _, b := range f.bodies {
				var m struct {
					Method string
					Params struct {
						Meta map[string]string `json:"_meta"`
					}
				}
				_ = json.Unmarshal(mustJSON(b), &m)
				if m.Method == "tools/call" {
					sent++
					keys[m.Params.Meta[task.MetaIdempotencyKey]] = true
				}
			}
			if sent != tt.wantSent || len(keys) != 1 || keys[""] {
				t.Errorf("%d tools/call with idempotency keys %v; want %d, all with one key", sent, keys, tt.wantSent)
			}
		})
	}
}

// refuseSecond is a transport on which the second tools/call finds no
// server: its connection is refused, as while a server restarts.
type refuseSecond struct{ calls atomic.Int32 }

func (r *refuseSecond) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Mcp-Method") == "tools/call" && r.calls.Add(1) == 2 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestCallTool_NoRequestTimeout: RequestTimeout does not cut a tools/call,
// which may run its tool inline for longer: cut, it would be sent again
// with its key, and a synchronous tool would run again.
func TestCallTool_NoRequestTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	var calls atomic.Int32
	_, url := startFake(t, func(w http.ResponseWriter, _ int, req map[string]json.RawMessage) {
		var method string
		_ = json.Unmarshal(req["method"], &method)
		switch method {
		case "server/discover":
			caps := map[string]any{"tools": map[string]any{}, "experimental": map[string]any{task.MetaIdempotencyKey: map[string]any{}}}
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "supportedVersions": []string{"2026-07-28"}, "capabilities": caps}))
		case "tools/call":
			calls.Add(1)
			time.Sleep(4 * timeout) // an inline tool at work
			writeJSON(w, 200, result(req["id"], map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "done"}}}))
		}
	})
	res, err := client.New(url, &client.Options{RequestTimeout: timeout}).CallTool(testContext(t), "slow", nil)
	if err != nil || res.Result == nil || calls.Load() != 1 {
		t.Errorf("CallTool = %+v, %v after %d tools/call; want its result after one", res, err, calls.Load())
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
