package console

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// overviewWindow is the recent window of the overview's finished counts
// and per-minute chart.
const overviewWindow = time.Hour

// latencySample is how many of the newest tasks the claim latency is
// measured over.
const latencySample = 200

// chart sizes the per-minute chart, in SVG units.
const (
	chartHeight = 60
	barWidth    = 8
)

// overviewBody is the data of the overview page.
type overviewBody struct {
	At         time.Time
	Queue      *store.QueueCounts
	OldestWait time.Duration // of the oldest claimable task
	Statuses   []task.Status
	Tools      []toolRow
	Totals     map[task.Status]int
	Minutes    []bar
	ChartWidth int
	MaxMinute  int
	Latency    latency
}

// toolRow is a tool's line of the counts.
type toolRow struct {
	Tool   string
	Counts map[task.Status]int
}

// bar is a minute of the chart: heights and positions in SVG units.
type bar struct {
	Minute            time.Time
	Created, Finished int
	X, CreatedY       int
	CreatedH          int
	FinishedY         int
	FinishedH         int
}

// latency summarizes the time from creation to first claim of the newest
// tasks that were claimed.
type latency struct {
	N             int // tasks measured, of the latencySample newest
	P50, P90, Max time.Duration
}

// overviewCache keeps the overview for a while, so that many viewers (and
// their live pages) cost the store one count per ttl.
type overviewCache struct {
	ttl  time.Duration
	mu   sync.Mutex
	body *overviewBody
}

// get returns the overview at most ttl old, reading the store if need be.
func (oc *overviewCache) get(ctx context.Context, now time.Time, read func(context.Context, time.Time) (*overviewBody, error)) (*overviewBody, error) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.body != nil && now.Sub(oc.body.At) < oc.ttl {
		return oc.body, nil
	}
	b, err := read(ctx, now)
	if err != nil {
		return nil, err
	}
	oc.body = b
	return b, nil
}

// readOverview asks the store for the overview at now.
func (c *Console) readOverview(ctx context.Context, now time.Time) (*overviewBody, error) {
	b := &overviewBody{At: now, Statuses: allStatuses, Totals: map[task.Status]int{}}
	var err error
	if b.Queue, err = c.ls.Queue(ctx, now); err != nil {
		return nil, err
	}
	if !b.Queue.OldestClaimable.IsZero() {
		b.OldestWait = now.Sub(b.Queue.OldestClaimable)
	}
	counts, err := c.ls.CountTasks(ctx, store.CountParams{Now: now, FinishedSince: now.Add(-overviewWindow)})
	if err != nil {
		return nil, err
	}
	for _, tool := range slices.Sorted(maps.Keys(counts)) {
		b.Tools = append(b.Tools, toolRow{Tool: tool, Counts: counts[tool]})
	}
	b.Totals = counts.ByStatus()
	minutes, err := c.ls.Throughput(ctx, store.ThroughputParams{Since: now.Add(-overviewWindow + time.Minute), Now: now})
	if err != nil {
		return nil, err
	}
	b.chart(minutes)
	page, err := c.ls.List(ctx, store.ListParams{Limit: latencySample, Now: now})
	if err != nil {
		return nil, err
	}
	b.Latency = claimLatency(page.Tasks)
	return b, nil
}

// chart lays out the per-minute bars: created above the axis, finished
// below.
func (b *overviewBody) chart(minutes []store.MinuteCount) {
	for _, m := range minutes {
		b.MaxMinute = max(b.MaxMinute, m.Created, m.Finished)
	}
	half := chartHeight / 2
	for i, m := range minutes {
		cb := bar{Minute: m.Minute, Created: m.Created, Finished: m.Finished, X: i * (barWidth + 2)}
		if b.MaxMinute > 0 {
			cb.CreatedH = (m.Created*half + b.MaxMinute - 1) / b.MaxMinute
			cb.FinishedH = (m.Finished*half + b.MaxMinute - 1) / b.MaxMinute
		}
		cb.CreatedY = half - cb.CreatedH
		cb.FinishedY = half
		b.Minutes = append(b.Minutes, cb)
	}
	b.ChartWidth = len(minutes) * (barWidth + 2)
}

// claimLatency measures, over rs, the time from creation to the first
// claim, as the tasks' histories record it.
func claimLatency(rs []*task.Record) latency {
	var ds []time.Duration
	for _, r := range rs {
		for _, h := range r.History {
			if h.Kind == task.HistoryClaimed && h.Attempt == 1 {
				ds = append(ds, h.At.Sub(r.CreatedAt))
				break
			}
		}
	}
	if len(ds) == 0 {
		return latency{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))] }
	return latency{N: len(ds), P50: at(0.5), P90: at(0.9), Max: ds[len(ds)-1]}
}

// overviewPage shows the overview.
func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request, se *session) {
	b, err := c.overview.get(r.Context(), c.opts.Now().UTC(), c.readOverview)
	if err != nil {
		c.storeError(w, se, "read the overview", err)
		return
	}
	d := c.data(se, "Overview", "overview", b)
	d.Live = "/live/overview"
	c.render(w, "overview", http.StatusOK, d)
}
