// Package tasktools holds the task-backed tools that mcptasks serves by
// default: the Tasks fixtures of the official conformance suite, the
// export_report demo, and archive_logs and link_account, which show
// SEP-2243 parameter headers and URL-mode elicitation.
package tasktools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/mcpserver"
)

// Options tune the tools' pacing, so tests can run them fast.
type Options struct {
	// Step is the length of one unit of simulated work: export_report
	// spends 1.5 Steps querying and 1.5 writing, failing_job one Step.
	// Zero means one second.
	Step time.Duration
	// Second is the length of one of slow_compute's seconds. Zero means
	// one second.
	Second time.Duration
}

// Register adds every tool of the package to s.
func Register(s *mcpserver.Server, opts *Options) error {
	step, second := time.Second, time.Second
	if opts != nil && opts.Step > 0 {
		step = opts.Step
	}
	if opts != nil && opts.Second > 0 {
		second = opts.Second
	}
	if err := addSlowCompute(s, second); err != nil {
		return err
	}
	for _, add := range []func(*mcpserver.Server, time.Duration) error{
		addGreet, addFailingJob, addProtocolErrorJob,
		addConfirmDelete, addMultiInput, addToolWithTask, addExportReport,
		addArchiveLogs, addLinkAccount,
	} {
		if err := add(s, step); err != nil {
			return err
		}
	}
	return nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// confirmSchema is a form asking for one required boolean.
func confirmSchema(prop string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{prop: map[string]any{"type": "boolean"}},
		"required":   []string{prop},
	}
}

// formElicitation is the Requires of the tools that ask the user through a
// form: a client that cannot show one gets -32021 instead of a task.
var formElicitation = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

func addGreet(s *mcpserver.Server, _ time.Duration) error {
	return mcpserver.AddTool(s, &mcp.Tool{Name: "greet", Description: "Say hello (always synchronous)."},
		mcpserver.ToolOptions{Task: mcpserver.TaskNever},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return text("Hello, " + in.Name + "!"), nil, nil
		})
}

type slowIn struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to work"`
	Label   string  `json:"label,omitempty" jsonschema:"a label echoed in the result"`
}

func addSlowCompute(s *mcpserver.Server, second time.Duration) error {
	return mcpserver.AddTool(s, &mcp.Tool{Name: "slow_compute", Description: "Work for the given number of seconds; a task for clients that take one, unless seconds is 0."},
		mcpserver.ToolOptions{
			Decide: func(_ context.Context, args json.RawMessage) mcpserver.TaskMode {
				var in slowIn
				if json.Unmarshal(args, &in) == nil && in.Seconds <= 0 {
					return mcpserver.TaskNever
				}
				return mcpserver.TaskOptional
			},
			Retry: mcpserver.RetryPolicy{Rerun: true},
		},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			d := time.Duration(in.Seconds * float64(second))
			_ = mcpserver.SetStatus(ctx, fmt.Sprintf("Computing %q for %s", in.Label, d))
			if err := sleep(ctx, d); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("Computed %q in %s", in.Label, d)), nil, nil
		})
}

func addFailingJob(s *mcpserver.Server, step time.Duration) error {
	return mcpserver.AddTool(s, &mcp.Tool{Name: "failing_job", Description: "A task that ends with a tool error (isError) after a second."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if err := sleep(ctx, step); err != nil {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("the job failed, as it always does")
		})
}

func addProtocolErrorJob(s *mcpserver.Server, _ time.Duration) error {
	return mcpserver.AddTool(s, &mcp.Tool{Name: "protocol_error_job", Description: "A task that ends failed with a JSON-RPC error."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error while running the job"}
		})
}

type deleteIn struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

func addConfirmDelete(s *mcpserver.Server, _ time.Duration) error {
	return mcpserver.AddTool(s, &mcp.Tool{Name: "confirm_delete", Description: "Ask for confirmation, then (pretend to) delete a file."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired, Requires: formElicitation, Retry: mcpserver.RetryPolicy{Rerun: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
			ans, err := mcpserver.Elicit(ctx, "confirm-delete", &mcp.ElicitParams{
				Message:         fmt.Sprintf("Delete %s?", in.Filename),
				RequestedSchema: confirmSchema("confirm"),
			})
			if err != nil {
				return nil, nil, err
			}
			if ans.Action != "accept" || ans.Content["confirm"] != true {
				return text(fmt.Sprintf("Kept %s", in.Filename)), nil, nil
			}
			return text(fmt.Sprintf("Deleted %s", in.Filename)), nil, nil
		})
}

func addMultiInput(s *mcpserver.Server, _ time.Duration) error {
	form := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":    map[string]any{"type": "string"},
			"confirm": map[string]any{"type": "boolean"},
		},
	}
	return mcpserver.AddTool(s, &mcp.Tool{Name: "multi_input", Description: "Ask two questions at once and report both answers."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired, Requires: formElicitation, Retry: mcpserver.RetryPolicy{Rerun: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ans, err := mcpserver.ElicitAll(ctx, map[string]*mcp.ElicitParams{
				"first":  {Message: "First input", RequestedSchema: form},
				"second": {Message: "Second input", RequestedSchema: form},
			})
			if err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("first=%v second=%v", ans["first"].Content["name"], ans["second"].Content["name"])), nil, nil
		})
}

// userNameKey is the MRTR key test_tool_with_task asks on its first round.
const userNameKey = "user_name"

func addToolWithTask(s *mcpserver.Server, _ time.Duration) error {
	return mcpserver.AddTool(s, &mcp.Tool{Name: "test_tool_with_task", Description: "Ask for a name (an MRTR round), then greet it from a task."},
		mcpserver.ToolOptions{
			Task:     mcpserver.TaskRequired,
			Requires: formElicitation,
			Prepare: func(_ context.Context, req *mcp.CallToolRequest, args json.RawMessage) (json.RawMessage, mcp.Result, error) {
				if r, ok := req.Params.InputResponses[userNameKey].(*mcp.ElicitResult); ok && r.Action == "accept" {
					if name, ok := r.Content["name"].(string); ok && name != "" {
						b, err := json.Marshal(map[string]string{"name": name})
						return b, nil, err
					}
				}
				return nil, mcpserver.InputRequired(mcp.InputRequestMap{userNameKey: &mcp.ElicitParams{
					Message: "What is your name?",
					RequestedSchema: map[string]any{
						"type":       "object",
						"properties": map[string]any{"name": map[string]any{"type": "string"}},
						"required":   []string{"name"},
					},
				}}, ""), nil
			},
		},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Name string `json:"name,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			return text("Hello, " + in.Name + "! Your task is done."), nil, nil
		})
}

type exportIn struct {
	Rows int `json:"rows" jsonschema:"how many rows to export"`
}

func addExportReport(s *mcpserver.Server, step time.Duration) error {
	return mcpserver.AddTool(s, &mcp.Tool{Name: "export_report", Description: "Export N rows to report.csv, asking before it overwrites the file."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired, Requires: formElicitation, Retry: mcpserver.RetryPolicy{Rerun: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in exportIn) (*mcp.CallToolResult, any, error) {
			// The query is a durable step: a re-run of the task (after
			// the answer, a restart or a lost worker) gets its stored
			// row count instead of querying again.
			rows, err := mcpserver.Step(ctx, "query", func(ctx context.Context) (int, error) {
				_ = mcpserver.SetStatus(ctx, "Querying rows")
				if err := sleep(ctx, step*3/2); err != nil {
					return 0, err
				}
				return in.Rows, nil
			})
			if err != nil {
				return nil, nil, err
			}
			ans, err := mcpserver.Elicit(ctx, "confirm-overwrite", &mcp.ElicitParams{
				Message:         fmt.Sprintf("report.csv already exists. Overwrite it with %d rows?", rows),
				RequestedSchema: confirmSchema("overwrite"),
			})
			if err != nil {
				return nil, nil, err
			}
			if ans.Action != "accept" || ans.Content["overwrite"] != true {
				r := text("Export cancelled: report.csv was not overwritten")
				r.IsError = true
				return r, nil, nil
			}
			_ = mcpserver.SetStatus(ctx, "Writing rows")
			if err := sleep(ctx, step*3/2); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("Wrote %d rows to report.csv", rows)), nil, nil
		})
}

// archiveLogsSchema maps region to the Mcp-Param-Region header (SEP-2243),
// so that a gateway can route a call without reading its body. Written
// out: x-mcp-header is not a field of jsonschema.Schema.
var archiveLogsSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"region": {"type": "string", "description": "the region whose logs to archive (default eu); sent in the Mcp-Param-Region header too", "x-mcp-header": "Region"},
		"days": {"type": "integer", "minimum": 0, "description": "how many days of logs to archive, one step each (default 0)"}
	}
}`)

type archiveIn struct {
	Region string `json:"region"`
	Days   int    `json:"days"`
}

// addArchiveLogs adds archive_logs: a task for clients that take one
// unless days is 0. Its name sorts first in tools/list, where the
// conformance suite's http-header-validation scenario looks for a tool to
// call with no arguments from a client without the Tasks extension.
func addArchiveLogs(s *mcpserver.Server, step time.Duration) error {
	return mcpserver.AddTool(s, &mcp.Tool{Name: "archive_logs", Description: "Archive a region's logs, one step per day; the region travels in the Mcp-Param-Region header too.", InputSchema: archiveLogsSchema},
		mcpserver.ToolOptions{
			Decide: func(_ context.Context, args json.RawMessage) mcpserver.TaskMode {
				var in archiveIn
				if json.Unmarshal(args, &in) == nil && in.Days <= 0 {
					return mcpserver.TaskNever
				}
				return mcpserver.TaskOptional
			},
			Retry: mcpserver.RetryPolicy{Rerun: true},
		},
		func(ctx context.Context, _ *mcp.CallToolRequest, in archiveIn) (*mcp.CallToolResult, any, error) {
			if in.Region == "" {
				in.Region = "eu"
			}
			for d := 1; d <= in.Days; d++ {
				_ = mcpserver.SetStatus(ctx, fmt.Sprintf("Archiving day %d of %d in %s", d, in.Days, in.Region))
				if err := sleep(ctx, step); err != nil {
					return nil, nil, err
				}
			}
			return text(fmt.Sprintf("Archived %d days of logs in %s", in.Days, in.Region)), nil, nil
		})
}

type linkIn struct {
	Service string `json:"service" jsonschema:"the service to link, e.g. github"`
}

// addLinkAccount adds link_account, which asks the user to authorize a
// service in the browser: a URL-mode elicitation, so only clients that
// declare elicitation.url get a task.
func addLinkAccount(s *mcpserver.Server, _ time.Duration) error {
	urlElicitation := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	return mcpserver.AddTool(s, &mcp.Tool{Name: "link_account", Description: "Link an account of a service: the user authorizes it at a URL."},
		mcpserver.ToolOptions{Task: mcpserver.TaskRequired, Requires: urlElicitation, Retry: mcpserver.RetryPolicy{Rerun: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in linkIn) (*mcp.CallToolResult, any, error) {
			ans, err := mcpserver.Elicit(ctx, "authorize", &mcp.ElicitParams{
				Mode:          "url",
				Message:       fmt.Sprintf("Authorize access to your %s account", in.Service),
				URL:           "https://auth.example/authorize?service=" + url.QueryEscape(in.Service),
				ElicitationID: "authorize-" + mcpserver.CallFrom(ctx).TaskID(),
			})
			if err != nil {
				return nil, nil, err
			}
			if ans.Action != "accept" {
				return text(fmt.Sprintf("Not linked: the user did not authorize %s", in.Service)), nil, nil
			}
			return text(fmt.Sprintf("Linked your %s account", in.Service)), nil, nil
		})
}
