package main

import (
	"context"
	"encoding/json"
	"errors"
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
	json, resume bool
	prune        time.Duration
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

A call is saved in the journal before it is sent. One whose outcome this
machine never learnt (the command was stopped, or lost its connection, while
the call was on the wire) is listed as pending, without an id: the server may
or may not have made its task. --resume sends each pending call again with
the idempotency key it was first sent with: the server answers with the task
the first one made, or makes it now, and the task is listed. The server
keeps a key only as long as its task lives (its TTL): a call resent after
its task expired runs again. A call the
server answers at once runs again (keys hold for tasks only); one that asks
a question before it makes a task stays pending. A call still on the wire in
another "mcptasks call" is listed as pending too: resume when none runs.

The journal keeps every task until it is pruned: --prune 720h removes the
entries of tasks last seen finished (completed, failed or cancelled) more
than 30 days ago, in one change of the file, and says how many.

With --json, a JSON array of the journal's entries: taskId ("" for a
pending call), serverUrl, tool, args, argsDigest, status, statusMessage,
seenAt, createdAt, answeredKeys, protocol (set for a 2025-11-25 task),
idempotencyKey.

` + exitCodesHelp(exitOK, exitUsage, exitTransport),
		Args: cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			return runTasks(cmd.Context(), &f, osStreams(), time.Now())
		}),
	}
	fl := cmd.Flags()
	f.register(fl, false)
	fl.BoolVar(&f.json, "json", false, "print the entries as a JSON array")
	fl.BoolVar(&f.resume, "resume", false, "first send the pending calls again (those whose reply was never seen), each with its idempotency key, to learn their tasks")
	fl.DurationVar(&f.prune, "prune", 0, "first remove the entries of tasks last seen finished (completed, failed or cancelled) longer ago than this `duration`, such as 720h (default: keep every entry)")
	return withUsageHint(cmd)
}

func runTasks(ctx context.Context, f *tasksFlags, s *streams, now time.Time) error {
	j, err := f.openJournal()
	if err != nil {
		return err
	}
	if f.prune < 0 {
		return usageError("--prune must be a positive duration, such as 720h, got %v", f.prune)
	}
	if f.prune > 0 {
		before := now.Add(-f.prune)
		n, err := client.Prune(ctx, j, func(e client.Entry) bool { return e.Status.Terminal() && e.SeenAt.Before(before) })
		if err != nil {
			return unreadableJournal(err)
		}
		fmt.Fprintf(s.err, "mcptasks: removed %d finished task(s) last seen before %s\n", n, before.Local().Format(time.DateTime))
	}
	entries, err := j.List(ctx)
	if err != nil {
		return unreadableJournal(err)
	}
	var resumeErr error
	if f.resume {
		resumeErr = f.resendPending(ctx, j, entries, s)
		if entries, err = j.List(ctx); err != nil {
			return &exitError{code: exitUsage, err: errors.Join(err, resumeErr)}
		}
	}
	slices.SortStableFunc(entries, func(a, b client.Entry) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if f.json {
		if entries == nil {
			entries = []client.Entry{}
		}
		b, _ := json.MarshalIndent(entries, "", "  ")
		fmt.Fprintf(s.out, "%s\n", b)
		return resumeErr
	}
	writeTasks(s.out, entries, now)
	return resumeErr
}

// resendPending sends the journal's pending calls again (client.Resend),
// each to its server, and writes to s.err what did not end in a task; it
// returns an error (exit 3) if a call's outcome is still unknown or the
// server refused it.
func (f *tasksFlags) resendPending(ctx context.Context, j client.Journal, entries []client.Entry, s *streams) error {
	var urls []string
	for _, e := range entries {
		if e.Pending() && !slices.Contains(urls, e.ServerURL) {
			urls = append(urls, e.ServerURL)
		}
	}
	failed := 0
	for _, u := range urls {
		c := f.newClient(u, j, "")
		pending, err := c.Pending(ctx)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		for _, e := range pending {
			res, err := c.Resend(ctx, e)
			switch {
			case err != nil:
				fmt.Fprintf(s.err, "mcptasks: %v\n", err)
				failed++
			case res.Task == nil:
				// Its result is shown here or never: nothing keeps it.
				fmt.Fprintf(s.err, "mcptasks: the pending call of %s on %s was answered at once, without a task:\n", e.Tool, u)
				writeContent(s.err, res.Result)
			}
		}
	}
	if failed > 0 {
		return &exitError{code: exitTransport, err: fmt.Errorf("%d pending call(s) did not resolve into a task", failed)}
	}
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
	pending := 0
	for _, e := range entries {
		created := e.CreatedAt
		if created.IsZero() {
			created = e.SeenAt
		}
		id, status := e.TaskID, string(e.Status)
		if e.Pending() {
			id, status = "-", "pending"
			pending++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, status, e.Tool, term.Elapsed(now.Sub(created)), e.ServerURL)
	}
	tw.Flush()
	if pending > 0 {
		fmt.Fprintf(w, "\n%d call(s) pending: sent, but their reply was never seen; \"mcptasks tasks --resume\" learns their tasks.\n", pending)
	}
}
