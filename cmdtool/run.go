package cmdtool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
)

// inheritedEnv are the variables a command gets from the server's
// environment, beyond those a tool names in inherit_env. The list is short
// on purpose: the server's environment may hold secrets (database URLs,
// tokens) that a command must be given explicitly.
var inheritedEnv = []string{"PATH", "HOME", "LANG"}

// Register adds every tool of cfg to s as a task-capable tool. Tool names
// must not clash with task tools already added to s.
func Register(s *mcpserver.Server, cfg *Config) error {
	inlineConfirm := map[string]*Tool{}
	for _, t := range cfg.Tools {
		if t.c == nil {
			return fmt.Errorf("cmdtool: tool %q was not loaded with cmdtool.Load", t.Name)
		}
		// A command's running process cannot wait for an answer elsewhere:
		// its handler holds while it asks.
		opts := mcpserver.ToolOptions{Task: t.Task, TTL: t.TTL, PollInterval: t.PollInterval, Retry: t.Retry, Hold: true}
		if t.c.confirm != nil {
			opts.Prepare = t.prepare
			if t.Task != mcpserver.TaskRequired {
				inlineConfirm[t.Name] = t
			}
		}
		mt := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
		err := mcpserver.AddTool(s, mt, opts, func(ctx context.Context, _ *mcp.CallToolRequest, raw json.RawMessage) (*mcp.CallToolResult, any, error) {
			res, err := t.handle(ctx, mcpserver.CallFrom(ctx).Run(), raw)
			return res, nil, err
		})
		switch {
		case errors.Is(err, mcpserver.ErrDuplicateTool):
			return fmt.Errorf("%s:%d: name: the server already has a tool named %q", cfg.File, t.Line, t.Name)
		case err != nil:
			return fmt.Errorf("cmdtool: %w", err)
		}
	}
	if len(inlineConfirm) > 0 {
		s.MCPServer().AddReceivingMiddleware(confirmInline(inlineConfirm))
	}
	return nil
}

// handle runs the command for one call, inside a task or inline. The
// arguments are checked against the schema again: a task may run under
// another tools.yaml than the one it was created under (a schema tightened
// since, a replica with another file), and must not run with arguments
// that the schema now refuses.
func (t *Tool) handle(ctx context.Context, run *engine.Run, raw json.RawMessage) (*mcp.CallToolResult, error) {
	if err := t.validate(raw); err != nil {
		return nil, err
	}
	args, err := t.args(raw)
	if err != nil {
		return nil, err
	}
	inv, err := t.invocation(args, run)
	if err != nil {
		return nil, err
	}
	if run.InTask() {
		pump := startStatusPump(ctx, statusEvery, run.SetStatus)
		defer pump.stop()
		pump.offer("Running " + filepath.Base(t.Argv[0]))
		inv.onLine = progressFilter(t.Progress, pump.offer)
	}
	o, err := execute(ctx, inv)
	if err != nil {
		return toolError(fmt.Sprintf("cannot run %s: %v", t.Argv[0], err)), nil
	}
	if o.stopped {
		// The task was cancelled, its lease lost, or the engine shut
		// down: the engine decides what becomes of the task.
		return nil, context.Cause(ctx)
	}
	return t.result(o), nil
}

// args decodes the call's arguments, numbers kept exact, and fills in the
// schema's defaults.
func (t *Tool) args(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&args); err != nil {
			return nil, fmt.Errorf("invalid arguments: %w", err)
		}
	}
	if err := t.c.schema.ApplyDefaults(&args); err != nil {
		return nil, fmt.Errorf("invalid arguments: %w", err)
	}
	return args, nil
}

// invocation fills the tool's placeholders from args.
func (t *Tool) invocation(args map[string]any, run *engine.Run) (*invocation, error) {
	inv := &invocation{
		path:        t.c.program,
		args:        []string{t.Argv[0]},
		dir:         t.c.baseDir,
		timeout:     t.Timeout,
		grace:       t.Grace,
		outputLimit: t.OutputLimit,
	}
	for _, a := range t.c.argv {
		inv.args = append(inv.args, expandArg(a, args)...)
	}
	if t.c.dir != nil {
		if d, ok := t.c.dir.expand(args); ok {
			inv.dir = resolvePath(t.c.baseDir, d)
		}
	}
	env, err := t.env(args, run)
	if err != nil {
		return nil, err
	}
	inv.env = env
	return inv, nil
}

// expandArg expands one argv entry. An entry that is exactly one
// placeholder becomes one entry per element of an array value; an entry
// naming an absent argument is left out.
func expandArg(a template, args map[string]any) []string {
	if name, ok := a.whole(); ok {
		switch v := args[name].(type) {
		case nil:
			return nil
		case []any:
			out := make([]string, 0, len(v))
			for _, e := range v {
				out = append(out, format(e))
			}
			return out
		default:
			return []string{format(v)}
		}
	}
	if s, ok := a.expand(args); ok {
		return []string{s}
	}
	return nil
}

// env builds the command's environment, later entries taking precedence:
// the inherited variables, MCPTASKS_TASK_ID and MCPTASKS_ATTEMPT, the
// MCPTASKS_ARG_* variables, then the tool's env. An argument that env_args
// would pass in the variable of a property of another name (target_dir
// for target-dir), sent or not, and two undeclared arguments that share a
// variable, are an error: an argument the schema does not check must not
// fill the variable of one it does.
func (t *Tool) env(args map[string]any, run *engine.Run) ([]string, error) {
	env := []string{} // never nil: exec takes a nil Env as the whole of the server's
	for _, k := range append(slices.Clone(inheritedEnv), t.InheritEnv...) {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if run.InTask() {
		env = append(env, "MCPTASKS_TASK_ID="+run.ID(), "MCPTASKS_ATTEMPT="+strconv.Itoa(run.Attempt()))
	}
	if t.EnvArgs {
		names := make([]string, 0, len(args))
		for k := range args {
			names = append(names, k)
		}
		slices.Sort(names)
		byVar := make(map[string]string, len(names))
		for _, k := range names {
			if args[k] == nil {
				continue
			}
			v := ArgEnvName(k)
			if owner, ok := t.c.argVars[v]; ok && owner != k {
				return nil, fmt.Errorf("invalid arguments: %q would be passed in %s, the variable of property %q (env_args); send %q instead", k, v, owner, owner)
			}
			if other, clash := byVar[v]; clash {
				return nil, fmt.Errorf("invalid arguments: %q and %q would both be passed in %s (env_args); send only one of them", other, k, v)
			}
			byVar[v] = k
			env = append(env, v+"="+format(args[k]))
		}
	}
	for _, e := range t.c.env {
		if v, ok := e.value.expand(args); ok {
			env = append(env, e.name+"="+v)
		}
	}
	return env, nil
}

// ArgEnvName returns the variable that env_args passes the argument name
// in: MCPTASKS_ARG_ and the name upper-cased, each character other than a
// letter, digit or "_" replaced by "_".
func ArgEnvName(name string) string {
	return "MCPTASKS_ARG_" + strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return r - 'a' + 'A'
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_':
			return r
		}
		return '_'
	}, name)
}

func resolvePath(base, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

// result turns an outcome into the tool result: stdout on success; on a
// failure, a summary with the tail of stderr first, then stdout.
func (t *Tool) result(o *outcome) *mcp.CallToolResult {
	stdout := string(o.stdout)
	if o.stdoutOmitted > 0 {
		stdout += fmt.Sprintf("\n[output truncated: %d bytes omitted]", o.stdoutOmitted)
	}
	if o.ioIncomplete {
		stdout += "\n[output may be incomplete: a process that left the command's process group kept it open]"
	}
	if !o.timedOut && o.state.Success() {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: stdout}}}
	}
	var b strings.Builder
	switch ws, _ := o.state.Sys().(syscall.WaitStatus); {
	case o.timedOut:
		fmt.Fprintf(&b, "%s timed out after %s and was stopped", t.Argv[0], t.Timeout)
	case ws.Signaled():
		fmt.Fprintf(&b, "%s was killed by signal %d (%s)", t.Argv[0], ws.Signal(), ws.Signal())
	default:
		fmt.Fprintf(&b, "%s failed with exit code %d", t.Argv[0], o.state.ExitCode())
	}
	if len(o.stderrTail) > 0 {
		b.WriteString("\n\nstderr")
		if o.stderrOmitted > 0 {
			fmt.Fprintf(&b, " (last %d bytes; %d earlier bytes omitted)", len(o.stderrTail), o.stderrOmitted)
		}
		b.WriteString(":\n")
		b.Write(o.stderrTail)
	}
	res := toolError(b.String())
	if stdout != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: "stdout:\n" + stdout})
	}
	return res
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
