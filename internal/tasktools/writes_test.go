package tasktools

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// writeLog wraps a store and logs its durable writes: the calls that
// changed a stored task, by the name of the call. Calls that changed
// nothing (a re-read of input answers, a claim that found no task) are
// not writes. It serializes the calls it watches, so that it compares one
// call's before and after.
type writeLog struct {
	store.Store
	mu     sync.Mutex
	writes []string
}

// watch runs call on the task with the id and logs op if it changed it.
func (w *writeLog) watch(ctx context.Context, op, id string, call func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	before, _ := w.Store.Get(ctx, id)
	err := call()
	after, _ := w.Store.Get(ctx, id)
	if err == nil && !reflect.DeepEqual(before, after) {
		w.writes = append(w.writes, op)
	}
	return err
}

func (w *writeLog) log() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}

func (w *writeLog) Create(ctx context.Context, r *task.Record) error {
	return w.watch(ctx, "create", r.ID, func() error { return w.Store.Create(ctx, r) })
}

func (w *writeLog) Claim(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cs, err := w.Store.Claim(ctx, p)
	for range cs {
		w.writes = append(w.writes, "claim")
	}
	return cs, err
}

func (w *writeLog) Release(ctx context.Context, p store.FenceParams) error {
	return w.watch(ctx, "release", p.ID, func() error { return w.Store.Release(ctx, p) })
}

func (w *writeLog) SetStatusMessage(ctx context.Context, p store.StatusMessageParams) error {
	return w.watch(ctx, "status", p.ID, func() error { return w.Store.SetStatusMessage(ctx, p) })
}

func (w *writeLog) RequestInput(ctx context.Context, p store.RequestInputParams) (a map[string]json.RawMessage, err error) {
	err = w.watch(ctx, "input request", p.ID, func() (err error) { a, err = w.Store.RequestInput(ctx, p); return err })
	return a, err
}

func (w *writeLog) SaveStep(ctx context.Context, p store.StepParams) (r json.RawMessage, err error) {
	err = w.watch(ctx, "step", p.ID, func() (err error) { r, err = w.Store.SaveStep(ctx, p); return err })
	return r, err
}

func (w *writeLog) Finish(ctx context.Context, p store.FinishParams) error {
	return w.watch(ctx, "finish", p.ID, func() error { return w.Store.Finish(ctx, p) })
}

func (w *writeLog) Answer(ctx context.Context, p store.AnswerParams) (a []string, err error) {
	err = w.watch(ctx, "answer", p.ID, func() (err error) { a, err = w.Store.Answer(ctx, p); return err })
	return a, err
}

// TestExportReportWrites counts the durable store writes of one
// export_report task, from its create to its result, answered at once, on
// one process with free workers (BENCHMARKS.md, "Writes per task").
func TestExportReportWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := &writeLog{Store: memory.New()}
		srv := mcpserver.New(&mcp.Implementation{Name: "test", Version: "0"}, &mcpserver.Options{Store: st})
		if err := Register(srv, &Options{Step: time.Second}); err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer srv.Shutdown(ctx)
		e := srv.Engine()
		synctest.Wait()

		rec, err := e.Create(ctx, engine.CreateParams{Tool: "export_report", Principal: "alice",
			Args: json.RawMessage(`{"rows":42}`), ClientCapabilities: json.RawMessage(`{"elicitation":{}}`)})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if _, err := e.Update(ctx, "alice", rec.ID, map[string]json.RawMessage{
			"confirm-overwrite": json.RawMessage(`{"action":"accept","content":{"overwrite":true}}`),
		}, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if r, _ := st.Get(ctx, rec.ID); r.Status != task.Completed {
			t.Fatalf("status %s, want completed", r.Status)
		}
		// The claim and the handler's first status ("Querying rows") are
		// part of the create; the step stores the query's row count, so
		// that a re-run does not query again.
		want := []string{"create", "step", "input request", "answer", "status", "finish"}
		if got := st.log(); !slices.Equal(got, want) {
			t.Errorf("writes = %q (%d), want %q (%d)", got, len(got), want, len(want))
		}
	})
}
