package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// assets are the console's templates and static files, embedded: the
// console needs no network and no build step. static/console.css and
// static/live.js are ours; there is no third-party code.
//
//go:embed assets
var assets embed.FS

// pageNames are the pages, each a template assets/templates/NAME.html that
// defines "content", rendered inside layout.html; a live page's content
// holds its template "live" in an element with data-live.
var pageNames = []string{"login", "overview", "list", "detail", "error"}

// parsePages parses every page with the layout.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets,
			"assets/templates/layout.html", "assets/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// staticHandler serves the embedded static files at /static/.
func staticHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache") // revalidated: assets change with the binary
		files.ServeHTTP(w, r)
	})
}

// pageData is what every page's template gets.
type pageData struct {
	Title   string
	Section string // "overview", "tasks": the nav entry to mark
	Account Account
	CSRF    string
	SignOut bool   // sessions come from tokens: offer to sign out
	Live    string // the URL of the page's live stream, if any
	Redact  bool
	Now     time.Time
	Body    any // the page's own data
}

// data returns the pageData of a page seen in session se.
func (c *Console) data(se *session, title, section string, body any) *pageData {
	d := &pageData{Title: title, Section: section, Redact: c.opts.Redact, Now: c.opts.Now().UTC(), Body: body}
	if se != nil {
		d.Account, d.CSRF, d.SignOut = se.account, se.csrf, c.opts.Tokens != nil
	}
	return d
}

// render writes the page with its layout, with HTTP status code.
func (c *Console) render(w http.ResponseWriter, page string, code int, d *pageData) {
	var b bytes.Buffer
	if err := c.pages[page].Execute(&b, d); err != nil {
		c.log.Error("console: render page", "page", page, "err", err)
		http.Error(w, "The page could not be shown.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

// fragment renders the live part of a page (its template "live", inside
// the element with data-live), without the rest: what a live stream sends.
func (c *Console) fragment(page string, d *pageData) ([]byte, error) {
	var b bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&b, "live", d); err != nil {
		return nil, fmt.Errorf("console: render %s: %w", page, err)
	}
	return b.Bytes(), nil
}

// errorPage shows a message with HTTP status code.
func (c *Console) errorPage(w http.ResponseWriter, se *session, code int, msg string) {
	c.render(w, "error", code, c.data(se, http.StatusText(code), "", msg))
}

// storeError logs a store error (it holds no task data) and shows a page
// that says the store failed.
func (c *Console) storeError(w http.ResponseWriter, se *session, what string, err error) {
	c.log.Error("console: "+what, "err", err)
	c.errorPage(w, se, http.StatusInternalServerError, "The store did not answer ("+what+"). Try again; the console's log has the error.")
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"when":   when,
	"dur":    dur,
	"status": func(s task.Status) string { return strings.ReplaceAll(string(s), "_", " ") },
	"query":  func(v url.Values) string { return v.Encode() },
}

// when formats a time in UTC to the millisecond, or "—".
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// dur formats a duration for people: 850ms, 12.3s, 4m05s, 3h20m, 2d4h.
func dur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + dur(-d)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// urlQueryEscape escapes s for a query value.
func urlQueryEscape(s string) string { return url.QueryEscape(s) }
