package client_test

import (
	"context"
	"fmt"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

// This example forgets a task that its server no longer knows, which would
// stay working in the journal for ever, and a pending create that cannot
// be resent; the other task stays.
func ExampleForget() {
	ctx := context.Background()
	j := client.MemoryJournal()
	const server = "http://127.0.0.1:8080/mcp"
	for _, e := range []client.Entry{
		{TaskID: "expired", Status: task.Working},
		{TaskID: "report", Status: task.Completed},
		{IdempotencyKey: "unsettled"}, // a pending create: no TaskID
	} {
		e.ServerURL, e.Tool = server, "export_report"
		if err := j.Save(ctx, e); err != nil {
			panic(err)
		}
	}
	removed, err := client.Forget(ctx, j,
		client.Entry{ServerURL: server, TaskID: "expired"},
		client.Entry{ServerURL: server, IdempotencyKey: "unsettled"})
	if err != nil {
		panic(err)
	}
	for _, e := range removed { // in the order of List
		if e.Pending() {
			fmt.Println("removed the pending call of key", e.IdempotencyKey)
		} else {
			fmt.Println("removed task", e.TaskID, e.Status)
		}
	}
	left, _ := j.List(ctx)
	for _, e := range left {
		fmt.Println("left:", e.TaskID, e.Status)
	}
	// Output:
	// removed the pending call of key unsettled
	// removed task expired working
	// left: report completed
}
