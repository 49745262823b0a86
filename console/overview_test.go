package console

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

func TestOverviewPage(t *testing.T) {
	forEach(t, true, func(t *testing.T, b backend) {
		h := newHarness(t, b, Options{}, false)
		// now is t0+1h. Claimed 40 ms after creation (asking).
		h.put(asking(newTask(10*time.Minute, "export_report", "bob"), "Overwrite?"))
		suspended := asking(newTask(20*time.Minute, "export_report", "bob"), "Overwrite?")
		suspended.LeaseOwner, suspended.LeaseExpiresAt = "", time.Time{}
		h.put(suspended)
		h.put(newTask(30*time.Minute, "render", "carol")) // claimable, waiting for 30 minutes
		running := newTask(40*time.Minute, "render", "carol")
		running.Attempt, running.LeaseOwner, running.LeaseExpiresAt = 1, "w2", t0.Add(2*time.Hour)
		running.History = []task.HistoryEvent{{Seq: 1, At: running.CreatedAt.Add(2 * time.Second), Kind: task.HistoryClaimed, Attempt: 1, Worker: "w2"}}
		h.put(running)
		for i, s := range []task.Status{task.Completed, task.Completed, task.Failed} {
			r := newTask(time.Duration(50+i)*time.Minute, "render", "carol")
			r.Status, r.UpdatedAt = s, r.CreatedAt.Add(time.Minute)
			h.put(r)
		}
		old := newTask(-time.Hour, "render", "carol") // finished two hours ago: not counted
		old.Status, old.UpdatedAt = task.Completed, old.CreatedAt
		h.put(old)

		res := h.as(victorToken).get("/")
		wantPage(t, res, http.StatusOK, `data-live="/live/overview"`, "as of 2026-07-28 11:30:00.000Z",
			"the oldest for 30m00s", "median of the 3 newest claimed tasks; p90 40ms, max 2.0s")
		body := res.Body.String()
		cards := map[string]string{"claimable": "1", "running": "1", "waiting for input": "1", "suspended": "1"}
		for label, n := range cards {
			if !regexp.MustCompile(`<span class="n">` + n + `</span> ` + label).MatchString(body) {
				t.Errorf("the queue does not show %s %s", n, label)
			}
		}
		// render: 2 working (1 claimable + 1 running), 2 completed and
		// 1 failed in the last hour; export_report: 2 input_required.
		rows := regexp.MustCompile(`(?s)<tr><td><a href="/tasks\?tool=([a-z_]+)"[^>]*>.*?</tr>`).FindAllStringSubmatch(body, -1)
		if len(rows) != 2 || rows[0][1] != "export_report" || rows[1][1] != "render" {
			t.Fatalf("tool rows = %d, want export_report and render:\n%s", len(rows), body)
		}
		for _, c := range []struct{ row, status, n string }{
			{rows[0][0], "input_required", "2"}, {rows[1][0], "working", "2"},
			{rows[1][0], "completed", "2"}, {rows[1][0], "failed", "1"},
		} {
			if !strings.Contains(c.row, "status="+c.status+`">`+c.n+"</a>") {
				t.Errorf("row %.40q… lacks %s %s", c.row, c.n, c.status)
			}
		}
		// The chart: one bar pair a minute over the hour.
		if n := strings.Count(body, `<rect class="created"`); n != 60 {
			t.Errorf("chart has %d minutes, want 60", n)
		}
	})
}

func TestClaimLatency(t *testing.T) {
	t.Parallel()
	var rs []*task.Record
	for i, d := range []time.Duration{5, 1, 3, 2, 4, 100} {
		r := newTask(0, "echo", "bob")
		if i < 5 {
			r.History = []task.HistoryEvent{{Kind: task.HistoryClaimed, Attempt: 1, At: r.CreatedAt.Add(d * time.Second)}}
		}
		rs = append(rs, r) // the last one was never claimed
	}
	got := claimLatency(rs)
	if want := (latency{N: 5, P50: 3 * time.Second, P90: 4 * time.Second, Max: 5 * time.Second}); got != want {
		t.Errorf("claimLatency = %+v, want %+v", got, want)
	}
	if got := claimLatency(nil); got != (latency{}) {
		t.Errorf("claimLatency(nil) = %+v", got)
	}
}

// TestOverviewCache checks that the overview is read once per ttl.
func TestOverviewCache(t *testing.T) {
	t.Parallel()
	var oc overviewCache
	oc.ttl = 5 * time.Second
	reads := 0
	read := func(_ context.Context, now time.Time) (*overviewBody, error) {
		reads++
		return &overviewBody{At: now}, nil
	}
	for _, d := range []time.Duration{0, time.Second, 4 * time.Second, 5 * time.Second, 6 * time.Second, 10 * time.Second} {
		if _, err := oc.get(context.Background(), t0.Add(d), read); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 3 { // at 0, 5 and 10 s
		t.Errorf("read the store %d times, want 3", reads)
	}
}
