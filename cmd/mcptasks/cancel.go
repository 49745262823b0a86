package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

type cancelFlags struct {
	clientFlags
	json bool
}

func newCancelCmd() *cobra.Command {
	var f cancelFlags
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Ask the server to cancel a task (tasks/cancel)",
		Long: `cancel sends tasks/cancel for the task, then one tasks/get to show where it
stands. Cancellation is cooperative: the task may still complete or fail;
"mcptasks wait ID" shows how it ended (exit 5 if cancelled).

When stdout is not a terminal (or with --json), it prints one JSON object:
{"type":"cancel_requested","taskId":...,"status":...}.

` + idHelp + `

` + exitCodesHelp(exitOK, exitUsage, exitTransport),
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return runCancel(cmd.Context(), &f, args[0], osStreams())
		}),
	}
	fl := cmd.Flags()
	f.register(fl, true)
	fl.BoolVar(&f.json, "json", false, "print JSON even when stdout is a terminal")
	return withUsageHint(cmd)
}

func runCancel(ctx context.Context, f *cancelFlags, id string, s *streams) error {
	ctx, cancel := context.WithTimeout(ctx, 2*requestTimeout)
	defer cancel()
	t, entry, err := f.openTask(ctx, id)
	if err != nil {
		return err
	}
	if err := t.Cancel(ctx); err != nil {
		return explainTaskError(t.ID, err)
	}
	st, err := t.Get(ctx)
	if err != nil {
		return explainTaskError(t.ID, err)
	}
	if !s.outTTY || f.json {
		b, _ := json.Marshal(event{Type: "cancel_requested", TaskID: t.ID, ServerURL: t.ServerURL, Tool: t.Tool, Status: st.Status, StatusMessage: st.StatusMessage})
		fmt.Fprintf(s.out, "%s\n", b)
		return nil
	}
	fmt.Fprintf(s.out, "Cancellation requested; task %s is %s.\n", t.ID, st.Status)
	if !st.Terminal() {
		fmt.Fprintf(s.out, "See how it ends with: %s\n", f.hint("wait", t.ID, t.ServerURL, entry != nil))
	}
	return nil
}
