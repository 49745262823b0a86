package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

// This example prunes a journal of the tasks last seen finished more than
// 30 days ago; the task still running stays, however old.
func ExamplePrune() {
	ctx := context.Background()
	j := client.MemoryJournal()
	now := time.Now()
	for _, e := range []client.Entry{
		{TaskID: "report-june", Status: task.Completed, SeenAt: now.AddDate(0, -2, 0)},
		{TaskID: "backup-june", Status: task.Failed, SeenAt: now.AddDate(0, -2, 0)},
		{TaskID: "report-today", Status: task.Completed, SeenAt: now},
		{TaskID: "migration", Status: task.Working, SeenAt: now.AddDate(0, -2, 0)},
	} {
		e.ServerURL = "http://127.0.0.1:8080/mcp"
		if err := j.Save(ctx, e); err != nil {
			panic(err)
		}
	}
	before := now.Add(-30 * 24 * time.Hour)
	n, err := client.Prune(ctx, j, func(e client.Entry) bool { return e.Status.Terminal() && e.SeenAt.Before(before) })
	if err != nil {
		panic(err)
	}
	fmt.Println("removed:", n)
	left, _ := j.List(ctx)
	for _, e := range left {
		fmt.Println(e.TaskID, e.Status)
	}
	// Unordered output:
	// removed: 2
	// report-today completed
	// migration working
}
