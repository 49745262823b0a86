// Command mcptasks serves MCP tools as durable tasks.
//
// Run "mcptasks --help" for the commands and "mcptasks COMMAND --help" for
// their flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	if err == nil {
		return
	}
	code := exitUsage // flag and configuration errors
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(os.Stderr, "mcptasks:", msg)
	}
	stop()
	os.Exit(code)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "mcptasks",
		Short: "Durable, long-running MCP tool calls (the MCP Tasks extension)",
		Long: `mcptasks serves MCP tools as durable tasks (MCP 2026-07-28 with the
io.modelcontextprotocol/tasks extension): a long tools/call is answered with a
task id at once, and the client polls tasks/get, answers questions with
tasks/update and stops work with tasks/cancel. Tasks are stored before the
reply and survive a restart of the server.`,
		Version:       buildVersion(debug.ReadBuildInfo()),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("mcptasks {{.Version}}\n")
	root.AddCommand(newServeCmd(), newWorkerCmd(), newBenchCmd(),
		newCallCmd(), newTasksCmd(), newGetCmd(), newWaitCmd(), newAnswerCmd(), newCancelCmd(), newProxyCmd(),
		newConsoleCmd())
	return root
}
