package metrics_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/metrics"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
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

// countingStore counts the calls of CountActive.
type countingStore struct {
	*memory.Store
	calls atomic.Int32
}

func (s *countingStore) CountActive(ctx context.Context, now time.Time) (store.ActiveCounts, error) {
	s.calls.Add(1)
	return s.Store.CountActive(ctx, now)
}

// TestLiveCountsFresh: scrapes within five seconds of a count share it;
// the next one counts again and shows what changed.
func TestLiveCountsFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countingStore{Store: memory.New()}
		reg := prometheus.NewRegistry()
		if _, err := metrics.New(reg, st); err != nil {
			t.Fatal(err)
		}
		working := func() float64 {
			t.Helper()
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() != "mcptasks_tasks" {
					continue
				}
				for _, m := range mf.GetMetric() {
					if m.GetLabel()[0].GetValue() == "working" {
						return m.GetGauge().GetValue()
					}
				}
			}
			t.Fatal("no mcptasks_tasks{status=\"working\"}")
			return 0
		}
		if n := working(); n != 0 {
			t.Fatalf("working = %v on an empty store", n)
		}
		if err := st.Create(context.Background(), &task.Record{ID: "t1", Tool: "echo", Principal: "p", Status: task.Working,
			CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * time.Second)
		if n, calls := working(), st.calls.Load(); n != 0 || calls != 1 {
			t.Errorf("4 s later: working = %v after %d counts, want the first count's 0, counted once", n, calls)
		}
		time.Sleep(time.Second)
		if n, calls := working(), st.calls.Load(); n != 1 || calls != 2 {
			t.Errorf("5 s later: working = %v after %d counts, want 1, counted again", n, calls)
		}
	})
}
