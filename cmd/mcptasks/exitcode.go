package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcptasks/mcptasks/client"
)

// Exit codes of the client commands (call, wait, get, answer, cancel,
// tasks). exitCodes describes them for --help.
const (
	exitOK            = 0
	exitToolError     = 1
	exitUsage         = 2
	exitTransport     = 3
	exitTaskFailed    = 4
	exitTaskCancelled = 5
	exitDetached      = 6
	exitInputRequired = 7
)

// exitCodes is the table of exit codes that the help texts print; the
// code returns the constants above.
var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "success; for call and wait: the tool completed"},
	{exitToolError, "the tool completed with a tool error (isError: true)"},
	{exitUsage, "usage or configuration error: bad flags or arguments, a task id not in the journal, an unreadable journal"},
	{exitTransport, "transport or protocol error: server unreachable (following a task, call and wait retry for " + retryBudgetText + " first, long enough for a restart; the task may still be running: \"mcptasks wait ID\" follows it again), HTTP error, JSON-RPC error (an unknown or expired task id too)"},
	{exitTaskFailed, "the task failed (a JSON-RPC error, or its worker was lost)"},
	{exitTaskCancelled, "the task was cancelled (or the call was interrupted before its task was known: if it was on the wire, \"mcptasks tasks\" lists it as pending)"},
	{exitDetached, "detached: the task is still running; come back with \"mcptasks wait ID\""},
	{exitInputRequired, "input is needed and stdin is not a terminal; the request is printed as JSON: answer a task's with \"mcptasks answer ID ...\"; a question asked before the task exists (no ID) is answered on a terminal, or ahead with --answers"},
}

// retryBudgetText is how long call and wait retry a server that fails
// (client.DefaultRetryBudget), in words.
var retryBudgetText = fmt.Sprintf("%d minutes", int(client.DefaultRetryBudget/time.Minute))

// exitCodesHelp formats the rows of exitCodes for codes (every row if
// none are given) for a help text.
func exitCodesHelp(codes ...int) string {
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	for _, e := range exitCodes {
		if len(codes) > 0 && !slices.Contains(codes, e.code) {
			continue
		}
		fmt.Fprintf(&b, "  %d  %s\n", e.code, e.meaning)
	}
	return b.String()
}

// exitError ends a command with an exit code. Err, if set, is printed as
// one line on stderr; a nil Err means the command has said everything.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the process's exit code.
func (e *exitError) ExitCode() int { return e.code }

// exitWith returns an error that ends the command with code, quietly.
func exitWith(code int) error { return &exitError{code: code} }

// usageError is a usage or configuration error (exit 2).
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCodeOf maps the error a command returned to its exit code.
func exitCodeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, client.ErrTaskCancelled):
		return exitTaskCancelled
	case errors.Is(err, client.ErrTaskFailed):
		return exitTaskFailed
	case errors.Is(err, client.ErrInputRequired):
		return exitInputRequired
	}
	return exitTransport
}

// runE adapts a client command to cobra: the error it returns carries the
// command's exit code, which main exits with (after printing the message,
// if any). Usage errors get a hint at --help.
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		switch code := exitCodeOf(err); code {
		case exitOK:
			return nil
		case exitUsage:
			return &exitError{code: code, err: hint(cmd, err)}
		default:
			return &exitError{code: code, err: err}
		}
	}
}

// hint adds to err a hint at the --help of cmd.
func hint(cmd *cobra.Command, err error) error {
	return fmt.Errorf("%w\nRun \"mcptasks %s --help\" for usage", err, cmd.Name())
}

// usageHint adds the hint at --help to a usage error (usageError) of a
// server command, and returns its other errors as they are.
func usageHint(cmd *cobra.Command, err error) error {
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitUsage {
		return &exitError{code: exitUsage, err: hint(cmd, err)}
	}
	return err
}

// withUsageHint makes cobra's argument and flag errors of cmd end like
// the command's own usage errors: with a hint at --help. It also takes
// the command's flags that follow "--" (see flagsAfterDash).
func withUsageHint(cmd *cobra.Command) *cobra.Command {
	var positional []string // the arguments, once the flags after "--" are out
	args := cmd.Args
	cmd.Args = func(c *cobra.Command, a []string) error {
		var err error
		if positional, err = flagsAfterDash(c, a); err != nil {
			return hint(c, err)
		}
		if args != nil {
			if err := args(c, positional); err != nil {
				return hint(c, err)
			}
		}
		return nil
	}
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, a []string) error {
			if positional == nil {
				positional = a
			}
			return run(c, positional)
		}
	}
	cmd.SetFlagErrorFunc(hint)
	return cmd
}

// flagsAfterDash sets the flags of c that follow "--" in args and returns
// the other arguments: "--" protects task ids that start with a dash
// ("mcptasks cancel -- -Xf3… --json"), not the flags typed after them. Only
// "--NAME" and "--NAME=VALUE" of a flag c defines count as flags there;
// anything else after "--" stays an argument.
func flagsAfterDash(c *cobra.Command, args []string) ([]string, error) {
	dash := c.ArgsLenAtDash()
	if dash < 0 {
		return args, nil
	}
	out := slices.Clone(args[:dash])
	for i := dash; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		fl := c.Flags().Lookup(name)
		if !strings.HasPrefix(a, "--") || name == "" || fl == nil {
			out = append(out, a)
			continue
		}
		switch {
		case hasValue:
		case fl.NoOptDefVal != "":
			value = fl.NoOptDefVal
		case i+1 < len(args):
			i++
			value = args[i]
		default:
			return nil, fmt.Errorf("flag needs an argument: --%s", name)
		}
		if err := c.Flags().Set(name, value); err != nil {
			return nil, fmt.Errorf("invalid argument %q for --%s: %w", value, name, err)
		}
	}
	return out, nil
}
