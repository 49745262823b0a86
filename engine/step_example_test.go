package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// A handler keeps its expensive query in a durable step. The first
// process runs the query, asks a question, and shuts down while it waits:
// the task is released. The second process re-runs the handler, which
// gets the query's stored result without running it again.
func ExampleStep() {
	ctx := context.Background()
	var queries atomic.Int32
	export := &engine.Tool{
		Name:  "export_report",
		Retry: engine.RetryPolicy{Rerun: true}, // safe to re-run: the query is a step
		Handler: func(ctx context.Context, run *engine.Run) (json.RawMessage, error) {
			rows, err := engine.Step(ctx, run, "query", func(ctx context.Context) (int, error) {
				queries.Add(1)
				return 500, nil // an expensive query
			})
			if err != nil {
				return nil, err
			}
			fmt.Printf("attempt %d: %d rows\n", run.Attempt(), rows)
			ask := json.RawMessage(`{"method":"elicitation/create","params":{"message":"Overwrite report.csv?",` +
				`"requestedSchema":{"type":"object","properties":{"overwrite":{"type":"boolean"}}}}}`)
			if _, err := run.RequestInput(ctx, map[string]json.RawMessage{"overwrite": ask}, "Overwrite report.csv?"); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": fmt.Sprintf("Wrote %d rows", rows)}}})
		},
	}
	st := memory.New()
	start := func() *engine.Engine {
		e, err := engine.New(st, []*engine.Tool{export}, nil)
		if err != nil {
			log.Fatal(err)
		}
		e.Start(ctx)
		return e
	}
	// waitFor reads the task until it has the status at the attempt.
	waitFor := func(e *engine.Engine, id string, status task.Status, attempt int) *task.Record {
		for {
			r, err := e.Get(ctx, "alice", id)
			if err != nil {
				log.Fatal(err)
			}
			if r.Status == status && r.Attempt == attempt {
				return r
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	first := start()
	rec, err := first.Create(ctx, engine.CreateParams{Tool: "export_report", Principal: "alice", Args: json.RawMessage(`{}`)})
	if err != nil {
		log.Fatal(err)
	}
	waitFor(first, rec.ID, task.InputRequired, 1)
	if err := first.Shutdown(ctx); err != nil { // releases the waiting task
		log.Fatal(err)
	}

	second := start()
	defer second.Shutdown(ctx)
	if _, err := second.Update(ctx, "alice", rec.ID, map[string]json.RawMessage{
		"overwrite": json.RawMessage(`{"action":"accept","content":{"overwrite":true}}`),
	}, nil); err != nil {
		log.Fatal(err)
	}
	rec = waitFor(second, rec.ID, task.Completed, 2)
	fmt.Println(string(rec.Result))
	fmt.Println("queries run:", queries.Load())
	// Output:
	// attempt 1: 500 rows
	// attempt 2: 500 rows
	// {"content":[{"text":"Wrote 500 rows","type":"text"}]}
	// queries run: 1
}
