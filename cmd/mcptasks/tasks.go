package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/term"
)

type tasksFlags struct {
	clientFlags
	json bool
}

func newTasksCmd() *cobra.Command {
	var f tasksFlags
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List the tasks in the local journal, newest first",
		Long: `tasks lists the tasks that "mcptasks call" started, from the local journal
(the client-side replacement of the removed tasks/list): id, last-seen status,
tool, age and server, newest first. The status is the last one this machine
saw; "mcptasks get ID" asks the server.

With --json, a JSON array of the journal's entries: taskId, serverUrl, tool,
args, argsDigest, status, statusMessage, seenAt, createdAt, answeredKeys.

` + exitCodesHelp(exitOK, exitUsage),
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runTasks(cmd.Context(), &f, osStreams(), time.Now())
		}),
	}
	fl := cmd.Flags()
	f.register(fl, false)
	fl.BoolVar(&f.json, "json", false, "print the entries as a JSON array")
	return withUsageHint(cmd)
}

func runTasks(ctx context.Context, f *tasksFlags, s *streams, now time.Time) error {
	j, err := f.openJournal()
	if err != nil {
		return err
	}
	entries, err := j.List(ctx)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	slices.SortStableFunc(entries, func(a, b client.Entry) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if f.json {
		if entries == nil {
			entries = []client.Entry{}
		}
		b, _ := json.MarshalIndent(entries, "", "  ")
		fmt.Fprintf(s.out, "%s\n", b)
		return nil
	}
	writeTasks(s.out, entries, now)
	return nil
}

// writeTasks writes the journal's entries as a table.
func writeTasks(w io.Writer, entries []client.Entry, now time.Time) {
	if len(entries) == 0 {
		fmt.Fprintln(w, "No tasks in the journal.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTOOL\tAGE\tSERVER")
	for _, e := range entries {
		created := e.CreatedAt
		if created.IsZero() {
			created = e.SeenAt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.TaskID, e.Status, e.Tool, term.Elapsed(now.Sub(created)), e.ServerURL)
	}
	tw.Flush()
}
