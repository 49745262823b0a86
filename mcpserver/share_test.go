package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/mcpserver"
)

// TestShares: with authentication, one principal holds at most its share
// of what all principals take from (inline tool calls, the streams that
// are not task subscriptions, the in-flight bytes of the requests that
// stay), and past it is refused, while another principal is still
// served. Before, alice's 182 plain subscriptions/listen of 190 KB each
// filled the half of the in-flight budget for requests that stay, and
// bob's inline tools/call and task subscription got "Server busy"; alice's
// 256 slow inline calls made bob's get "too many tool calls running on
// this server". Without authentication, the one local principal has no
// share: the server-wide bounds alone hold it.
func TestShares(t *testing.T) {
	t.Parallel()
	const budget = 1 << 20 // its half for requests that stay: 512 KiB; a principal's share: 256 KiB
	for _, tc := range []struct {
		name string
		cfg  serverConfig
		// alice opens one request that stays; share is how many she may
		// hold, and refusal is in her reply past them.
		alice   opener
		share   int
		refusal string
		// bob opens one request of each of these once alice holds her
		// share: each must be served.
		bob []opener
	}{{
		name:    "inline calls",
		cfg:     serverConfig{maxInlineCalls: 4},
		alice:   inlineCall(0),
		share:   2,
		refusal: "HTTP 200 -32603 too many tool calls running for this principal",
		bob:     []opener{inlineCall(0), plainListen(0)},
	}, {
		name:    "plain listens",
		cfg:     serverConfig{maxStreams: 3},
		alice:   plainListen(0),
		share:   3,
		refusal: "HTTP 429 -31001 Too many open streams for this principal",
		bob:     []opener{plainListen(0), legacyResult},
	}, {
		name:    "2025-11-25 tasks/result",
		cfg:     serverConfig{maxStreams: 3},
		alice:   legacyResult,
		share:   3,
		refusal: "HTTP 429 -31001 Too many open streams for this principal",
		bob:     []opener{legacyResult, plainListen(0)},
	}, {
		// Plain listens of 62 KB: 4 fit in a share of 256 KiB, 8 in the half.
		name:    "bytes of plain listens",
		cfg:     serverConfig{maxInflightBytes: budget, maxBodyBytes: 256 << 10},
		alice:   plainListen(60 << 10),
		share:   4,
		refusal: "HTTP 503 -32603 Server busy: too many open streams",
		bob:     []opener{inlineCall(100 << 10), taskListen, plainListen(60 << 10)},
	}, {
		// Inline calls of 100 KiB: 2 fit in a share of 256 KiB, 5 in the half.
		name:    "bytes of inline calls",
		cfg:     serverConfig{maxInflightBytes: budget, maxBodyBytes: 256 << 10},
		alice:   inlineCall(100 << 10),
		share:   2,
		refusal: "HTTP 200 -32603 Server busy: too many bytes held by running tool calls and open streams",
		bob:     []opener{inlineCall(100 << 10), plainListen(60 << 10), taskListen},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			t.Run("TwoPrincipals", func(t *testing.T) {
				t.Parallel()
				e := startShareServer(t, tc.cfg, twoPrincipals)
				hold := tc.alice(e, "tokA")
				held, refusal := 0, ""
				for refusal == "" && held <= 2*tc.share { // without shares, alice takes more
					if refusal = hold(); refusal == "" {
						held++
					}
				}
				if held != tc.share || !strings.Contains(refusal, tc.refusal) {
					t.Errorf("alice held %d, then was refused with %.300q; want %d, then %q", held, refusal, tc.share, tc.refusal)
				}
				for i, open := range tc.bob {
					if refusal := open(e, "tokB")(); refusal != "" {
						t.Errorf("bob's request %d beside alice's %d: refused with %.300q; want it served", i+1, held, refusal)
					}
				}
			})
			t.Run("Local", func(t *testing.T) {
				t.Parallel()
				e := startShareServer(t, tc.cfg, nil)
				hold := tc.alice(e, "")
				for i := range 2 * tc.share {
					if refusal := hold(); refusal != "" {
						t.Fatalf("the local principal's request %d: refused with %.300q; want twice a principal's share (%d) served", i+1, refusal, tc.share)
					}
				}
			})
		})
	}
}

// shareEnv is the server of one TestShares run, with the tool "block",
// whose calls run until the test ends.
type shareEnv struct {
	t       *testing.T
	c       *testClient
	started chan struct{}   // a call of block started
	calls   *sync.WaitGroup // the calls of block sent
}

// startShareServer starts a server of cfg with the tool "block", behind
// tokens if not nil.
func startShareServer(t *testing.T, cfg serverConfig, tokens mcpserver.Tokens) *shareEnv {
	e := &shareEnv{t: t, started: make(chan struct{}), calls: &sync.WaitGroup{}}
	release := make(chan struct{})
	cfg.tokens = tokens
	cfg.register = func(srv *mcpserver.Server) error {
		return mcpserver.AddTool(srv, &mcp.Tool{Name: "block"}, mcpserver.ToolOptions{Task: mcpserver.TaskNever},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct {
				Pad string `json:"pad"`
			}) (*mcp.CallToolResult, any, error) {
				select {
				case e.started <- struct{}{}:
				case <-ctx.Done():
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
			})
	}
	e.c = startServer(t, cfg)
	t.Cleanup(func() { // before the server's cleanup, which waits for them
		close(release)
		e.calls.Wait()
	})
	return e
}

// An opener readies a principal (token) to open requests that stay; the
// holder it returns opens one, and keeps it open until the test ends.
type (
	opener func(e *shareEnv, token string) holder
	holder func() (refusal string)
)

// request returns a POST of body as the principal of token (none if "")
// with the 2026-07-28 headers of method and the Mcp-Name name, if any.
func (e *shareEnv) request(ctx context.Context, token, method, name, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.c.base+"/mcp", strings.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {method}}
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// post sends the request of body (see request) and returns the response
// as it starts; the test's end closes it.
func (e *shareEnv) post(token, method, body string) *http.Response {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := e.c.http.Do(e.request(ctx, token, method, "", body))
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp
}

// stream returns "" once resp is an SSE stream whose first event came,
// else the refusal it carries.
func (e *shareEnv) stream(resp *http.Response) string {
	e.t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return refusalOf(resp)
	}
	readEvents(e.t, resp.Body, 1)
	return ""
}

// refusalOf returns "HTTP <status> <code> <message>" of a reply that
// carries a JSON-RPC error, else "HTTP <status> <body>".
func refusalOf(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	var m struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(mcptest.LastMessage(b), &m) != nil || m.Error == nil {
		return fmt.Sprintf("HTTP %d %s", resp.StatusCode, b)
	}
	return fmt.Sprintf("HTTP %d %d %s", resp.StatusCode, m.Error.Code, m.Error.Message)
}

// plainListen opens subscriptions/listen without taskIds (as a go-sdk
// client does for its session), its body padded by pad bytes.
func plainListen(pad int) opener {
	return func(e *shareEnv, token string) holder {
		body := expandMeta(`{"jsonrpc":"2.0","id":1,` + strings.Repeat(" ", pad) + `"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"toolsListChanged":true}}}`)
		return func() string { return e.stream(e.post(token, "subscriptions/listen", body)) }
	}
}

// taskListen opens a task subscription to a task of the principal's that
// waits for input.
func taskListen(e *shareEnv, token string) holder {
	id := e.c.createTask(e.t, token, "confirm_delete", `{"filename":"notes.txt"}`)
	e.c.waitStatus(e.t, token, id, "input_required", nil)
	body := expandMeta(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"taskIds":["` + id + `"]}}}`)
	return func() string { return e.stream(e.post(token, "subscriptions/listen", body)) }
}

// legacyResult opens a 2025-11-25 tasks/result of a task of the
// principal's that asks for input: the stream's first event is the
// question.
func legacyResult(e *shareEnv, token string) holder {
	s := initializeWith(e.t, e.c, token, `{"elicitation":{}}`)
	id := s.callTask(`{"name":"confirm_delete","arguments":{"filename":"notes.txt"},"task":{}}`)
	return func() string {
		ctx, cancel := context.WithCancel(context.Background())
		resp := s.open(ctx, `{"jsonrpc":"2.0","id":7,"method":"tasks/result","params":{"taskId":"`+id+`"}}`)
		e.t.Cleanup(func() { cancel(); resp.Body.Close() })
		return e.stream(resp)
	}
}

// inlineCall calls the tool "block", which runs inline, with arguments
// padded by pad bytes; it returns once the tool runs, or with the refusal.
func inlineCall(pad int) opener {
	return func(e *shareEnv, token string) holder {
		body := expandMeta(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"block","arguments":{"pad":"` + strings.Repeat("x", pad) + `"}}}`)
		return func() string {
			refused := make(chan string, 1)
			e.calls.Go(func() { // until the tool returns, at the test's end
				resp, err := e.c.http.Do(e.request(context.Background(), token, "tools/call", "block", body))
				if err != nil {
					refused <- err.Error()
					return
				}
				defer resp.Body.Close()
				refused <- refusalOf(resp)
			})
			select {
			case <-e.started:
				return ""
			case r := <-refused:
				return r
			}
		}
	}
}
