package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// TestCreateFoldsFirstWrite: the first write of a handler that writes at
// once (a status, a question, a step, its end) is stored with the task's
// create, one store write instead of two; a handler that writes after
// foldWindow gets its create stored alone, and then writes as usual, as
// does a handler of a tool that is not re-run. Either way Create returns
// the task as created, working.
func TestCreateFoldsFirstWrite(t *testing.T) {
	tests := []struct {
		name    string
		handler Handler
		rerun   bool        // the tool's Retry.Rerun: only such tools fold
		op      string      // the handler's first write, as the observer names it
		folded  bool        // stored with the create
		status  task.Status // stored once the first write is in
		history []task.HistoryKind
	}{
		{"question", func(ctx context.Context, run *Run) (json.RawMessage, error) {
			_, err := run.RequestInput(ctx, asks("k"), "Asking")
			return nil, err
		}, true, "request_input", true, task.InputRequired, []task.HistoryKind{task.HistoryClaimed, task.HistoryInputRequested}},
		{"status", func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if err := run.SetStatus(ctx, "Querying rows"); err != nil {
				return nil, err
			}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}, true, "set_status", true, task.Working, []task.HistoryKind{task.HistoryClaimed, task.HistoryStatus}},
		{"step", func(ctx context.Context, run *Run) (json.RawMessage, error) {
			if _, err := run.Step(ctx, "s", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil }); err != nil {
				return nil, err
			}
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}, true, "save_step", true, task.Working, []task.HistoryKind{task.HistoryClaimed}},
		{"end", func(context.Context, *Run) (json.RawMessage, error) {
			return json.RawMessage(`{"content":[]}`), nil
		}, true, "finish", true, task.Completed, []task.HistoryKind{task.HistoryClaimed, task.HistoryFinished}},
		{"not re-run", func(context.Context, *Run) (json.RawMessage, error) {
			return json.RawMessage(`{"content":[]}`), nil
		}, false, "finish", false, task.Completed, []task.HistoryKind{task.HistoryClaimed, task.HistoryFinished}},
		{"late", func(ctx context.Context, run *Run) (json.RawMessage, error) {
			time.Sleep(2 * foldWindow)
			return json.RawMessage(`{"content":[]}`), nil
		}, true, "finish", false, task.Completed, []task.HistoryKind{task.HistoryClaimed, task.HistoryFinished}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				var obs opCounter
				tool := &Tool{Name: "t", Handler: tt.handler, Retry: RetryPolicy{Rerun: tt.rerun}}
				e := startEngine(t, st, []*Tool{tool}, Options{Owner: "a", Observer: &obs})
				synctest.Wait() // the claim loop's first, empty, claim
				start := time.Now()
				r := create(t, e, "t")
				took := time.Since(start)
				if r.Status != task.Working || r.Attempt != 1 || r.LeaseOwner != "a" {
					t.Errorf("Create returned %s, attempt %d, owner %q; want the task as created, working, claimed by a", r.Status, r.Attempt, r.LeaseOwner)
				}
				if want := map[bool]time.Duration{true: foldWindow, false: 0}[tt.rerun && !tt.folded]; took != want {
					t.Errorf("Create took %v, want %v", took, want)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				got := get(t, st, r.ID)
				var kinds []task.HistoryKind
				for _, ev := range got.History {
					kinds = append(kinds, ev.Kind)
				}
				if got.Status != tt.status || !slices.Equal(kinds, tt.history) {
					t.Errorf("stored %s, history %v; want %s, %v", got.Status, kinds, tt.status, tt.history)
				}
				wantOp := map[bool]int{true: 0, false: 1}[tt.folded]
				if c, w := obs.count("create"), obs.count(tt.op); c != 1 || w != wantOp {
					t.Errorf("store calls: create %d, %s %d; want 1, %d", c, tt.op, w, wantOp)
				}
			})
		})
	}
}

// TestCreateFoldsQuestionOfEndedContext: a handler whose first write is
// a question on a context that has already ended (a deadline of its own)
// asks nobody and does not fail the create: the task is inserted (the
// insert is the create's, not the question's), and not suspended, also by
// a tool that suspends at once.
func TestCreateFoldsQuestionOfEndedContext(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"holding first", Options{}},
		{"suspending at once", Options{SuspendAfter: -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				mem := newMem()
				st := &faultStore{Store: mem}
				st.ctxCreate.Store(true)
				var asked error
				h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
					qctx, cancel := context.WithCancel(ctx)
					cancel()
					_, asked = run.RequestInput(qctx, asks("k"), "Asking")
					return json.RawMessage(`{"content":[]}`), nil
				}
				e := startEngine(t, st, []*Tool{{Name: "t", Handler: h, Retry: RetryPolicy{Rerun: true}}}, tt.opts)
				synctest.Wait()
				r := create(t, e, "t")
				time.Sleep(time.Second)
				synctest.Wait()
				if !errors.Is(asked, context.Canceled) {
					t.Errorf("RequestInput = %v, want the question's context's error", asked)
				}
				got := get(t, mem, r.ID)
				if got.Status != task.Completed || len(got.InputRequests) != 0 || slices.ContainsFunc(got.History, func(e task.HistoryEvent) bool { return e.Kind == task.HistoryInputRequested }) {
					t.Errorf("stored %s asking %v, history %v; want completed, never asked", got.Status, got.InputRequests, got.History)
				}
			})
		})
	}
}

// TestCreateFoldFails: when the insert that carries the first write
// fails, Create returns its error, no task exists, and the handler, which
// already ran, is fenced off at its next try of the write.
func TestCreateFoldFails(t *testing.T) {
	bubble(t, func(t *testing.T) {
		mem := newMem()
		st := &faultStore{Store: mem}
		st.failCreate.Store(1)
		var wrote error
		h := func(ctx context.Context, run *Run) (json.RawMessage, error) {
			wrote = run.SetStatus(ctx, "Querying rows")
			return nil, wrote
		}
		e := startEngine(t, st, []*Tool{{Name: "t", Handler: h, Retry: RetryPolicy{Rerun: true}}}, Options{})
		synctest.Wait()
		_, err := e.Create(bg, CreateParams{Tool: "t", Args: json.RawMessage(`{}`), Principal: principal})
		if !errors.Is(err, errStoreDown) {
			t.Errorf("Create = %v, want the store's error", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if !errors.Is(wrote, store.ErrLeaseLost) {
			t.Errorf("the handler's SetStatus = %v, want its run fenced off", wrote)
		}
		if page, err := mem.List(bg, store.ListParams{}); err != nil || len(page.Tasks) != 0 {
			t.Errorf("List = %v, %v; want no task", page, err)
		}
	})
}
