package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcptasks/mcptasks/client"
)

type callFlags struct {
	clientFlags
	args     string
	json     bool
	detach   bool
	protocol string
	answers  string
}

func newCallCmd() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call URL TOOL [key=value ...]",
		Short: "Call a tool; follow its task to the end, with live status and prompts",
		Long: `call sends tools/call to the MCP endpoint URL. The call is written to the
local journal before it is sent (see "mcptasks tasks"); if the server makes it
a task, the task takes its place there, and is followed to its end, and its
result printed.

The call carries an idempotency key (_meta io.github.mcptasks/idempotencyKey).
When its outcome is unknown (the connection broke after it was sent, HTTP 5xx,
error -32603), it is sent again with the same key, up to 5 times over about 8 s,
if the server says in server/discover that it honours keys (mcptasks does): a
task the first attempt created is then returned, never made twice.

Arguments are key=value pairs set over the JSON object of --args. A value that
parses as JSON is that JSON (rows=5 is a number, force=true a boolean,
tags='["a","b"]' an array); anything else is a string (name=Ada). Quote a
JSON string to keep a number a string: id='"5"'.

Changes show as they happen: by the server's notifications/tasks when it
offers them (subscriptions/listen), else by polling tasks/get as its
pollIntervalMs says. A server that fails meanwhile (it restarts: connections
refused, HTTP 5xx, -32603) is retried, with pauses growing up to 5 s, for
` + retryBudgetText + ` from its first failure; past that the command exits 3, saying
how to follow the task again (the task may still be running).

On a terminal (stdout is one), a status line shows the task's status and
status message, questions of the server (elicitation forms) are asked one
field at a time, and Ctrl-C asks whether to detach (the task keeps running;
"mcptasks wait ID" comes back to it), cancel the task, or keep waiting.

Otherwise (or with --json), stdout gets JSON lines: {"type":"status",...} for
each status change, {"type":"result",...} at the end (status completed with
result, or failed with error, or cancelled), {"type":"detached",...} when the
command stops before the end, and {"type":"input_required",...} with the
inputRequests when the task asks for input and stdin is not a terminal: the
command then exits 7; answer with "mcptasks answer" and follow the task with
"mcptasks wait". --answers gives the answers ahead, by input key, as
"mcptasks answer --json" takes them: a script's way, and the only one
without a terminal for a question asked before the task exists (a tool that
confirms first), which has no task id to answer.

` + exitCodesHelp(),
		Example: `  mcptasks call http://127.0.0.1:8080/mcp export_report rows=5
  mcptasks call http://127.0.0.1:8080/mcp slow_compute --args '{"seconds": 30}' label=nightly
  mcptasks call --detach http://127.0.0.1:8080/mcp slow_compute seconds=600
  mcptasks call --answers '{"confirm-delete": {"action": "accept", "content": {"confirm": true}}}' http://127.0.0.1:8080/mcp confirm_delete filename=a.txt`,
		Args: callArgs,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return runCall(cmd.Context(), &f, args, osStreams())
		}),
	}
	fl := cmd.Flags()
	f.register(fl, false)
	fl.StringVar(&f.args, "args", "", "tool arguments as a JSON `object`; key=value arguments are set over it")
	fl.BoolVar(&f.json, "json", false, "print JSON lines even when stdout is a terminal")
	fl.BoolVar(&f.detach, "detach", false, "start the call and exit 6 once it is a task, printing its id, without waiting for the end")
	fl.StringVar(&f.answers, "answers", "", answersHelp)
	fl.StringVar(&f.protocol, "protocol", "", "MCP `revision` to speak: "+client.ProtocolVersion+" (the Tasks extension) or "+client.LegacyProtocolVersion+" (the experimental tasks of the TypeScript SDK v1, mcp-go and VS Code); the journal keeps it for the later commands (default: find out, "+client.ProtocolVersion+" first)")
	return withUsageHint(cmd)
}

// callArgs wants call's URL and TOOL, and names the one missing.
func callArgs(_ *cobra.Command, args []string) error {
	switch len(args) {
	case 0:
		return errors.New("missing URL and TOOL: mcptasks call URL TOOL [key=value ...], e.g. mcptasks call http://127.0.0.1:8080/mcp greet name=Ada")
	case 1:
		return fmt.Errorf("missing TOOL, the name of the tool to call: mcptasks call %s TOOL [key=value ...]", args[0])
	}
	return nil
}

func runCall(ctx context.Context, f *callFlags, args []string, s *streams) error {
	return explainNotFound(args[0], call(ctx, f, args, s))
}

// explainNotFound adds to an HTTP 404 of the call's first requests (not of
// the polls of a task, which the endpoint made: its path is right) where
// MCP endpoints usually are, when endpoint's path is not /mcp.
func explainNotFound(endpoint string, err error) error {
	var he *client.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusNotFound || strings.HasPrefix(he.Method, "tasks/") {
		return err
	}
	u, perr := url.Parse(endpoint)
	if perr != nil || u.Path == "/mcp" {
		return err
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment = "/mcp", "", "", ""
	return fmt.Errorf("%w\nNo MCP endpoint at that path: it is usually /mcp (mcptasks serve's is); try %s", err, u.Redacted())
}

func call(ctx context.Context, f *callFlags, args []string, s *streams) error {
	endpoint, tool := args[0], args[1]
	if err := checkEndpoint("URL", endpoint); err != nil {
		return err
	}
	if p := f.protocol; p != "" && p != client.ProtocolVersion && p != client.LegacyProtocolVersion {
		return usageError("--protocol %q: want %s or %s", p, client.ProtocolVersion, client.LegacyProtocolVersion)
	}
	arguments, err := parseArguments(f.args, args[2:])
	if err != nil {
		return usageError("%v", err)
	}
	answers, err := parseAnswers(f.answers)
	if err != nil {
		return err
	}
	j, err := f.openJournal()
	if err != nil {
		return err
	}
	// The call is journaled before it is sent: a journal that cannot be
	// read would let it go out unrecorded.
	if _, err := j.List(ctx); err != nil {
		return unreadableJournal(err)
	}
	human := s.outTTY && !f.json
	con := newConsole(ctx, s, human)
	defer con.close()
	out := newOutput(s, human)
	defer out.close()
	fw := &follower{out: out, con: con, answers: answers, hints: func(t *client.Task, journaled bool) (string, string) {
		return f.hint("wait", t.ID, endpoint, journaled), f.flagsHint(endpoint, journaled)
	}}
	o := f.clientOptions(j, f.protocol)
	o.InputHandler = fw.handler() // that of --detach's call, before its task exists
	c := client.New(endpoint, o)

	out.calling(tool)
	if f.detach {
		return fw.detach(c, tool, arguments)
	}
	return fw.run(func(ctx context.Context, opts ...client.WaitOption) (*mcp.CallToolResult, error) {
		return c.CallAndWait(ctx, tool, arguments, opts...)
	})
}

// detach makes the call and, once it is a task, leaves it running (exit
// 6); a call the server answers at once prints its result.
func (f *follower) detach(c *client.Client, tool string, arguments any) error {
	ctx, cancel := context.WithCancel(f.con.ctx)
	defer cancel()
	stopWatch := f.con.watchInterrupt(cancel)
	res, err := c.CallTool(ctx, tool, arguments)
	hit := stopWatch()
	if res != nil && res.Task != nil {
		f.onTask(res.Task, err)
		f.out.status(f.t, f.t.Last())
		return f.out.detached(f.t, f.waitHint)
	}
	var result *mcp.CallToolResult
	if res != nil {
		result = res.Result
	}
	_, err = f.outcome(result, err, hit || interrupted(err))
	return err
}

// hint is the command line of the client command cmd on task id.
func (f *clientFlags) hint(cmd, id, endpoint string, journaled bool) string {
	return "mcptasks " + cmd + f.flagsHint(endpoint, journaled) + " " + idArg(id)
}

// flagsHint are the flags a later command needs to find the task again:
// --journal if it was given, --url if the journal lacks the task.
func (f *clientFlags) flagsHint(endpoint string, journaled bool) string {
	s := ""
	if f.journal != "" {
		s += " --journal " + shellQuote(f.journal)
	}
	if !journaled || f.url != "" {
		s += " --url " + shellQuote(endpoint)
	}
	return s
}

// idArg is a task id as a command-line argument: after "--" if it starts
// with a dash (ids are base64url), so that it is not taken for a flag.
func idArg(id string) string {
	if strings.HasPrefix(id, "-") {
		return "-- " + id
	}
	return id
}
