package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// cookieName is the name of the session cookie.
const cookieName = "mcptasks_console"

// session is a signed-in operator: the session id is the cookie's value,
// and csrf the token every form that changes something must send back.
type session struct {
	id      string
	csrf    string
	account Account
	expires time.Time
}

// sessions holds the sessions of one console process, in memory: a restart
// signs everyone out. At most max sessions are kept, and perAccount of one
// account (but the local account of a console without tokens, whose every
// cookieless request starts one); past either bound the oldest (of the
// account, if its bound) goes first.
type sessions struct {
	ttl        time.Duration
	max        int
	perAccount int
	now        func() time.Time

	mu    sync.Mutex
	byID  map[string]*session
	order []string // ids, oldest first
}

func newSessions(ttl time.Duration, max, perAccount int, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, max: max, perAccount: perAccount, now: now, byID: map[string]*session{}}
}

// create starts a session for the account.
func (s *sessions) create(a Account) *session {
	se := &session{id: randomToken(), csrf: randomToken(), account: a, expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine []string      // the account's sessions, oldest first
	if a != localAccount { // the one account of a console without tokens
		for _, id := range s.order {
			if s.byID[id].account == a {
				mine = append(mine, id)
			}
		}
	}
	for len(mine) >= s.perAccount {
		s.removeLocked(mine[0])
		mine = mine[1:]
	}
	for len(s.order) >= s.max {
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
	s.byID[se.id] = se
	s.order = append(s.order, se.id)
	return se
}

// get returns the live session with the id, or nil.
func (s *sessions) get(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.byID[id]
	if se == nil {
		return nil
	}
	if !s.now().Before(se.expires) {
		s.removeLocked(id)
		return nil
	}
	return se
}

// remove ends the session with the id.
func (s *sessions) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(id)
}

func (s *sessions) removeLocked(id string) {
	if _, ok := s.byID[id]; !ok {
		return
	}
	delete(s.byID, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// fromRequest returns the live session of r's cookie, or nil.
func (s *sessions) fromRequest(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	return s.get(c.Value)
}

// setCookie sends the cookie of se: HttpOnly (no script reads it),
// SameSite=Lax (another site's page sends it only when it links here, as
// a top-level GET: an operator who follows a link from a chat or a ticket
// stays signed in; its forms carry the CSRF token besides), Secure when the
// request came over HTTPS (directly, or through a proxy that says so),
// and expiring with the session.
func (s *sessions) setCookie(w http.ResponseWriter, r *http.Request, se *session) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: se.id, Path: "/",
		Expires: se.expires, MaxAge: int(se.expires.Sub(s.now()).Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secureRequest(r),
	})
}

// clearCookie removes the session cookie from the browser.
func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secureRequest(r),
	})
}

// secureRequest reports whether r came over HTTPS: on a TLS connection,
// or through a proxy that terminated TLS and says so. A client that sends
// the header itself only makes its own cookie Secure.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// validCSRF reports whether token is se's CSRF token.
func (se *session) validCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(se.csrf)) == 1
}

// randomToken returns 256 random bits, base64url.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return base64.RawURLEncoding.EncodeToString(b[:])
}
