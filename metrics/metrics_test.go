package metrics_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/metrics"
	"github.com/mcptasks/mcptasks/store/memory"
)

// TestMetrics runs one task through an engine observed by Metrics, on
// synctest's clock, and checks what the registry then exports.
func TestMetrics(t *testing.T) {
	synctest.Test(t, testMetrics)
}

func testMetrics(t *testing.T) {
	st := memory.New()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, st)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	eng, err := engine.New(st, []*engine.Tool{{Name: "echo", Handler: func(ctx context.Context, _ *engine.Run) (json.RawMessage, error) {
		<-release
		return []byte(`{"content":[]}`), nil
	}}}, &engine.Options{Observer: m, ClaimInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := eng.Create(ctx, engine.CreateParams{Tool: "echo", Principal: "p"})
	if err != nil {
		t.Fatal(err)
	}
	// Before any worker: one live, queued task.
	want := `
# HELP mcptasks_queue_depth Live tasks that no worker holds and that a worker may claim: new, released, or with an expired lease (not suspended ones, which wait for input).
# TYPE mcptasks_queue_depth gauge
mcptasks_queue_depth 1
# HELP mcptasks_tasks Live tasks in the store, by status.
# TYPE mcptasks_tasks gauge
mcptasks_tasks{status="input_required"} 0
mcptasks_tasks{status="working"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mcptasks_tasks", "mcptasks_queue_depth"); err != nil {
		t.Error(err)
	}
	eng.Start(ctx)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = eng.Shutdown(ctx)
		}
	})
	close(release)
	time.Sleep(time.Second) // a claim round and the run, on the fake clock
	synctest.Wait()
	if got, err := eng.Get(ctx, "p", r.ID); err != nil || !got.Status.Terminal() {
		t.Fatalf("task after a second: %v, %v; want it ended", got, err)
	}
	stopped = true
	if err := eng.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	want = `
# HELP mcptasks_tasks_created_total Tasks created, by tool.
# TYPE mcptasks_tasks_created_total counter
mcptasks_tasks_created_total{tool="echo"} 1
# HELP mcptasks_tasks_claimed_total Claims of tasks by this process's workers, by tool.
# TYPE mcptasks_tasks_claimed_total counter
mcptasks_tasks_claimed_total{tool="echo"} 1
# HELP mcptasks_tasks_finished_total Tasks ended by this process's workers, by tool and terminal status.
# TYPE mcptasks_tasks_finished_total counter
mcptasks_tasks_finished_total{status="completed",tool="echo"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mcptasks_tasks_created_total", "mcptasks_tasks_claimed_total", "mcptasks_tasks_finished_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "mcptasks_store_op_duration_seconds"); n < 4 {
		t.Errorf("store op series = %d, want create, get, claim, finish at least", n)
	}
}
