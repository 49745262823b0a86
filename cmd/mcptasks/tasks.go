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
	forget       []string
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
the call was on the wire) is listed as pending, named key:KEY (the
idempotency key it was sent with) for want of an id: the server may or may
not have made its task. --resume sends each pending call again with the
idempotency key it was first sent with: the server answers with the task
the first one made, or makes it now, and the task is listed. The server
keeps a key only as long as its task lives (its TTL): a call resent after
its task expired runs again. A call the
server answers at once runs again (keys hold for tasks only); one that asks
a question before it makes a task stays pending. A call still on the wire in
another "mcptasks call" is listed as pending too: resume when none runs.

The journal keeps every task until it is pruned: --prune 720h removes the
entries of tasks last seen finished (completed, failed or cancelled) more
than 30 days ago, in one change of the file, and says how many.

Nor is an entry removed on its own: a task the server no longer knows stays
as last seen (expired, deleted and another principal's look the same, so a
changed token must not empty the journal), and a pending call that --resume
cannot settle stays pending, --resume failing on it each time. --forget ID
removes the entries named, asking no server, and says which: ID is a task
id or a unique prefix of one, or a pending call's key:KEY as listed (or its
bare KEY); repeat it to name several, and add --url URL to look only at
that server's entries. If an ID names no entry, or several, nothing is
removed (exit 2). The task itself is not touched: "mcptasks get ID --url
URL" still asks its server.

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
	fl.StringArrayVar(&f.forget, "forget", nil, "first remove the journal's entry of the task `ID` (or a unique prefix), or of the pending call key:KEY, asking no server (repeatable)")
	fl.StringVar(&f.url, "url", "", "with --forget, only the entries of the server at this MCP endpoint `URL` (default: any server's)")
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
	if f.url != "" && len(f.forget) == 0 {
		return usageError("--url goes with --forget")
	}
	forget, err := f.forgotten(ctx, j)
	if err != nil {
		return err
	}
	if f.prune > 0 {
		before := now.Add(-f.prune)
		n, err := client.Prune(ctx, j, func(e client.Entry) bool { return e.Status.Terminal() && e.SeenAt.Before(before) })
		if err != nil {
			return unreadableJournal(err)
		}
		fmt.Fprintf(s.err, "mcptasks: removed %d finished task(s) last seen before %s\n", n, before.Local().Format(time.DateTime))
	}
	if len(forget) > 0 {
		removed, err := client.Forget(ctx, j, forget...)
		if err != nil {
			return unreadableJournal(err)
		}
		for _, e := range removed {
			if e.Pending() {
				fmt.Fprintf(s.err, "mcptasks: removed the pending call %s of %s on %s\n", journalName(e), e.Tool, e.ServerURL)
			} else {
				fmt.Fprintf(s.err, "mcptasks: removed task %s of %s on %s, last seen %s\n", e.TaskID, e.Tool, e.ServerURL, e.Status)
			}
		}
		for _, e := range forget {
			if !slices.ContainsFunc(removed, func(r client.Entry) bool { return sameEntry(r, e) }) {
				// Pruned above, or settled by another process since.
				fmt.Fprintf(s.err, "mcptasks: %s of %s was no longer in the journal\n", journalName(e), e.ServerURL)
			}
		}
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

// pendingPrefix begins the name of a pending call in the journal, which
// has no task id: "key:" and its idempotency key.
const pendingPrefix = "key:"

// journalName is the name of an entry in the journal: its task id, or for
// a pending call key:KEY. "mcptasks tasks" lists entries by it, and --forget
// takes it.
func journalName(e client.Entry) string {
	if e.Pending() {
		return pendingPrefix + e.IdempotencyKey
	}
	return e.TaskID
}

// sameEntry reports whether a and b are the journal's entry of one task or
// pending call.
func sameEntry(a, b client.Entry) bool {
	return a.ServerURL == b.ServerURL && a.Pending() == b.Pending() && journalName(a) == journalName(b)
}

// forgotten returns the entries that the --forget IDs name, each found as
// locate finds a task (the id, else the entries it is a unique prefix of)
// among the names of journalName, or as the bare key of a pending call. It
// fails (exit 2) naming the first ID that names no entry, or several.
func (f *tasksFlags) forgotten(ctx context.Context, j client.Journal) ([]client.Entry, error) {
	if len(f.forget) == 0 {
		return nil, nil
	}
	entries, err := j.List(ctx)
	if err != nil {
		return nil, unreadableJournal(err)
	}
	here := f.onServer(entries)
	var out []client.Entry
	for _, id := range f.forget {
		if id == "" {
			return nil, usageError("--forget: empty id; \"mcptasks tasks\" lists the ids")
		}
		matches, exact := lookup(here, id, journalName, true)
		if !exact { // the bare key of a pending call, as --json shows it
			if byKey, _ := lookup(here, pendingPrefix+id, journalName, false); len(byKey) > 0 {
				matches, exact = byKey, true
			}
		}
		switch {
		case len(matches) == 0:
			where := ""
			if f.url != "" {
				where = " of " + f.url
			}
			return nil, usageError("--forget %s: no entry%s in the journal has this id; \"mcptasks tasks\" lists them (a pending call as key:KEY)", id, where)
		case len(matches) > 1:
			return nil, usageError("--forget %s is ambiguous: %s", id, ambiguity(matches, exact, journalName))
		}
		out = append(out, matches[0])
	}
	return out, nil
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
		id, status := journalName(e), string(e.Status)
		if e.Pending() {
			status = "pending"
			pending++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, status, e.Tool, term.Elapsed(now.Sub(created)), e.ServerURL)
	}
	tw.Flush()
	if pending > 0 {
		fmt.Fprintf(w, "\n%d call(s) pending: sent, but their reply was never seen; \"mcptasks tasks --resume\" learns their tasks (\"--forget key:KEY\" drops one it cannot).\n", pending)
	}
}
