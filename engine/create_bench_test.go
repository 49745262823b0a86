package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store/sqlite"
)

// BenchmarkCreateRun measures the create path with the created tasks' own
// work inside the measurement, on SQLite: 16 goroutines create tasks, and
// the timer stops once every task has done its work. The tool "complete"
// sets a status message and completes; "ask" sets one and asks a
// question (the task waits in input_required, as export_report's do).
// "claimed" is the engine as it is (with a free worker slot, the create's
// write claims the task); "queued" is the baseline, every task left to
// the claim loop (a create, then a claim). One op is one task. Run them
// in one go and compare (BENCHMARKS.md, "Writes per task").
func BenchmarkCreateRun(b *testing.B) {
	ask := map[string]json.RawMessage{"ok": json.RawMessage(`{"method":"elicitation/create","params":{"message":"OK?","requestedSchema":{"type":"object"}}}`)}
	tools := []*Tool{
		{Name: "complete", Handler: func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if err := run.SetStatus(ctx, "Working"); err != nil {
				return nil, err
			}
			return json.RawMessage(`{"content":[]}`), nil
		}},
		{Name: "ask", Retry: RetryPolicy{Rerun: true}, Handler: func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if err := run.SetStatus(ctx, "Working"); err != nil {
				return nil, err
			}
			_, err := run.RequestInput(ctx, ask, "OK?")
			return json.RawMessage(`{"content":[]}`), err
		}},
	}
	for _, tool := range []string{"complete", "ask"} {
		for _, mode := range []string{"queued", "claimed"} {
			b.Run(tool+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "tasks.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				e, err := New(st, tools, &Options{Owner: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				e.queueCreates = mode == "queued"
				e.Start(ctx)
				defer e.Shutdown(ctx) // releases the tasks that wait for input
				args := json.RawMessage(`{"rows":500}`)
				b.SetParallelism(8) // 16 creators on 2 CPUs
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := e.Create(ctx, CreateParams{Tool: tool, Args: args, Principal: "alice"}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				for { // the tasks' own work is part of the measurement
					c, err := st.CountActive(ctx, time.Now())
					if err != nil {
						b.Fatal(err)
					}
					if c.Working == 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
}
