package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/client"
)

// handlerTransport serves a client's requests with a handler in the same
// process, without a network, so that a test can run in a synctest
// bubble: the reply streams through a pipe as the handler writes it.
type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		ht.h.ServeHTTP(w, req)
		w.start()
		pw.Close()
	}()
	<-w.ready
	return &http.Response{StatusCode: w.code, Header: w.header, Body: pr, Request: req}, nil
}

// pipeWriter is the http.ResponseWriter of handlerTransport.
type pipeWriter struct {
	header http.Header
	pw     *io.PipeWriter
	code   int
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code = code
		close(w.ready)
	})
}

func (w *pipeWriter) start() { w.WriteHeader(http.StatusOK) }

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.start()
	return w.pw.Write(b)
}

func (w *pipeWriter) Flush() {}

// TestListenBackstop: while a subscription lasts and brings nothing, the
// wait reads the task only every Options.ListenBackstop (not every
// pollIntervalMs), in case a notification was lost; when the stream
// breaks, it polls every pollIntervalMs. In a synctest bubble: the times
// are the fake clock's.
func TestListenBackstop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var getsAt []time.Duration
		start := time.Now()
		breakStream := make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.NewDecoder(r.Body).Decode(&m)
			switch m.Method {
			case "subscriptions/listen":
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s},\"notifications\":{\"taskIds\":[\"t-1\"]}}}\n\n", m.ID)
				select { // no notification; the stream breaks when the test says
				case <-breakStream:
				case <-r.Context().Done():
				}
			case "tasks/get":
				mu.Lock()
				getsAt = append(getsAt, time.Since(start))
				n := len(getsAt)
				mu.Unlock()
				status := `"status":"working"`
				if n == 7 {
					status = `"status":"completed","result":{"content":[{"type":"text","text":"done"}]}`
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","taskId":"t-1",%s,"createdAt":"2026-07-28T10:00:00Z","lastUpdatedAt":"2026-07-28T10:00:00Z","ttlMs":null,"pollIntervalMs":1000}}`, m.ID, status)
			}
		})
		c := client.New("http://mcp.test/mcp", &client.Options{
			ProtocolVersion: client.ProtocolVersion,
			HTTPClient:      &http.Client{Transport: handlerTransport{h}},
			ListenBackstop:  30 * time.Second,
		})
		go func() {
			time.Sleep(65 * time.Second) // the fake clock: two backstop reads, then the break
			close(breakStream)
		}()
		res, err := c.Task("t-1").Wait(t.Context())
		if err != nil || text(res) != "done" {
			t.Fatalf("Wait: %v %v", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		// At once (before the acknowledgement), after it, at the two
		// backstops, at once when the stream breaks, then every pollIntervalMs.
		want := []time.Duration{0, 0, 30 * time.Second, 60 * time.Second, 65 * time.Second, 66 * time.Second, 67 * time.Second}
		if fmt.Sprint(getsAt) != fmt.Sprint(want) {
			t.Errorf("tasks/get at %v, want %v", getsAt, want)
		}
	})
}
