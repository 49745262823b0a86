package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/sqlite"
	"github.com/mcptasks/mcptasks/task"
)

// finishSignal is an Observer that counts finished tasks and wakes a
// waiter on each.
type finishSignal struct {
	nopObserver
	finished atomic.Int64
	done     chan struct{} // buffered(1)
}

func (f *finishSignal) TaskFinished(string, task.Status) {
	f.finished.Add(1)
	select {
	case f.done <- struct{}{}:
	default:
	}
}

// BenchmarkCreateRun measures the create path with the created tasks' own
// work inside the measurement, on SQLite, for a tool whose handler sets a
// status message and completes. One op is one task, from its create until
// its result is stored. "claimed" is the engine as it is (with a free
// worker slot, the create's write claims the task and its handler starts
// at once); "queued" is the baseline, every task left to the claim loop
// (a create, then a claim). "serial" runs one task at a time (the latency
// of a task on an idle server: the claim is on its path); "parallel" has
// 16 goroutines creating, with 16 workers (the throughput; loop-claims/op
// is the share of tasks the claim loop had to claim, because no slot was
// free at their create). Run them in one go and compare (BENCHMARKS.md,
// "Writes per task").
func BenchmarkCreateRun(b *testing.B) {
	tool := &Tool{Name: "complete", Handler: func(ctx context.Context, run *Run) (json.RawMessage, error) {
		if err := run.SetStatus(ctx, "Working"); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[]}`), nil
	}}
	args := json.RawMessage(`{"rows":500}`)
	for _, shape := range []string{"serial", "parallel"} {
		for _, mode := range []string{"queued", "claimed"} {
			b.Run(shape+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				sq, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "tasks.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer sq.Close()
				st := &claimCounter{Store: sq}
				obs := &finishSignal{done: make(chan struct{}, 1)}
				e, err := New(st, []*Tool{tool}, &Options{Owner: "bench", Observer: obs})
				if err != nil {
					b.Fatal(err)
				}
				e.queueCreates = mode == "queued"
				e.Start(ctx)
				defer e.Shutdown(ctx)
				create := func() {
					if _, err := e.Create(ctx, CreateParams{Tool: "complete", Args: args, Principal: "alice"}); err != nil {
						b.Error(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				if shape == "serial" {
					for i := int64(1); b.Loop(); i++ {
						create()
						for obs.finished.Load() < i {
							<-obs.done
						}
					}
				} else {
					b.SetParallelism(8) // 16 creators on 2 CPUs
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							create()
						}
					})
					for obs.finished.Load() < int64(b.N) {
						select {
						case <-obs.done:
						case <-time.After(time.Millisecond):
						}
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(st.claimed.Load())/float64(b.N), "loop-claims/op")
			})
		}
	}
}

var _ store.Store = (*claimCounter)(nil)
