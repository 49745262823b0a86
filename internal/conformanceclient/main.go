// Command conformanceclient drives the client side of the official MCP
// conformance suite with package client.
//
// The suite runs it as "<command> <server URL>" with the scenario name in
// MCP_CONFORMANCE_SCENARIO, the protocol version in
// MCP_CONFORMANCE_PROTOCOL_VERSION and scenario data (JSON) in
// MCP_CONFORMANCE_CONTEXT. It speaks only 2026-07-28, so scenarios that
// also exist for older revisions must be run with --spec-version
// 2026-07-28:
//
//	go build -o /tmp/conformanceclient ./internal/conformanceclient
//	cd test/conformance
//	npx conformance client --command /tmp/conformanceclient --scenario tools_call --spec-version 2026-07-28
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformanceclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return errors.New("usage: conformanceclient [args...] SERVER_URL (scenario in $MCP_CONFORMANCE_SCENARIO)")
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if v := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"); v != "" && v != client.ProtocolVersion {
		return fmt.Errorf("scenario %s asks for protocol %s; this client speaks only %s (run with --spec-version %s)",
			scenario, v, client.ProtocolVersion, client.ProtocolVersion)
	}
	var sctx scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sctx); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	d := &driver{scenario: scenario, ctx: sctx}
	d.c = client.New(url, &client.Options{
		ClientInfo: &mcp.Implementation{Name: "mcptasks-conformance-client", Version: "0.1.0"},
		Capabilities: &mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
		},
		InputHandler: client.InputHandlerFunc(d.handleInput),
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	f, ok := scenarios[scenario]
	if !ok {
		return fmt.Errorf("unknown scenario %q", scenario)
	}
	return f(ctx, d)
}

// scenarioContext is the data some scenarios pass in
// MCP_CONFORMANCE_CONTEXT.
type scenarioContext struct {
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCalls"`
}

type driver struct {
	scenario string
	ctx      scenarioContext
	c        *client.Client
	// during, if set, runs inside the next InputHandler call, between
	// two MRTR rounds of a call.
	during func(context.Context) error
}

var scenarios = map[string]func(context.Context, *driver) error{
	"tools_call": func(ctx context.Context, d *driver) error {
		if _, err := d.c.ListTools(ctx); err != nil {
			return err
		}
		res, err := d.c.CallTool(ctx, "add_numbers", map[string]any{"a": 5, "b": 3})
		return d.report("add_numbers", res, err)
	},
	"request-metadata": func(ctx context.Context, d *driver) error {
		if _, err := d.c.Discover(ctx); err != nil {
			return err
		}
		_, err := d.c.ListTools(ctx)
		return err
	},
	"sep-2322-client-request-state": func(ctx context.Context, d *driver) error {
		if _, err := d.c.ListTools(ctx); err != nil {
			return err
		}
		// Another call made between the two rounds of echo_state must
		// carry nothing of its MRTR exchange.
		d.during = func(ctx context.Context) error {
			res, err := d.c.CallTool(ctx, "test_mrtr_unrelated", nil)
			return d.report("test_mrtr_unrelated", res, err)
		}
		for _, tool := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"} {
			res, err := d.c.CallTool(ctx, tool, nil)
			if err := d.report(tool, res, err); err != nil {
				return err
			}
		}
		return nil
	},
	"http-standard-headers": func(ctx context.Context, d *driver) error {
		tools, err := d.c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			res, err := d.c.CallTool(ctx, t.Name, map[string]any{})
			if err := d.report(t.Name, res, err); err != nil {
				return err
			}
		}
		resources, err := d.c.ListResources(ctx)
		if err != nil {
			return err
		}
		for _, r := range resources {
			if _, err := d.c.ReadResource(ctx, r.URI); err != nil {
				return err
			}
		}
		prompts, err := d.c.ListPrompts(ctx)
		if err != nil {
			return err
		}
		for _, p := range prompts {
			if _, err := d.c.GetPrompt(ctx, p.Name, nil); err != nil {
				return err
			}
		}
		return nil
	},
	"http-custom-headers": func(ctx context.Context, d *driver) error {
		// tools/list first: the x-mcp-header annotations decide which
		// arguments are mirrored into Mcp-Param-* headers.
		if _, err := d.c.ListTools(ctx); err != nil {
			return err
		}
		for _, call := range d.ctx.ToolCalls {
			res, err := d.c.CallTool(ctx, call.Name, call.Arguments)
			if err := d.report(call.Name, res, err); err != nil {
				return err
			}
		}
		return nil
	},
	"http-invalid-tool-headers": func(ctx context.Context, d *driver) error {
		// ListTools leaves out the tools with invalid annotations; call
		// every tool that remains.
		tools, err := d.c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			res, err := d.c.CallTool(ctx, t.Name, sampleArgs(t.InputSchema))
			if err := d.report(t.Name, res, err); err != nil {
				return err
			}
		}
		return nil
	},
	"json-schema-ref-no-deref": func(ctx context.Context, d *driver) error {
		_, err := d.c.ListTools(ctx)
		return err
	},
	"json-schema-2020-12-preservation": func(ctx context.Context, d *driver) error {
		tools, err := d.c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if t.Name == "json_schema_2020_12_tool" {
				res, err := d.c.CallTool(ctx, "json_schema_echo", map[string]any{"schema": t.InputSchema})
				return d.report("json_schema_echo", res, err)
			}
		}
		return errors.New("the server lists no json_schema_2020_12_tool")
	},
}

// report prints a call's outcome; a task is waited for.
func (d *driver) report(name string, res *client.CallResult, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	r := res.Result
	if res.Task != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// Polling only: the suite skips task notifications, and its
		// scenarios script the requests a client sends.
		if r, err = res.Task.Wait(ctx, client.PollOnly()); err != nil {
			return fmt.Errorf("%s: task %s: %w", name, res.Task.ID, err)
		}
	}
	b, _ := json.Marshal(r)
	fmt.Printf("%s: %s\n", name, b)
	return nil
}

// handleInput accepts every elicitation with a value for each property of
// the requested schema; other requests are refused.
func (d *driver) handleInput(ctx context.Context, key string, req *client.InputRequest) (any, error) {
	if d.during != nil {
		f := d.during
		d.during = nil
		if err := f(ctx); err != nil {
			return nil, err
		}
	}
	if req.Elicit == nil {
		return nil, fmt.Errorf("input %q: %s is not supported", key, req.Method)
	}
	fmt.Fprintf(os.Stderr, "answering %s: %s\n", key, req.Elicit.Message)
	return &mcp.ElicitResult{Action: "accept", Content: sampleValues(req.Elicit.RequestedSchema, false)}, nil
}

// sampleArgs returns arguments with a value for each required property.
func sampleArgs(schema any) map[string]any { return sampleValues(schema, true) }

// sampleValues returns a value of the declared type for the properties of
// an object schema (only the required ones if requiredOnly).
func sampleValues(schema any, requiredOnly bool) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	b, _ := json.Marshal(schema)
	_ = json.Unmarshal(b, &s)
	out := map[string]any{}
	for name, p := range s.Properties {
		if requiredOnly && !contains(s.Required, name) {
			continue
		}
		switch p.Type {
		case "boolean":
			out[name] = true
		case "integer", "number":
			out[name] = 1
		case "object":
			out[name] = map[string]any{}
		case "array":
			out[name] = []any{}
		default:
			out[name] = "conformance"
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
