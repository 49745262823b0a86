package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// pageSize is the number of tasks on a page of the list.
const pageSize = 50

// idTimeSlack widens the creation times that an id prefix stands for
// (task.IDTimeRange): ids carry their task's CreatedAt, but a task made by
// an older version got its id a moment after it.
const idTimeSlack = time.Second

// ageOption is a choice of the list's age filter.
type ageOption struct {
	Value, Label string
	newer, older time.Duration // created less (or more) than this long ago
}

var ageOptions = []ageOption{
	{"", "any age", 0, 0},
	{"lt5m", "under 5 minutes", 5 * time.Minute, 0},
	{"lt1h", "under an hour", time.Hour, 0},
	{"lt24h", "under a day", 24 * time.Hour, 0},
	{"gt1h", "over an hour", 0, time.Hour},
	{"gt24h", "over a day", 0, 24 * time.Hour},
}

// listFilter is the query of the list page, as its form and links carry
// it.
type listFilter struct {
	Status, Tool, Principal, Age, ID, Text string
	Cursor                                 string
}

func parseFilter(v url.Values) listFilter {
	return listFilter{
		Status: v.Get("status"), Tool: v.Get("tool"), Principal: v.Get("principal"), Age: v.Get("age"),
		ID: v.Get("id"), Text: v.Get("text"), Cursor: v.Get("cursor"),
	}
}

// values returns the filter as a query, with the cursor if withCursor.
func (f listFilter) values(withCursor bool) url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"status": f.Status, "tool": f.Tool, "principal": f.Principal, "age": f.Age, "id": f.ID, "text": f.Text} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if withCursor && f.Cursor != "" {
		v.Set("cursor", f.Cursor)
	}
	return v
}

// params returns what the store is asked for the filter at now, or an
// error that says which field is wrong.
func (f listFilter) params(now time.Time) (store.ListParams, error) {
	p := store.ListParams{
		Status: task.Status(f.Status), Tool: f.Tool, Principal: f.Principal,
		Text: f.Text, Cursor: f.Cursor, Limit: pageSize, Now: now,
	}
	if p.Status != "" && !p.Status.Valid() {
		return p, fmt.Errorf("status %q is not a task status", f.Status)
	}
	for _, v := range []struct{ name, value string }{{"tool", f.Tool}, {"principal", f.Principal}, {"text", f.Text}, {"id", f.ID}} {
		if !utf8.ValidString(v.value) || strings.ContainsRune(v.value, 0) {
			return p, fmt.Errorf("%s %q is not text (UTF-8 without NUL)", v.name, v.value)
		}
	}
	if len(f.Text) > store.MaxListText {
		return p, fmt.Errorf("the status message search is %d bytes long: at most %d", len(f.Text), store.MaxListText)
	}
	found := false
	for _, a := range ageOptions {
		if a.Value == f.Age {
			found = true
			if a.newer > 0 {
				p.CreatedAfter = now.Add(-a.newer)
			}
			if a.older > 0 {
				p.CreatedBefore = now.Add(-a.older)
			}
		}
	}
	if !found {
		return p, fmt.Errorf("age %q is not one of the choices", f.Age)
	}
	if f.ID != "" {
		from, to, ok := task.IDTimeRange(f.ID)
		if !ok || len(f.ID) > store.MaxListText {
			return p, fmt.Errorf("%q is not the start of a task id: ids use the letters A-Z, a-z, the digits, - and _", f.ID)
		}
		// Only tasks created when the id says can match: walk that part.
		p.IDPrefix = f.ID
		if from = from.Add(-idTimeSlack); p.CreatedAfter.Before(from) {
			p.CreatedAfter = from
		}
		if to = to.Add(idTimeSlack); p.CreatedBefore.IsZero() || to.Before(p.CreatedBefore) {
			p.CreatedBefore = to
		}
	}
	return p, nil
}

// listBody is the data of the list page.
type listBody struct {
	Filter   listFilter
	Statuses []task.Status
	Ages     []ageOption
	Tasks    []*task.Record
	Error    string
	// Next is the link of the next page, if there is one; Short says
	// that the page ended where the store's scan did, before it filled.
	Next  template.URL
	Short bool
	// First is the link of the first page, when this is another one.
	First template.URL
	// ScanLimit is how many tasks the store examines for a page.
	ScanLimit int
}

var allStatuses = []task.Status{task.Working, task.InputRequired, task.Completed, task.Failed, task.Cancelled}

// list reads the page of the filter in v.
func (c *Console) list(r *http.Request) (*listBody, int, error) {
	f := parseFilter(r.URL.Query())
	b := &listBody{Filter: f, Statuses: allStatuses, Ages: ageOptions, ScanLimit: store.MaxScanLimit}
	if f.Cursor != "" {
		b.First = listURL(f.values(false))
	}
	p, err := f.params(c.opts.Now().UTC())
	if err != nil {
		b.Error = err.Error()
		return b, http.StatusBadRequest, nil
	}
	page, err := c.ls.List(r.Context(), p)
	switch {
	case errors.Is(err, store.ErrBadCursor):
		b.Error = "This page's link is out of date or was changed; start again from the first page."
		return b, http.StatusBadRequest, nil
	case err != nil:
		return nil, 0, err
	}
	b.Tasks = page.Tasks
	if page.Next != "" {
		next := f
		next.Cursor = page.Next
		b.Next = listURL(next.values(true))
		b.Short = len(page.Tasks) < pageSize
	}
	return b, http.StatusOK, nil
}

// listURL is the link of the list with the query v.
func listURL(v url.Values) template.URL {
	return template.URL("/tasks?" + v.Encode())
}

// listPage shows a page of tasks.
func (c *Console) listPage(w http.ResponseWriter, r *http.Request, se *session) {
	b, code, err := c.list(r)
	if err != nil {
		c.storeError(w, se, "list tasks", err)
		return
	}
	d := c.data(se, "Tasks", "tasks", b)
	d.Live = "/live/tasks?" + b.Filter.values(true).Encode()
	c.render(w, "list", code, d)
}
