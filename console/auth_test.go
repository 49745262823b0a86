package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

func TestParseTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		err        string // a part of the message; "" for success
	}{
		{"OK", tokensFile, ""},
		{"TwoFields", "tok-0123456789abcdef alice\n", `tokens:1: want "TOKEN NAME ROLE", got 2 fields`},
		{"ShortToken", "# c\n\nshort alice operator\n", "tokens:3: the token is 5 characters long: use at least 16"},
		{"BadRole", "tok-0123456789abcdef alice admin\n", `tokens:1: role "admin": use viewer or operator`},
		{"Duplicate", "tok-0123456789abcdef alice operator\ntok-0123456789abcdef bob viewer\n", "tokens:2: the token of line 1 again"},
		{"Empty", "# nobody\n", "tokens: no tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toks, err := ParseTokens("tokens", strings.NewReader(tt.file))
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if a, ok := toks.lookup(aliceToken); !ok || a != (Account{"alice", Operator}) {
					t.Errorf("lookup(alice's token) = %v, %v", a, ok)
				}
				if a, ok := toks.lookup(victorToken); !ok || a != (Account{"victor", Viewer}) {
					t.Errorf("lookup(victor's token) = %v, %v", a, ok)
				}
				if _, ok := toks.lookup(aliceToken + "x"); ok {
					t.Error("lookup of another token succeeded")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ParseTokens = %v, want an error containing %q", err, tt.err)
			}
		})
	}
}

func TestCheckListen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		tokens bool
		ok     bool
	}{
		{"127.0.0.1:8090", false, true},
		{"[::1]:8090", false, true},
		{"localhost:8090", false, true},
		{"0.0.0.0:8090", false, false},
		{":8090", false, false},
		{"10.1.2.3:8090", false, false},
		{"0.0.0.0:8090", true, true},
		{"nonsense", false, false},
	}
	for _, tt := range tests {
		err := CheckListen(tt.addr, tt.tokens)
		if (err == nil) != tt.ok {
			t.Errorf("CheckListen(%q, tokens %v) = %v, want ok %v", tt.addr, tt.tokens, err, tt.ok)
		}
	}
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{}, false)

	// Without a session, pages go to the sign-in form, which keeps the way back.
	res := h.anonymous().get("/tasks?status=failed")
	if loc := res.Header().Get("Location"); res.Code != http.StatusSeeOther || loc != "/login?next="+url.QueryEscape("/tasks?status=failed") {
		t.Fatalf("GET /tasks without a session = %d %q, want 303 to the sign-in form", res.Code, loc)
	}
	wantPage(t, h.anonymous().get("/login"), http.StatusOK, `name="token"`, `type="password"`)

	res = h.anonymous().post("/login", url.Values{"token": {"wrong-token-0123456789"}})
	wantPage(t, res, http.StatusUnauthorized, "That token is not valid.")
	if len(res.Result().Cookies()) != 0 {
		t.Error("a refused sign-in set a cookie")
	}

	c := h.anonymous()
	res = c.post("/login", url.Values{"token": {aliceToken}, "next": {"/tasks?status=failed"}})
	if loc := res.Header().Get("Location"); res.Code != http.StatusSeeOther || loc != "/tasks?status=failed" {
		t.Fatalf("sign-in = %d %q, want 303 to the page asked for", res.Code, loc)
	}
	ck := c.cookie
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.MaxAge != int(DefaultSessionTTL.Seconds()) {
		t.Errorf("session cookie = %+v, want HttpOnly, SameSite=Lax (a link from another site opens the page signed in), not Secure over HTTP, for the session's life", ck)
	}
	wantPage(t, c.get("/tasks"), http.StatusOK, "alice", ">operator<", "Sign out")
	if !strings.Contains(h.log.String(), "signed in") || !strings.Contains(h.log.String(), "operator=alice") {
		t.Errorf("log lacks the sign-in: %s", h.log)
	}

	// A sign-in link cannot send the operator to another site.
	res = h.anonymous().post("/login", url.Values{"token": {aliceToken}, "next": {"//evil.example/"}})
	if loc := res.Header().Get("Location"); loc != "/" {
		t.Errorf("sign-in with next=//evil.example/ redirects to %q, want /", loc)
	}

	// Over HTTPS (a proxy says so) the cookie is Secure.
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {aliceToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	res = h.anonymous().do(req)
	if cks := res.Result().Cookies(); len(cks) != 1 || !cks[0].Secure {
		t.Errorf("cookies over HTTPS = %+v, want one Secure cookie", cks)
	}

	// Signing out needs the CSRF token, and ends the session.
	wantPage(t, c.post("/logout", url.Values{}), http.StatusForbidden)
	res = c.post("/logout", url.Values{"csrf": {c.csrf}})
	if res.Code != http.StatusSeeOther {
		t.Fatalf("sign-out = %d, want 303", res.Code)
	}
	c.cookie = &http.Cookie{Name: cookieName, Value: ck.Value} // the old session's cookie, replayed
	if res := c.get("/tasks"); res.Code != http.StatusSeeOther {
		t.Errorf("GET /tasks after sign-out = %d, want 303 to the sign-in form", res.Code)
	}
}

func TestSession_Expires(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{SessionTTL: time.Hour}, false)
	r := h.put(asking(newTask(0, "export_report", "bob"), "Overwrite?"))
	c := h.as(aliceToken)
	wantPage(t, c.get("/tasks/"+r.ID), http.StatusOK)
	csrf := c.csrf
	h.now = h.now.Add(time.Hour)
	if res := c.get("/tasks"); res.Code != http.StatusSeeOther {
		t.Errorf("GET /tasks after the session's life = %d, want 303 to the sign-in form", res.Code)
	}
	// A form sent from a page whose session has ended leads to the
	// sign-in form, and back to its page; it does nothing (before: a bare
	// 401 text).
	res := c.post("/tasks/"+r.ID+"/cancel", url.Values{"csrf": {csrf}})
	if loc := res.Header().Get("Location"); res.Code != http.StatusSeeOther || loc != "/login?next=%2Ftasks%2F"+r.ID {
		t.Errorf("cancel after the session's life = %d %q, want 303 to /login?next=%%2Ftasks%%2F%s", res.Code, loc, r.ID)
	}
	if got, err := h.st.Get(context.Background(), r.ID); err != nil || got.CancelRequested || got.Status != task.InputRequired {
		t.Errorf("the cancel of an ended session changed the task: %+v, %v", got, err)
	}
}

// TestNoTokens checks a console without tokens: everyone is the local
// operator, with a session for the CSRF token, but only at a loopback
// host.
func TestNoTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{}, true)
	c := h.anonymous()
	wantPage(t, c.get("/tasks"), http.StatusOK, "local", ">operator<")
	wantNot(t, c.get("/tasks"), "Sign out")
	r := h.put(newTask(0, "export", "bob"))
	wantPage(t, c.get("/tasks/"+r.ID), http.StatusOK, "Cancel task")
	if c.cookie == nil || c.csrf == "" {
		t.Fatal("no session cookie or CSRF token for the local operator")
	}
	wantPage(t, c.post("/tasks/"+r.ID+"/cancel", url.Values{"csrf": {c.csrf}}), http.StatusSeeOther)
	for _, host := range []string{"evil.example", "evil.example:8090", "10.0.0.1:8090"} {
		req := httptest.NewRequest(http.MethodGet, "/tasks", nil)
		req.Host = host
		res := httptest.NewRecorder()
		h.con.ServeHTTP(res, req)
		if res.Code != http.StatusForbidden {
			t.Errorf("GET /tasks with Host %q = %d, want 403", host, res.Code)
		}
	}
	// What another site's page loads makes no session (by the thousand
	// they would evict the operator's), frames included; a link followed
	// from it to a top-level page does.
	for _, c := range []struct {
		mode, dest string
		want       int
	}{{"no-cors", "image", http.StatusForbidden}, {"cors", "empty", http.StatusForbidden},
		{"navigate", "iframe", http.StatusForbidden}, {"navigate", "document", http.StatusOK}} {
		req := httptest.NewRequest(http.MethodGet, "/tasks", nil)
		req.Host = "127.0.0.1:8090"
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Sec-Fetch-Mode", c.mode)
		req.Header.Set("Sec-Fetch-Dest", c.dest)
		res := httptest.NewRecorder()
		h.con.ServeHTTP(res, req)
		if made := len(res.Result().Cookies()) > 0; res.Code != c.want || made != (c.want == http.StatusOK) {
			t.Errorf("a cross-site %s GET /tasks for a %s = %d (a session cookie: %v), want %d", c.mode, c.dest, res.Code, made, c.want)
		}
	}
}

// TestSecurityHeaders checks the headers every answer carries.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{}, false)
	res := h.as(aliceToken).get("/tasks")
	for k, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'",
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-store",
	} {
		if got := res.Header().Get(k); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want it to hold %q", k, got, want)
		}
	}
	static := h.anonymous().get("/static/live.js")
	wantPage(t, static, http.StatusOK, "EventSource")
}

func TestNew_Errors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{}, true)
	type notLister struct{ store.Store }
	tests := []struct {
		name string
		st   store.Store
		c    Canceller
		opts *Options
		want string
	}{
		{"NotALister", notLister{h.st}, h.con.canceler, nil, "cannot list tasks"},
		{"NoCanceller", h.st, nil, nil, "Canceller is nil"},
		{"SessionTTL", h.st, h.con.canceler, &Options{SessionTTL: -time.Second}, "Options.SessionTTL"},
		{"OverviewTTL", h.st, h.con.canceler, &Options{OverviewTTL: -time.Second}, "Options.OverviewTTL"},
		{"MaxLive", h.st, h.con.canceler, &Options{MaxLive: -1}, "Options.MaxLive"},
	}
	for _, tt := range tests {
		if _, err := New(tt.st, tt.c, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
	if _, err := New(h.st, h.con.canceler, nil); err != nil {
		t.Errorf("New with nil Options: %v", err)
	}
}

// TestLocalPath: a sign-in's next page stays on this site, whatever a
// browser would make of it.
func TestLocalPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/tasks?status=failed", "/tasks?status=failed"},
		{"/tasks/AaI6#x", "/tasks/AaI6#x"},
		{"", "/"},
		{"tasks", "/"},
		{"//evil.example/", "/"},
		{"/\\evil.example/", "/"},
		{"/\t/evil.example/x", "/"}, // browsers drop the tab: //evil.example/x
		{"/\n/evil.example/x", "/"},
		{"/\r\n/evil.example/x", "/"},
		{"/\x7f/evil.example/x", "/"},
		{"https://evil.example/", "/"},
		{"/%zz", "/"}, // not a URL
	} {
		if got := localPath(c.in); got != c.want {
			t.Errorf("localPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSessions_PerAccount: an account that signs in again and again ends
// its own oldest sessions only; another account's stay.
func TestSessions_PerAccount(t *testing.T) {
	s := newSessions(time.Hour, 10, 2, func() time.Time { return t0 })
	ada := s.create(Account{Name: "ada", Role: Operator})
	var vics []*session
	for range 5 {
		vics = append(vics, s.create(Account{Name: "vic", Role: Viewer}))
	}
	if s.get(ada.id) == nil {
		t.Error("another account's sign-ins ended ada's session")
	}
	for i, v := range vics {
		if alive := s.get(v.id) != nil; alive != (i >= 3) {
			t.Errorf("vic's session %d alive: %v, want only the last 2", i, alive)
		}
	}
	// The one account of a console without tokens, whose every cookieless
	// request starts a session, is not bound so.
	var locals []*session
	for range 5 {
		locals = append(locals, s.create(localAccount))
	}
	for i, l := range locals {
		if s.get(l.id) == nil {
			t.Errorf("local session %d ended by the per-account bound", i)
		}
	}
	// The global bound still holds.
	for i := range 20 {
		s.create(Account{Name: fmt.Sprint("user", i), Role: Viewer})
	}
	if n := len(s.byID); n != 10 {
		t.Errorf("%d sessions kept, want 10", n)
	}
}
