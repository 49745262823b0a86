package console

import (
	"net/http"
	"net/url"
	"strings"
)

// loginBody is the data of the sign-in page.
type loginBody struct {
	Next  string
	Error string
}

// loginPage shows the sign-in form; without tokens there is nothing to
// sign in to.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if c.opts.Tokens == nil || c.sessions.fromRequest(r) != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	c.render(w, "login", http.StatusOK, c.data(nil, "Sign in", "", loginBody{Next: next}))
}

// login signs an operator in with their token and starts a session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.opts.Tokens == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.errorPage(w, nil, http.StatusBadRequest, "The form could not be read.")
		return
	}
	next := localPath(r.PostForm.Get("next"))
	a, ok := c.opts.Tokens.lookup(r.PostForm.Get("token"))
	if !ok {
		c.log.Warn("console: sign-in refused", "remote", r.RemoteAddr)
		c.render(w, "login", http.StatusUnauthorized, c.data(nil, "Sign in", "", loginBody{Next: next, Error: "That token is not valid."}))
		return
	}
	se := c.sessions.create(a)
	c.sessions.setCookie(w, r, se)
	c.log.Info("console: signed in", "operator", a.Name, "role", a.Role, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, se *session) {
	if !c.checkForm(w, r, se) {
		return
	}
	c.sessions.remove(se.id)
	clearCookie(w, r)
	c.log.Info("console: signed out", "operator", se.account.Name)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// checkForm reads the form of a request that changes something, bounded in
// size, and checks its CSRF token against the session's. On failure it
// answers the request and returns false.
func (c *Console) checkForm(w http.ResponseWriter, r *http.Request, se *session) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.errorPage(w, se, http.StatusBadRequest, "The form could not be read.")
		return false
	}
	if !se.validCSRF(r.PostForm.Get("csrf")) {
		c.log.Warn("console: form without a valid CSRF token refused", "operator", se.account.Name, "path", r.URL.Path)
		c.errorPage(w, se, http.StatusForbidden, "The form was refused: it did not carry this session's token. Reload the page and try again.")
		return false
	}
	return true
}

// localPath returns p if it is a path on this site, else "/": a sign-in
// link must not send the operator elsewhere. Control characters and
// backslashes are refused outright: browsers drop tabs and newlines from
// a Location and read a backslash as a slash, so "/\t/evil.example" would
// lead to //evil.example.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") ||
		strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	if u, err := url.Parse(p); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return p
}
