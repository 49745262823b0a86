package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/txtar"
)

// TestListenTranscripts replays the golden transcripts of
// testdata/wire/listen: a client calls a tool that becomes task t-1 and
// waits for it with an InputHandler that accepts every question, against
// a scripted server. Each archive opens with what it checks, then has the
// script:
//
//	-- call --      the tools/call reply (JSON-RPC, $ID the request's id)
//	-- listen --    the subscriptions/listen reply: "sse", then one message
//	                per line ($ID the listen request's id), "@gets N" (hold
//	                the stream until N tasks/get were answered), "@updates N"
//	                (likewise for tasks/update), "@close" (end the stream
//	                without a response); or "json STATUS" and one body
//	-- get --       the tasks/get replies, one per line, in order (the last
//	                one repeats)
//	-- update --    the tasks/update reply
//
// and two golden sections:
//
//	-- requests --  what the client sent, in order (method, Mcp-* headers,
//	                params without _meta)
//	-- outcome --   each status OnStatus reported, then the result or error
//
// go test -run TestListenTranscripts -update rewrites the golden sections.
func TestListenTranscripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "wire", "listen", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts in testdata/wire/listen: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			replayListen(t, path)
		})
	}
}

// scripted is the scripted server of a listen transcript.
type scripted struct {
	sections map[string]string

	mu      sync.Mutex
	cond    *sync.Cond
	counts  map[string]int // requests answered, by method
	sent    []string       // the requests, formatted
	closing bool
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	_ = json.NewDecoder(r.Body).Decode(&body)
	var method string
	_ = json.Unmarshal(body["method"], &method)
	id := string(body["id"])
	s.mu.Lock()
	s.sent = append(s.sent, formatSent(r, body))
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.counts[method]++
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	sub := func(line string) string { return strings.ReplaceAll(line, "$ID", id) }
	writeJSONBody := func(status int, b string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintln(w, sub(b))
	}
	switch method {
	case "tools/call":
		writeJSONBody(200, s.sections["call"])
	case "tasks/update":
		writeJSONBody(200, s.sections["update"])
	case "tasks/get":
		lines := strings.Split(strings.TrimSpace(s.sections["get"]), "\n")
		s.mu.Lock()
		n := s.counts[method]
		s.mu.Unlock()
		writeJSONBody(200, lines[min(n, len(lines)-1)])
	case "subscriptions/listen":
		lines := strings.Split(strings.TrimSpace(s.sections["listen"]), "\n")
		if kind, status, ok := strings.Cut(lines[0], " "); ok && kind == "json" {
			code, _ := strconv.Atoi(status)
			writeJSONBody(code, strings.Join(lines[1:], "\n"))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		flush := w.(http.Flusher).Flush
		flush()
		for _, line := range lines[1:] {
			if wait, ok := strings.CutPrefix(line, "@"); ok {
				what, n, _ := strings.Cut(wait, " ")
				if what == "close" {
					return
				}
				want, _ := strconv.Atoi(n)
				if !s.await(r.Context(), "tasks/"+strings.TrimSuffix(what, "s"), want) {
					return
				}
				continue
			}
			fmt.Fprintf(w, "data: %s\n\n", sub(line))
			flush()
		}
		<-r.Context().Done() // the client ends the stream
	default:
		writeJSONBody(404, `{"jsonrpc":"2.0","id":$ID,"error":{"code":-32601,"message":"Method not found"}}`)
	}
}

// await waits until n requests of method were answered, or ctx ends.
func (s *scripted) await(ctx context.Context, method string, n int) bool {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.closing = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.counts[method] < n && !s.closing {
		s.cond.Wait()
	}
	return !s.closing
}

func replayListen(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := txtar.Parse(raw)
	s := &scripted{sections: map[string]string{}, counts: map[string]int{}}
	s.cond = sync.NewCond(&s.mu)
	golden := map[string]string{}
	for _, f := range a.Files {
		switch f.Name {
		case "requests", "outcome":
			golden[f.Name] = strings.TrimRight(string(f.Data), "\n")
		default:
			s.sections[f.Name] = string(f.Data)
		}
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)

	var outcome []string
	c := client.New(hs.URL, &client.Options{
		ProtocolVersion: client.ProtocolVersion,
		MinPollInterval: time.Millisecond,
		InputHandler: client.InputHandlerFunc(func(_ context.Context, key string, _ *client.InputRequest) (any, error) {
			outcome = append(outcome, "answer "+key)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		}),
	})
	res, err := c.CallAndWait(testContext(t), "render", map[string]any{"frames": 2}, client.OnStatus(func(st *client.TaskStatus) {
		line := "status " + string(st.Status)
		if st.StatusMessage != "" {
			line += " · " + st.StatusMessage
		}
		if len(st.InputRequests) > 0 {
			line += fmt.Sprintf(" %v", slices.Sorted(maps.Keys(st.InputRequests)))
		}
		outcome = append(outcome, line)
	}))
	if err != nil {
		outcome = append(outcome, "error: "+err.Error())
	} else {
		b, _ := json.Marshal(res)
		outcome = append(outcome, "result: "+string(b))
	}
	hs.Close() // waits for the handlers: every request is in
	got := map[string]string{"requests": strings.Join(s.sent, "\n---\n"), "outcome": strings.Join(outcome, "\n")}
	var out []txtar.File
	for _, f := range a.Files {
		if f.Name == "requests" || f.Name == "outcome" {
			continue
		}
		out = append(out, f)
	}
	for _, k := range []string{"requests", "outcome"} {
		if want, ok := golden[k]; !*updateGolden && (!ok || want != got[k]) {
			t.Errorf("%s: %s differs (run with -update to accept):\nwant:\n%s\ngot:\n%s", path, k, want, got[k])
		}
		out = append(out, txtar.File{Name: k, Data: []byte(got[k] + "\n")})
	}
	if *updateGolden {
		a.Files = out
		if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestListenPartialAck: WaitAll opens one subscription for all its tasks;
// the tasks the acknowledgement lists follow their notifications (one
// tasks/get after it), the others are polled.
func TestListenPartialAck(t *testing.T) {
	const detailed = `"createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:01Z","ttlMs":60000,"pollIntervalMs":5`
	done := `"result":{"content":[{"type":"text","text":"done"}]}`
	var mu sync.Mutex
	gets := map[string]int{}
	var listenIDs []string
	read1 := make(chan struct{})
	var once sync.Once
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				TaskID        string `json:"taskId"`
				Notifications struct {
					TaskIDs []string `json:"taskIds"`
				} `json:"notifications"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		switch m.Method {
		case "subscriptions/listen":
			mu.Lock()
			listenIDs = m.Params.Notifications.TaskIDs
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			sub := `"_meta":{"io.modelcontextprotocol/subscriptionId":` + string(m.ID) + `}`
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{%s,\"notifications\":{\"taskIds\":[\"t-1\"]}}}\n\n", sub)
			w.(http.Flusher).Flush()
			select { // t-1 completes once it has been read
			case <-read1:
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks\",\"params\":{%s,\"taskId\":\"t-1\",\"status\":\"completed\",%s,%s}}\n\n", sub, detailed, done)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "tasks/get":
			mu.Lock()
			gets[m.Params.TaskID]++
			n := gets[m.Params.TaskID]
			mu.Unlock()
			if m.Params.TaskID == "t-1" {
				defer once.Do(func() { close(read1) })
			}
			status := `"status":"working"`
			if m.Params.TaskID == "t-2" && n >= 3 {
				status = `"status":"completed",` + done
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","taskId":%q,%s,"createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":60000,"pollIntervalMs":5}}`, m.ID, m.Params.TaskID, status)
		default:
			writeJSON(w, http.StatusNotFound, rpcErr(m.ID, -32601, "Method not found", nil))
		}
	}))
	t.Cleanup(hs.Close)
	c := client.New(hs.URL, &client.Options{ProtocolVersion: client.ProtocolVersion, MinPollInterval: time.Millisecond})
	outs := c.WaitAll(testContext(t), []*client.Task{c.Task("t-1"), c.Task("t-2")})
	for _, o := range outs {
		if o.Err != nil || text(o.Result) != "done" {
			t.Errorf("%s: %v %v", o.Task.ID, o.Result, o.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(listenIDs, []string{"t-1", "t-2"}) {
		t.Errorf("subscribed to %v, want [t-1 t-2]", listenIDs)
	}
	// t-1: read at once (the wait does not wait for the acknowledgement),
	// maybe once more after it, then notified; t-2: polled to its end.
	if gets["t-1"] > 2 || gets["t-2"] < 3 {
		t.Errorf("tasks/get: t-1 %d (want at most 2), t-2 %d (want 3: polled)", gets["t-1"], gets["t-2"])
	}
}
