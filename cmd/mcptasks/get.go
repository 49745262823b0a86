package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/term"
	"github.com/mcptasks/mcptasks/task"
)

type getFlags struct {
	clientFlags
	json bool
}

func newGetCmd() *cobra.Command {
	var f getFlags
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show a task's status, questions or result (one tasks/get)",
		Long: `get sends one tasks/get for the task and shows what the server says: its
status and status message, its questions (and how to answer them), or its
result or error. It records the status in the journal.

On a terminal the task is shown for a person; otherwise (or with --json) as one
JSON object: taskId, serverUrl, tool, status, statusMessage, createdAt,
lastUpdatedAt, ttlMs, pollIntervalMs, and inputRequests, result or error.

` + idHelp + `

` + exitCodesHelp(exitOK, exitUsage, exitTransport),
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return runGet(cmd.Context(), &f, args[0], osStreams())
		}),
	}
	fl := cmd.Flags()
	f.register(fl, true)
	fl.BoolVar(&f.json, "json", false, "print JSON even when stdout is a terminal")
	return withUsageHint(cmd)
}

// taskJSON is the output of "get --json". Fields are only ever added.
type taskJSON struct {
	TaskID         string                          `json:"taskId"`
	ServerURL      string                          `json:"serverUrl"`
	Tool           string                          `json:"tool,omitempty"`
	Status         task.Status                     `json:"status"`
	StatusMessage  string                          `json:"statusMessage,omitempty"`
	CreatedAt      *time.Time                      `json:"createdAt,omitempty"`
	LastUpdatedAt  *time.Time                      `json:"lastUpdatedAt,omitempty"`
	TTLMs          *int64                          `json:"ttlMs"`
	PollIntervalMs *int64                          `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]*client.InputRequest `json:"inputRequests,omitempty"`
	Result         json.RawMessage                 `json:"result,omitempty"`
	Error          *errorJSON                      `json:"error,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func runGet(ctx context.Context, f *getFlags, id string, s *streams) error {
	ctx, cancel := context.WithTimeout(ctx, 2*requestTimeout)
	defer cancel()
	t, entry, err := f.openTask(ctx, id)
	if err != nil {
		return err
	}
	st, err := t.Get(ctx)
	if err != nil {
		return explainTaskError(t.ID, err)
	}
	if !s.outTTY || f.json {
		b, _ := json.MarshalIndent(taskJSON{
			TaskID: t.ID, ServerURL: t.ServerURL, Tool: t.Tool, Status: st.Status, StatusMessage: st.StatusMessage,
			CreatedAt: timePtr(st.CreatedAt), LastUpdatedAt: timePtr(st.LastUpdatedAt),
			TTLMs: st.TTLMs, PollIntervalMs: st.PollIntervalMs,
			InputRequests: st.InputRequests, Result: st.RawResult, Error: newErrorJSON(st.Error),
		}, "", "  ")
		fmt.Fprintf(s.out, "%s\n", b)
		return nil
	}
	writeTask(s.out, t, st, f.flagsHint(t.ServerURL, entry != nil), time.Now())
	return nil
}

// writeTask shows a task's status for a person.
func writeTask(w io.Writer, t *client.Task, st *client.TaskStatus, flags string, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Task\t%s\n", t.ID)
	fmt.Fprintf(tw, "Server\t%s\n", t.ServerURL)
	if t.Tool != "" {
		fmt.Fprintf(tw, "Tool\t%s\n", t.Tool)
	}
	status := string(st.Status)
	if st.StatusMessage != "" {
		status += " · " + st.StatusMessage
	}
	fmt.Fprintf(tw, "Status\t%s\n", status)
	if !st.CreatedAt.IsZero() {
		fmt.Fprintf(tw, "Created\t%s (%s ago)\n", st.CreatedAt.Local().Format(time.DateTime), term.Elapsed(now.Sub(st.CreatedAt)))
	}
	if !st.LastUpdatedAt.IsZero() {
		fmt.Fprintf(tw, "Updated\t%s (%s ago)\n", st.LastUpdatedAt.Local().Format(time.DateTime), term.Elapsed(now.Sub(st.LastUpdatedAt)))
	}
	switch {
	case st.TTLMs == nil:
		fmt.Fprintf(tw, "Expires\tnever\n")
	case !st.CreatedAt.IsZero():
		exp := st.CreatedAt.Add(time.Duration(*st.TTLMs) * time.Millisecond)
		fmt.Fprintf(tw, "Expires\t%s (in %s)\n", exp.Local().Format(time.DateTime), term.Elapsed(exp.Sub(now)))
	}
	if st.Error != nil {
		fmt.Fprintf(tw, "Error\t%s\n", st.Error.Error())
	}
	tw.Flush()
	if len(st.InputRequests) > 0 {
		fmt.Fprintln(w, "Questions:")
		for _, k := range sortedKeys(st.InputRequests) {
			r := st.InputRequests[k]
			msg := r.Method
			if r.Elicit != nil {
				msg = r.Elicit.Message
			}
			fmt.Fprintf(w, "  %s: %s\n", k, strings.TrimSpace(msg))
		}
		fmt.Fprintf(w, "Answer with:\n%s", answerHint(t.ID, st.InputRequests, flags))
	}
	if st.Result != nil {
		fmt.Fprintln(w, "Result:")
		writeContent(w, st.Result)
	}
}
