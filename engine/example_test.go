package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"slices"
	"time"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// A tool whose handler asks the client one question through an
// elicitation, then answers with a greeting. The client creates the task,
// polls it until it asks for input, answers with tasks/update, and polls
// until it completes.
func Example() {
	ctx := context.Background()

	greet := &engine.Tool{
		Name:         "greet",
		PollInterval: 10 * time.Millisecond,
		Handler: func(ctx context.Context, run *engine.Run) (json.RawMessage, error) {
			ask, _ := json.Marshal(map[string]any{
				"method": "elicitation/create",
				"params": map[string]any{
					"message": "What is your name?",
					"requestedSchema": map[string]any{
						"type":       "object",
						"properties": map[string]any{"name": map[string]any{"type": "string"}},
					},
				},
			})
			// The task is input_required until the answer arrives; the
			// handler does not hold a worker slot meanwhile.
			answers, err := run.RequestInput(ctx, map[string]json.RawMessage{"name": ask}, "What is your name?")
			if err != nil {
				return nil, err
			}
			var reply struct {
				Action  string `json:"action"`
				Content struct {
					Name string `json:"name"`
				} `json:"content"`
			}
			if err := json.Unmarshal(answers["name"], &reply); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{
				"content": []map[string]string{{"type": "text", "text": "Hello, " + reply.Content.Name + "!"}},
			})
		},
	}

	eng, err := engine.New(memory.New(), []*engine.Tool{greet}, nil)
	if err != nil {
		log.Fatal(err)
	}
	eng.Start(ctx)
	defer eng.Shutdown(ctx)

	rec, err := eng.Create(ctx, engine.CreateParams{Tool: "greet", Principal: "alice", Args: json.RawMessage(`{}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", rec.Status)

	// poll reads the task every pollIntervalMs until its status is not
	// working, as a client does.
	poll := func() *task.Record {
		for {
			r, err := eng.Get(ctx, "alice", rec.ID)
			if err != nil {
				log.Fatal(err)
			}
			if r.Status != task.Working {
				return r
			}
			time.Sleep(r.PollInterval)
		}
	}

	rec = poll()
	fmt.Println("then:", rec.Status, slices.Sorted(maps.Keys(rec.InputRequests)))

	accepted, err := eng.Update(ctx, "alice", rec.ID, map[string]json.RawMessage{
		"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`),
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("accepted:", accepted)

	rec = poll()
	fmt.Println("finally:", rec.Status, string(rec.Result))
	// Output:
	// created: working
	// then: input_required [name]
	// accepted: [name]
	// finally: completed {"content":[{"text":"Hello, Ada!","type":"text"}]}
}
