package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/task"
)

// stream is an open subscriptions/listen reply.
type stream struct {
	resp   *http.Response
	cancel context.CancelFunc
	lines  chan string // every line of the body, keep-alive comments included
}

// listen opens a task subscription as token's principal and returns the
// open stream; a reply that is not a stream fails the test.
func (c *testClient) listen(t *testing.T, token string, id any, taskIDs ...string) *stream {
	t.Helper()
	s, resp := c.tryListen(t, token, id, taskIDs...)
	if s == nil {
		t.Fatalf("listen: HTTP %d %s", resp.status, resp.body)
	}
	return s
}

// tryListen is listen that returns the whole reply instead when it is not
// a stream.
func (c *testClient) tryListen(t *testing.T, token string, id any, taskIDs ...string) (*stream, *rawResponse) {
	t.Helper()
	idJSON, _ := json.Marshal(id)
	ids, _ := json.Marshal(taskIDs)
	body := expandMeta(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"taskIds":%s}}}`, idJSON, ids))
	ctx, cancel := context.WithCancel(t.Context())
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/mcp", strings.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("MCP-Protocol-Version", wireVersion)
	hr.Header.Set("Mcp-Method", "subscriptions/listen")
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		cancel()
		t.Fatalf("listen: %v", err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer cancel()
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		r := &rawResponse{status: resp.StatusCode, header: resp.Header, body: b.Bytes(), class: "json", messages: []json.RawMessage{bytes.TrimSpace(b.Bytes())}}
		return nil, r
	}
	s := &stream{resp: resp, cancel: cancel, lines: make(chan string, 64)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(s.close)
	return s, nil
}

// close ends the subscription from the client's side.
func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next JSON-RPC message of the stream, or nil when the
// stream ended; it fails the test after 10 s.
func (s *stream) next(t *testing.T) json.RawMessage {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return nil
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				return json.RawMessage(data)
			}
		case <-timeout:
			t.Fatalf("no message on the stream within 10 s")
		}
	}
}

// listenMessage is what the tests read of a message on a listen stream.
type listenMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
		taskView
		Result json.RawMessage `json:"result"`
	} `json:"params"`
	Result *struct {
		Meta       map[string]json.RawMessage `json:"_meta"`
		ResultType string                     `json:"resultType"`
	} `json:"result"`
}

func decodeListen(t *testing.T, raw json.RawMessage) *listenMessage {
	t.Helper()
	var m listenMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return &m
}

// TestListen_Flow follows a task through a subscription on both routes:
// the acknowledgement first, with the visible id only; then a
// notification for the change an answer makes, each carrying the
// subscription id and what tasks/get shows, the last one completed with
// the result; then the listen's response, and the end of the stream.
func TestListen_Flow(t *testing.T) {
	t.Parallel()
	for _, route := range routes {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			c := startServer(t, serverConfig{noFastPath: route.noFastPath})
			id := c.createTask(t, "", "confirm_delete", `{"filename":"notes.txt"}`)
			c.waitStatus(t, "", id, "input_required", nil)

			s := c.listen(t, "", 42, id, task.NewID())
			ack := decodeListen(t, s.next(t))
			if ack.Method != "notifications/subscriptions/acknowledged" || string(ack.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != "42" ||
				len(ack.Params.Notifications.TaskIDs) != 1 || ack.Params.Notifications.TaskIDs[0] != id {
				t.Fatalf("first message: want the acknowledgement of [%s] for subscription 42, got %+v", id, ack)
			}

			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/update","params":{"_meta":$META,"taskId":%q,"inputResponses":{"confirm-delete":{"action":"accept","content":{"confirm":true}}}}}`, id)
			if rep := c.rpc(t, "", "tasks/update", id, answer).reply(t); rep.Error != nil {
				t.Fatalf("tasks/update: %s", rep.raw)
			}
			var statuses []string
			var last *listenMessage
			var lastRaw json.RawMessage
			for {
				raw := s.next(t)
				if raw == nil {
					t.Fatal("the stream ended without the listen's response")
				}
				m := decodeListen(t, raw)
				if m.Result != nil {
					if m.Result.ResultType != "complete" || string(m.Result.Meta["io.modelcontextprotocol/subscriptionId"]) != "42" || string(m.ID) != "42" {
						t.Errorf("listen response: %s", raw)
					}
					break
				}
				if m.Method != "notifications/tasks" || string(m.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != "42" || m.Params.TaskID != id {
					t.Fatalf("want notifications/tasks of %s for subscription 42, got %s", id, raw)
				}
				if m.Params.ResultType != "" {
					t.Errorf("a notification carries resultType: %s", raw)
				}
				statuses = append(statuses, m.Params.Status)
				last, lastRaw = m, raw
			}
			if last == nil || last.Params.Status != "completed" || !bytes.Contains(last.Params.Result, []byte("Deleted notes.txt")) {
				t.Fatalf("want the last notification completed with the result, got statuses %v, last %+v", statuses, last)
			}
			for _, st := range statuses[:len(statuses)-1] {
				if st != "working" {
					t.Errorf("statuses %v: want working until completed", statuses)
				}
			}
			// What the last notification said is what tasks/get says.
			_, rep := c.getTask(t, "", id)
			var got map[string]any
			_ = json.Unmarshal(rep.Result, &got)
			delete(got, "resultType")
			delete(got, "_meta")
			var note struct{ Params map[string]any }
			_ = json.Unmarshal(lastRaw, &note)
			delete(note.Params, "_meta")
			if a, b := canonicalAny(t, got), canonicalAny(t, note.Params); a != b {
				t.Errorf("notification and tasks/get differ:\nnotification: %s\ntasks/get:    %s", b, a)
			}
			if s.next(t) != nil {
				t.Error("the stream goes on after the listen's response")
			}
		})
	}
}

func canonicalAny(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestListen_ForeignLooksUnknown checks the auth binding of task
// subscriptions: bob's listen for alice's tasks is acknowledged exactly as
// one for ids that were never issued, byte for byte, and ends at once.
func TestListen_ForeignLooksUnknown(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{tokens: twoPrincipals})
	parked := c.createTask(t, "tokA", "confirm_delete", `{"filename":"notes.txt"}`)
	c.waitStatus(t, "tokA", parked, "input_required", nil)

	read := func(ids ...string) []string {
		s := c.listen(t, "tokB", 7, ids...)
		var got []string
		for m := s.next(t); m != nil; m = s.next(t) {
			got = append(got, string(m))
		}
		return got
	}
	foreign := read(parked)
	unknown := read(task.NewID())
	if strings.Join(foreign, "\n") != strings.Join(unknown, "\n") {
		t.Errorf("bob's listen for alice's task differs from one for an unknown id:\nforeign: %s\nunknown: %s", foreign, unknown)
	}
	if len(foreign) != 2 || !strings.Contains(foreign[0], `"taskIds":[]`) {
		t.Errorf("want an empty acknowledgement and the listen's response, got %s", foreign)
	}
	// alice sees her own task.
	s := c.listen(t, "tokA", 8, parked)
	if ack := decodeListen(t, s.next(t)); len(ack.Params.Notifications.TaskIDs) != 1 {
		t.Errorf("alice's listen: want her task acknowledged, got %+v", ack.Params.Notifications)
	}
}

// TestListen_Bounds checks the bounds per principal: past
// MaxSubscriptions a listen gets HTTP 429 with CodeTooManySubscriptions;
// once a client goes away its subscription no longer counts. Another
// principal is not affected.
func TestListen_Bounds(t *testing.T) {
	t.Parallel()
	for _, route := range routes {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			c := startServer(t, serverConfig{tokens: twoPrincipals, maxSubscriptions: 1, noFastPath: route.noFastPath})
			parked := c.createTask(t, "tokA", "confirm_delete", `{"filename":"notes.txt"}`)
			c.waitStatus(t, "tokA", parked, "input_required", nil)
			first := c.listen(t, "tokA", 1, parked)
			first.next(t) // the acknowledgement: the subscription is open

			s, resp := c.tryListen(t, "tokA", 2, parked)
			if s != nil {
				t.Fatal("a second subscription past MaxSubscriptions 1 was opened")
			}
			rep := resp.reply(t)
			if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") == "" || rep.Error == nil || rep.Error.Code != -31001 {
				t.Fatalf("want HTTP 429, Retry-After and -31001, got HTTP %d %s", resp.status, resp.body)
			}
			if bob := c.listen(t, "tokB", 3, parked); bob == nil {
				t.Fatal("bob was refused")
			}

			first.close()
			deadline := time.Now().Add(5 * time.Second)
			for {
				s, _ := c.tryListen(t, "tokA", 4, parked)
				if s != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the subscription of a client that went away still counts after 5 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestListen_KeepAlive checks that an idle subscription sends SSE comments.
func TestListen_KeepAlive(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{listenKeepAlive: 20 * time.Millisecond})
	parked := c.createTask(t, "", "confirm_delete", `{"filename":"notes.txt"}`)
	c.waitStatus(t, "", parked, "input_required", nil)
	s := c.listen(t, "", 1, parked)
	s.next(t)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line := <-s.lines:
			if line == ": keep-alive" {
				return
			}
		case <-timeout:
			t.Fatal("no keep-alive within 10 s")
		}
	}
}

// TestListen_EndSubscriptions checks that a server shutting down ends an
// open subscription with the listen's response.
func TestListen_EndSubscriptions(t *testing.T) {
	t.Parallel()
	var srv *mcpserver.Server
	c := startServer(t, serverConfig{register: func(s *mcpserver.Server) error { srv = s; return nil }})
	parked := c.createTask(t, "", "confirm_delete", `{"filename":"notes.txt"}`)
	c.waitStatus(t, "", parked, "input_required", nil)
	s := c.listen(t, "", 9, parked)
	s.next(t) // the acknowledgement
	srv.EndSubscriptions()
	m := decodeListen(t, s.next(t))
	if m.Result == nil || m.Result.ResultType != "complete" || string(m.Result.Meta["io.modelcontextprotocol/subscriptionId"]) != "9" {
		t.Fatalf("want the listen's response, got %+v", m)
	}
	if s.next(t) != nil {
		t.Error("the stream goes on after the listen's response")
	}
}

// TestListen_StreamsBounded: the body of a request that stays open
// holding it (a plain subscriptions/listen, a task subscription, a
// 2025-11-25 tasks/result) is bounded, so that open streams cannot hold
// the whole in-flight budget (every other request would get HTTP 503);
// that of a stream that names no task ids at 64 KiB (it was that of a
// task subscription, 190 KB with the defaults). Plain listens are not
// counted against MaxSubscriptions: a go-sdk client keeps one open for
// its whole session.
func TestListen_StreamsBounded(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{tokens: twoPrincipals, maxSubscriptions: 1})
	post := func(token, body string) *rawResponse {
		h := http.Header{"Authorization": {"Bearer " + token}, "Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"subscriptions/listen"}}
		return c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, body: []byte(body)})
	}
	refused := func(what string, resp *rawResponse) {
		t.Helper()
		rep := resp.reply(t)
		if resp.status != http.StatusRequestEntityTooLarge || rep.Error == nil || rep.Error.Code != -32600 {
			t.Errorf("%s: HTTP %d %.300s, want HTTP 413 and -32600", what, resp.status, resp.body)
		}
	}
	pad := strings.Repeat(" ", 512<<10)
	refused("a plain listen of 512 KiB", post("tokA", expandMeta(`{"jsonrpc":"2.0","id":2,`+pad+`"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"toolsListChanged":true}}}`)))
	refused("a task subscription of 512 KiB", post("tokA", expandMeta(`{"jsonrpc":"2.0","id":3,`+pad+`"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"taskIds":["x"]}}}`)))
	legacy := initialize(t, c, "tokA")
	id := legacy.callTask(`{"name":"slow_compute","arguments":{"seconds":60},"task":{}}`)
	refused("a 2025-11-25 tasks/result of 512 KiB", legacy.post(`{"jsonrpc":"2.0","id":4,`+pad+`"method":"tasks/result","params":{"taskId":"`+id+`"}}`))
	// Past 64 KiB, within a task subscription's bound: the reply's status
	// only, as one admitted would stream.
	pad = strings.Repeat(" ", 100<<10)
	tooLarge := func(what string, h http.Header, body string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, c.base+"/mcp", strings.NewReader(body))
		req.Header = h
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: HTTP %d, want HTTP 413", what, resp.StatusCode)
		}
	}
	tooLarge("a plain listen of 100 KiB", http.Header{"Authorization": {"Bearer tokA"}, "Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"subscriptions/listen"}},
		expandMeta(`{"jsonrpc":"2.0","id":2,`+pad+`"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"toolsListChanged":true}}}`))
	tooLarge("a 2025-11-25 tasks/result of 100 KiB", http.Header{"Authorization": {"Bearer tokA"}, "Mcp-Session-Id": {legacy.id}, "Mcp-Protocol-Version": {legacyVersion}},
		`{"jsonrpc":"2.0","id":4,`+pad+`"method":"tasks/result","params":{"taskId":"`+id+`"}}`)

	// A task subscription open, MaxSubscriptions 1: a plain listen is still
	// served (it streams: the acknowledgement comes, then it stays open).
	parked := c.createTask(t, "tokA", "confirm_delete", `{"filename":"notes.txt"}`)
	c.waitStatus(t, "tokA", parked, "input_required", nil)
	first := c.listen(t, "tokA", 1, parked)
	first.next(t)
	t.Cleanup(first.close)
	h := http.Header{"Authorization": {"Bearer tokA"}, "Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"subscriptions/listen"}}
	resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", header: h, readMessages: 1,
		body: []byte(expandMeta(`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"toolsListChanged":true}}}`))})
	if resp.status != http.StatusOK || resp.class != "sse" {
		t.Errorf("a plain listen beside a task subscription at MaxSubscriptions 1: HTTP %d %s %.300s, want it served", resp.status, resp.class, resp.body)
	}
}

// openListen posts the subscriptions/listen body and returns the reply,
// open: the caller reads and closes it.
func openListen(t *testing.T, c *testClient, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"subscriptions/listen"}}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestListen_StreamsLeaveRoom: open streams hold their bodies' bytes for as
// long as they are open, and may hold at most half of MaxInflightBytes
// together: past it a new stream gets HTTP 503, while a request that does
// not stay open still fits in the other half (before, streams filled the
// whole budget and every request got HTTP 503).
func TestListen_StreamsLeaveRoom(t *testing.T) {
	t.Parallel()
	const budget = 2 << 20
	c := startServer(t, serverConfig{maxInflightBytes: budget, maxBodyBytes: 1 << 20})
	pad := strings.Repeat(" ", 60<<10) // within the bound of a plain listen's body (64 KiB)
	listen := expandMeta(`{"jsonrpc":"2.0","id":1,` + pad + `"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"toolsListChanged":true}}}`)
	opened := 0
	for range budget / len(listen) {
		resp := openListen(t, c, listen)
		if resp.StatusCode == http.StatusServiceUnavailable {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "too many open streams") || resp.Header.Get("Retry-After") == "" {
				t.Errorf("a stream past the streams' half: %s (Retry-After %q)", body, resp.Header.Get("Retry-After"))
			}
			break
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen %d: HTTP %d", opened+1, resp.StatusCode)
		}
		readEvents(t, resp.Body, 1) // acknowledged: it is open, holding its body
		t.Cleanup(func() { resp.Body.Close() })
		opened++
	}
	if want := budget / 2 / len(listen); opened != want {
		t.Errorf("%d streams of %d bytes opened with a budget of %d; want %d (half the budget)", opened, len(listen), budget, want)
	}
	// A request that does not stay open, as large as what the streams
	// left, is served.
	big := expandMeta(`{"jsonrpc":"2.0","id":2,` + strings.Repeat(" ", budget/2-(256<<10)) + `"method":"tools/list","params":{"_meta":$META}}`)
	resp := c.do(t, &rawRequest{method: http.MethodPost, path: "/mcp", body: []byte(big),
		header: http.Header{"Mcp-Protocol-Version": {wireVersion}, "Mcp-Method": {"tools/list"}}})
	if resp.status != http.StatusOK {
		t.Errorf("tools/list of %d bytes beside %d open streams: HTTP %d %.200s", len(big), opened, resp.status, resp.body)
	}
}

// TestListen_OneStreamAlwaysFits: with a budget smaller than twice a
// stream's body, one stream is still admitted (else every listen would be
// refused for ever); a second one is not.
func TestListen_OneStreamAlwaysFits(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{maxInflightBytes: 100 << 10, maxBodyBytes: 100 << 10})
	pad := strings.Repeat(" ", 60<<10) // more than half the budget
	listen := expandMeta(`{"jsonrpc":"2.0","id":1,` + pad + `"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"toolsListChanged":true}}}`)
	var statuses []int
	for range 2 {
		resp := openListen(t, c, listen)
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == http.StatusOK {
			readEvents(t, resp.Body, 1)
		}
		t.Cleanup(func() { resp.Body.Close() })
	}
	if statuses[0] != http.StatusOK || statuses[1] != http.StatusServiceUnavailable {
		t.Errorf("two listens of %d bytes, budget 100 KiB: HTTP %v; want [200 503]", len(listen), statuses)
	}
}
