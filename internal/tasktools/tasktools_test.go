package tasktools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// TestExportReportQueriesOnce: export_report keeps its query in a durable
// step. Its first run queries and asks; the process shuts down while it
// waits (the task is released), and the next process's re-run gets the
// stored row count without querying again, then completes on the answer.
func TestExportReportQueriesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New() // its Close does nothing: both servers share it
		start := func(owner string) *engine.Engine {
			srv := mcpserver.New(&mcp.Implementation{Name: "test", Version: "0"},
				&mcpserver.Options{Store: st, Engine: &engine.Options{Owner: owner}})
			if err := Register(srv, &Options{Step: time.Second}); err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(ctx); err != nil {
				t.Fatal(err)
			}
			return srv.Engine()
		}
		first := start("first")
		rec, err := first.Create(ctx, engine.CreateParams{Tool: "export_report", Principal: "alice",
			Args: json.RawMessage(`{"rows":42}`), ClientCapabilities: json.RawMessage(`{"elicitation":{}}`)})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // 1.5 s of querying
		synctest.Wait()
		r, _ := st.Get(ctx, rec.ID)
		if r.Status != task.InputRequired || string(r.Steps["query"]) != "42" {
			t.Fatalf("after the query: status %s, steps %s; want input_required and the stored row count", r.Status, r.Steps)
		}
		if err := first.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}

		second := start("second")
		defer second.Shutdown(ctx)
		if _, err := second.Update(ctx, "alice", rec.ID, map[string]json.RawMessage{
			"confirm-overwrite": json.RawMessage(`{"action":"accept","content":{"overwrite":true}}`),
		}, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // 1.5 s of writing, no querying
		synctest.Wait()
		r, _ = st.Get(ctx, rec.ID)
		if r.Status != task.Completed || r.Attempt != 2 {
			t.Fatalf("status %s at attempt %d (%q), want completed at 2", r.Status, r.Attempt, r.StatusMessage)
		}
		var querying []int
		for _, ev := range r.History {
			if ev.Kind == task.HistoryStatus && ev.Message == "Querying rows" {
				querying = append(querying, ev.Attempt)
			}
		}
		if len(querying) != 1 || querying[0] != 1 {
			t.Errorf("queried at attempts %v, want [1] only", querying)
		}
		if want := `"Wrote 42 rows to report.csv"`; !json.Valid(r.Result) || !strings.Contains(string(r.Result), want) {
			t.Errorf("result %s, want %s", r.Result, want)
		}
	})
}
