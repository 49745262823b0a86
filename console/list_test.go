package console

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// listed returns the task ids of a list page, in order.
func listed(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`data-task="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestListPage(t *testing.T) {
	forEach(t, true, func(t *testing.T, b backend) {
		h := newHarness(t, b, Options{}, false)
		asks := h.put(asking(newTask(3*time.Second, "export_report", "bob"), "Overwrite report.csv?"))
		failed := newTask(2*time.Second, "export_report", "carol")
		failed.Status, failed.StatusMessage, failed.UpdatedAt = task.Failed, "Upstream refused", failed.CreatedAt.Add(time.Second)
		h.put(failed)
		old := h.put(newTask(-2*time.Hour, "render", "bob")) // created 3 hours before now
		c := h.as(victorToken)

		tests := []struct {
			query string
			want  []string
		}{
			{"", []string{asks.ID, failed.ID, old.ID}},
			{"status=input_required", []string{asks.ID}},
			{"status=failed&tool=export_report", []string{failed.ID}},
			{"principal=bob", []string{asks.ID, old.ID}},
			{"tool=render", []string{old.ID}},
			{"age=gt1h", []string{old.ID}}, // now is an hour past t0
			{"age=lt1h", []string{asks.ID, failed.ID}},
			{"age=lt5m", nil},
			{"age=lt24h&principal=carol", []string{failed.ID}},
			{"text=OVERWRITE", []string{asks.ID}},
			{"id=" + asks.ID, []string{asks.ID}},
			{"id=" + asks.ID[:10], []string{asks.ID}},
			{"status=cancelled", nil},
		}
		for _, tt := range tests {
			res := c.get("/tasks?" + tt.query)
			wantPage(t, res, http.StatusOK)
			if got := listed(res.Body.String()); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("/tasks?%s listed %q, want %q", tt.query, got, tt.want)
			}
		}
		res := c.get("/tasks?status=input_required")
		wantPage(t, res, http.StatusOK, "Overwrite report.csv?", `href="/tasks/`+asks.ID+`"`,
			`data-live="/live/tasks?status=input_required"`, `<option value="input_required" selected>`)
	})
}

func TestListPage_BadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, memoryBackend, Options{}, false)
	c := h.as(aliceToken)
	for query, want := range map[string]string{
		"status=done":                      `status &#34;done&#34; is not a task status`,
		"age=1y":                           `age &#34;1y&#34; is not one of the choices`,
		"id=a%2Bb":                         "is not the start of a task id",
		"cursor=not-a-cursor":              "This page&#39;s link is out of date",
		"text=" + strings.Repeat("x", 300): "the status message search is 300 bytes long: at most 256",
	} {
		res := c.get("/tasks?" + query)
		if res.Code != http.StatusBadRequest {
			t.Errorf("/tasks?%s = %d, want 400", query, res.Code)
		}
		if !strings.Contains(res.Body.String(), want) {
			t.Errorf("/tasks?%s does not say %q:\n%s", query, want, res.Body)
		}
	}
}

// TestBadBytes: filters that are not text (invalid UTF-8, NUL) get 400
// naming the parameter, and a path that is not a task id is an unknown
// task, on every store: on Postgres, which refuses such bytes, they were
// HTTP 500 (and a live page of such an id re-read it for ever).
func TestBadBytes(t *testing.T) {
	forEach(t, true, func(t *testing.T, b backend) {
		h := newHarness(t, b, Options{}, false)
		c := h.as(aliceToken)
		for _, q := range []string{"tool=a%00b", "principal=%FF", "text=%FF", "text=a%00", "tool=%C3%28", "id=%FF"} {
			name, _, _ := strings.Cut(q, "=")
			wantPage(t, c.get("/tasks?"+q), http.StatusBadRequest, name+" &#34;")
		}
		wantPage(t, c.get("/tasks/%FF"), http.StatusNotFound)
		wantPage(t, c.get("/tasks"), http.StatusOK) // for the form's token
		wantPage(t, c.post("/tasks/%FF/cancel", url.Values{"csrf": {c.csrf}}), http.StatusNotFound)
	})
}

// TestListPage_Pages follows the pages of a long list: 120 tasks, 50 a
// page, each linking the next, and the first.
func TestListPage_Pages(t *testing.T) {
	forEach(t, false, func(t *testing.T, b backend) {
		h := newHarness(t, b, Options{}, false)
		var want []string
		for i := range 120 {
			r := h.put(newTask(time.Duration(i)*time.Millisecond, "echo", "bob"))
			want = append([]string{r.ID}, want...)
		}
		c := h.as(aliceToken)
		var got []string
		path := "/tasks?principal=bob"
		for pages := 0; path != ""; pages++ {
			if pages == 3 {
				t.Fatalf("more than 3 pages")
			}
			res := c.get(path)
			wantPage(t, res, http.StatusOK)
			body := res.Body.String()
			got = append(got, listed(body)...)
			if pages > 0 && !strings.Contains(body, `href="/tasks?principal=bob">« First page`) {
				t.Errorf("page %d has no link to the first page", pages+1)
			}
			path = ""
			if m := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(body); m != nil {
				path = html.UnescapeString(m[1])
				if u, err := url.Parse(path); err != nil || u.Query().Get("principal") != "bob" || u.Query().Get("cursor") == "" {
					t.Fatalf("next link %q lacks the filter or the cursor", path)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("the pages listed %d tasks, want the 120 newest first", len(got))
		}
	})
}
