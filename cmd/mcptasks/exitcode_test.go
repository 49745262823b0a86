package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

func TestExitCodes(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for i, e := range exitCodes {
		if e.code != i || seen[e.code] {
			t.Errorf("exitCodes[%d] has code %d: the table must list 0, 1, 2, ... once each", i, e.code)
		}
		seen[e.code] = true
	}
	help := newCallCmd().Long
	for _, e := range exitCodes {
		if !strings.Contains(help, fmt.Sprintf("  %d  %s\n", e.code, e.meaning)) {
			t.Errorf("call --help lacks exit code %d", e.code)
		}
	}
	if h := exitCodesHelp(exitOK, exitUsage); strings.Contains(h, "  3  ") || !strings.Contains(h, "  2  ") {
		t.Errorf("exitCodesHelp(0, 2) = %q", h)
	}
}

func TestExitCodeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{exitWith(exitToolError), exitToolError},
		{usageError("bad"), exitUsage},
		{fmt.Errorf("wrapped: %w", exitWith(exitDetached)), exitDetached},
		{&client.TaskError{Status: task.Failed}, exitTaskFailed},
		{&client.TaskError{Status: task.Cancelled}, exitTaskCancelled},
		{&client.InputRequiredError{}, exitInputRequired},
		{&client.TransportError{Method: "tools/call", Err: errors.New("refused")}, exitTransport},
		{&client.Error{Code: client.CodeInvalidParams, Message: "unknown task"}, exitTransport},
		{errors.New("anything else"), exitTransport},
	} {
		if got := exitCodeOf(tc.err); got != tc.want {
			t.Errorf("exitCodeOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestEveryFlagHasHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []*cobra.Command{newCallCmd(), newTasksCmd(), newGetCmd(), newWaitCmd(), newAnswerCmd(), newCancelCmd()} {
		if cmd.Short == "" || cmd.Long == "" {
			t.Errorf("%s: no Short or Long help", cmd.Name())
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.TrimSpace(f.Usage) == "" {
				t.Errorf("%s --%s has no help", cmd.Name(), f.Name)
			}
		})
		for _, name := range []string{"token", "journal"} {
			if cmd.Flags().Lookup(name) == nil {
				t.Errorf("%s has no --%s", cmd.Name(), name)
			}
		}
	}
}
