package console

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/store/postgres"
	"github.com/mcptasks/mcptasks/store/sqlite"
	"github.com/mcptasks/mcptasks/task"
)

// The console tests drive the handler with real stores and a real engine
// (one that runs no tools: the tasks are written to the store as a worker
// would leave them), at a fixed time.

var t0 = time.Date(2026, time.July, 28, 10, 30, 0, 0, time.UTC)

// Tokens of the tests' operators.
const (
	aliceToken  = "alice-token-0123456789"
	victorToken = "victor-token-0123456789"
)

const tokensFile = `# the tests' operators
` + aliceToken + ` alice operator
` + victorToken + ` victor viewer
`

// backend makes a fresh store for a test.
type backend struct {
	name string
	open func(t *testing.T) store.Store
}

var (
	memoryBackend = backend{"Memory", func(*testing.T) store.Store { return memory.New() }}
	sqliteBackend = backend{"SQLite", func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "tasks.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
	postgresBackend = backend{"Postgres", func(t *testing.T) store.Store {
		s, err := postgres.Open(context.Background(), pgtest.DSN(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
)

// forEach runs f on the memory and SQLite stores, and on Postgres too if
// withPostgres.
func forEach(t *testing.T, withPostgres bool, f func(t *testing.T, b backend)) {
	bs := []backend{memoryBackend, sqliteBackend}
	if withPostgres {
		bs = append(bs, postgresBackend)
	}
	for _, b := range bs {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

// harness is a console on a store, with its log.
type harness struct {
	t   *testing.T
	st  store.Store
	con *Console
	now time.Time
	log *syncBuffer
}

// newHarness returns a console on a fresh store of b, with the tests'
// tokens unless opts says otherwise (set opts.Tokens to nil with noTokens).
func newHarness(t *testing.T, b backend, opts Options, noTokens bool) *harness {
	t.Helper()
	st := b.open(t)
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, st: st, now: t0.Add(time.Hour), log: &syncBuffer{}}
	eng, err := engine.New(st, nil, &engine.Options{Workers: -1, Now: func() time.Time { return h.now }})
	if err != nil {
		t.Fatal(err)
	}
	if !noTokens && opts.Tokens == nil {
		toks, err := ParseTokens("tokens", strings.NewReader(tokensFile))
		if err != nil {
			t.Fatal(err)
		}
		opts.Tokens = toks
	}
	opts.Now = func() time.Time { return h.now }
	opts.Logger = slog.New(slog.NewTextHandler(h.log, nil))
	if h.con, err = New(st, eng, &opts); err != nil {
		t.Fatal(err)
	}
	return h
}

// put stores a task as a worker would have left it.
func (h *harness) put(r *task.Record) *task.Record {
	h.t.Helper()
	if err := h.st.Create(context.Background(), r); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// newTask returns a queued task created d after t0.
func newTask(d time.Duration, tool, principal string) *task.Record {
	created := t0.Add(d)
	return &task.Record{
		ID: task.NewIDAt(created), Principal: principal, Tool: tool,
		Args:   json.RawMessage(`{"filename":"secret-plans.txt","rows":5}`),
		Status: task.Working, CreatedAt: created, UpdatedAt: created, TTL: 24 * time.Hour,
	}
}

// asking turns r into a task held by worker w1 that asks a question.
func asking(r *task.Record, question string) *task.Record {
	r.Status, r.StatusMessage = task.InputRequired, question
	r.InputRequests = map[string]json.RawMessage{"confirm": json.RawMessage(
		`{"method":"elicitation/create","params":{"message":` + string(must(json.Marshal(question))) +
			`,"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`)}
	r.Attempt, r.LeaseOwner, r.LeaseExpiresAt = 1, "w1", t0.Add(2*time.Hour)
	r.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r.History = []task.HistoryEvent{
		{Seq: 1, At: r.CreatedAt.Add(40 * time.Millisecond), Kind: task.HistoryClaimed, Attempt: 1, Worker: "w1"},
		{Seq: 2, At: r.CreatedAt.Add(time.Second), Kind: task.HistoryStatus, Attempt: 1, Message: "Querying rows"},
		{Seq: 3, At: r.CreatedAt.Add(2 * time.Second), Kind: task.HistoryInputRequested, Attempt: 1, Message: question, Keys: []string{"confirm"}},
	}
	return r
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// client is a browser's view of the console: its cookie, and the CSRF
// token of the last page it saw.
type client struct {
	h      *harness
	cookie *http.Cookie
	csrf   string
}

// as signs in with token and returns the client.
func (h *harness) as(token string) *client {
	h.t.Helper()
	c := &client{h: h}
	res := c.post("/login", url.Values{"token": {token}, "next": {"/tasks"}})
	if res.Code != http.StatusSeeOther {
		h.t.Fatalf("sign-in with %q: HTTP %d, want 303", token, res.Code)
	}
	return c
}

// anonymous returns a client with no session.
func (h *harness) anonymous() *client { return &client{h: h} }

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// do sends req as the client from a loopback address and keeps its
// session cookie and CSRF token.
func (c *client) do(req *http.Request) *httptest.ResponseRecorder {
	req.Host = "127.0.0.1:8090"
	req.RemoteAddr = "127.0.0.1:50000"
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	res := httptest.NewRecorder()
	c.h.con.ServeHTTP(res, req)
	for _, ck := range res.Result().Cookies() {
		if ck.Name == cookieName {
			c.cookie = ck
		}
	}
	if m := csrfField.FindStringSubmatch(res.Body.String()); m != nil {
		c.csrf = m[1]
	}
	return res
}

func (c *client) get(path string) *httptest.ResponseRecorder {
	return c.do(httptest.NewRequest(http.MethodGet, path, nil))
}

func (c *client) post(path string, form url.Values) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// wantPage fails t unless res has the status code and its body holds
// every one of want.
func wantPage(t *testing.T, res *httptest.ResponseRecorder, code int, want ...string) {
	t.Helper()
	if res.Code != code {
		t.Fatalf("HTTP %d, want %d; body:\n%s", res.Code, code, res.Body)
	}
	for _, w := range want {
		if !strings.Contains(res.Body.String(), w) {
			t.Errorf("page lacks %q; body:\n%s", w, res.Body)
		}
	}
}

// wantNot fails t if res's body holds any of bad.
func wantNot(t *testing.T, res *httptest.ResponseRecorder, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(res.Body.String(), b) {
			t.Errorf("page holds %q", b)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes: the log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var _ io.Writer = (*syncBuffer)(nil)
