package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// SyntheticSpan is the time over which the tasks of [Synthetic] are created.
const SyntheticSpan = 24 * time.Hour

// Rare values of [Synthetic]: each is in 10 tasks of a million.
const (
	RarePrincipal = "rare-principal"
	RareTool      = "rare_tool"
	RareText      = "needle"
)

// Synthetic returns the i-th of n tasks of a store at scale, for the
// benchmarks of store.Lister: created one after the other over the
// SyntheticSpan before end, the newest last, each with an id of its
// CreatedAt. It is deterministic.
//
//   - Principals: 100 ("p00"…"p99") in turn, and RarePrincipal in 1 of
//     100,000. Tools: 20 ("tool00"…"tool19"), and RareTool in 1 of 100,000.
//   - The newest 5,000 are live: a fifth of them input_required (half held
//     by a worker, half suspended), the others working (half held, half
//     queued). Of the older ones 1 in 33 failed, 1 in 97 cancelled, the
//     rest completed, each some seconds after it was created.
//   - Status messages say what the task does; RareText is in 1 of 100,000.
//   - TTL 48 hours: none has expired at end.
func Synthetic(i, n int, end time.Time) *task.Record {
	rng := rand.New(rand.NewPCG(uint64(i), 42))
	created := end.Add(-SyntheticSpan + SyntheticSpan/time.Duration(n)*time.Duration(i+1)).Truncate(time.Millisecond)
	r := &task.Record{
		ID:           syntheticID(created, rng),
		Principal:    fmt.Sprintf("p%02d", i%100),
		Tool:         fmt.Sprintf("tool%02d", (i*7)%20),
		Args:         json.RawMessage(fmt.Sprintf(`{"rows":%d,"name":"report-%d.csv"}`, i%1000, i)),
		Status:       task.Completed,
		CreatedAt:    created,
		UpdatedAt:    created.Add(time.Duration(1+i%60) * time.Second),
		TTL:          48 * time.Hour,
		PollInterval: time.Second,
		Attempt:      1,
	}
	if i%100_000 == 17 {
		r.Principal = RarePrincipal
	}
	if i%100_000 == 53 {
		r.Tool = RareTool
	}
	switch live := i >= n-5000; {
	case live && i%5 == 0:
		r.Status = task.InputRequired
		r.StatusMessage = fmt.Sprintf("Overwrite report-%d.csv?", i)
		r.InputRequests = map[string]json.RawMessage{"confirm": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Overwrite?"}}`)}
		r.UpdatedAt = created
		if i%2 == 0 {
			r.LeaseOwner, r.LeaseExpiresAt = "worker-1", end.Add(30*time.Second)
		}
	case live:
		r.Status = task.Working
		r.StatusMessage = fmt.Sprintf("Processing batch %d of 40", i%40)
		r.UpdatedAt = created
		if i%2 == 0 {
			r.LeaseOwner, r.LeaseExpiresAt = "worker-1", end.Add(30*time.Second)
		} else {
			r.Attempt = 0
		}
	case i%33 == 0:
		r.Status = task.Failed
		r.StatusMessage = fmt.Sprintf("Upstream refused batch %d", i%40)
		r.Error = &task.Error{Code: -32603, Message: "upstream refused"}
	case i%97 == 0:
		r.Status = task.Cancelled
		r.StatusMessage = "Cancelled by request"
	default:
		r.StatusMessage = fmt.Sprintf("Wrote %d rows to report-%d.csv", i%1000, i)
		r.Result = json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)
	}
	if i%100_000 == 71 {
		r.StatusMessage += " (" + RareText + ")"
	}
	return r
}

// syntheticID is an id of created, as task.NewIDAt makes, with random bits
// from rng.
func syntheticID(created time.Time, rng *rand.Rand) string {
	id := []byte(task.NewIDAt(created))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for j := 8; j < len(id); j++ { // past the 48 bits of time
		id[j] = alphabet[rng.IntN(64)]
	}
	return string(id)
}

// ListCase is one query of the list benchmarks.
type ListCase struct {
	Name   string
	Params store.ListParams
}

// ListCases are the queries the list benchmarks time on a store that holds
// the n tasks of [Synthetic] made with end: each filter and search on its
// first page and on a page from the middle of the listing, the rare
// values (whose pages end at the scan limit), and the id searches, which
// the console narrows with task.IDTimeRange.
func ListCases(n int, end time.Time) []ListCase {
	mid := Synthetic(n/2, n, end)
	deep := func(p store.ListParams) store.ListParams {
		q, err := p.Query()
		if err != nil {
			panic(err)
		}
		p.Cursor = q.Cursor(mid.CreatedAt, mid.ID)
		return p
	}
	narrow := func(prefix string) store.ListParams {
		from, to, _ := task.IDTimeRange(prefix)
		return store.ListParams{IDPrefix: prefix, CreatedAfter: from.Add(-time.Second), CreatedBefore: to.Add(time.Second)}
	}
	live := Synthetic(n-10, n, end)
	return []ListCase{
		{"All", store.ListParams{}},
		{"All/Deep", deep(store.ListParams{})},
		{"All/NotExpired", store.ListParams{Now: end}},
		{"Principal", store.ListParams{Principal: "p07"}},
		{"Principal/Deep", deep(store.ListParams{Principal: "p07"})},
		{"Principal/Rare", store.ListParams{Principal: RarePrincipal}},
		{"Principal/InputRequired", store.ListParams{Principal: "p10", Status: task.InputRequired}},
		{"Status/Working", store.ListParams{Status: task.Working}},
		{"Status/InputRequired", store.ListParams{Status: task.InputRequired}},
		{"Status/Failed", store.ListParams{Status: task.Failed}},
		{"Status/Completed/Deep", deep(store.ListParams{Status: task.Completed})},
		{"Tool", store.ListParams{Tool: "tool03"}},
		{"Tool/Deep", deep(store.ListParams{Tool: "tool03"})},
		{"Tool/Rare", store.ListParams{Tool: RareTool}},
		{"Tool/Failed", store.ListParams{Tool: "tool03", Status: task.Failed}},
		{"Created/Window", store.ListParams{CreatedAfter: end.Add(-time.Hour), CreatedBefore: end.Add(-30 * time.Minute)}},
		{"Text/Common", store.ListParams{Text: "batch"}},
		{"Text/Rare", store.ListParams{Text: RareText}},
		{"ID/Exact", narrow(mid.ID)},
		{"ID/Prefix10", narrow(live.ID[:10])},
		{"ID/Prefix10/NotNarrowed", store.ListParams{IDPrefix: mid.ID[:10]}},
	}
}

// BenchmarkLister times the queries of [ListCases] on l, which holds the
// n tasks of [Synthetic] made with end, and the counts.
func BenchmarkLister(b *testing.B, l store.Lister, n int, end time.Time) {
	ctx := context.Background()
	for _, c := range ListCases(n, end) {
		b.Run("List/"+c.Name, func(b *testing.B) {
			var got int
			for b.Loop() {
				page, err := l.List(ctx, c.Params)
				if err != nil {
					b.Fatal(err)
				}
				got = len(page.Tasks)
			}
			b.ReportMetric(float64(got), "tasks/page")
		})
	}
	b.Run("CountTasks/Hour", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.CountTasks(ctx, store.CountParams{Now: end, FinishedSince: end.Add(-time.Hour)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Throughput/Hour", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.Throughput(ctx, store.ThroughputParams{Since: end.Add(-time.Hour), Now: end}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Queue", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.Queue(ctx, end); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStatusMessages sets status messages on 64 running tasks of s,
// from 4 goroutines per CPU, each message new: the write path of a
// handler's progress, and of the history it appends to.
func BenchmarkStatusMessages(b *testing.B, s store.Store) {
	ctx := context.Background()
	const tasks = 64
	now := time.Now().UTC().Truncate(time.Millisecond)
	for range tasks {
		r := &task.Record{ID: task.NewID(), Principal: "bob", Tool: "echo", Args: json.RawMessage(`{}`),
			Status: task.Working, CreatedAt: now, UpdatedAt: now}
		if err := s.Create(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	held, err := s.Claim(ctx, store.ClaimParams{Owner: "w1", Now: now, LeaseExpiresAt: now.Add(time.Hour)})
	if err != nil || len(held) != tasks {
		b.Fatalf("Claim = %d tasks, %v", len(held), err)
	}
	var next atomic.Int64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			c := held[i%tasks]
			err := s.SetStatusMessage(ctx, store.StatusMessageParams{
				FenceParams:   store.FenceParams{ID: c.ID, Attempt: c.Attempt, Now: now},
				StatusMessage: fmt.Sprintf("Processing batch %d", i),
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
