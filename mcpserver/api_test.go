package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
)

type renderIn struct {
	Name string `json:"name"`
}

type renderOut struct {
	File string `json:"file"`
}

// nameForm asks for one string, "name".
var nameForm = map[string]any{
	"type":       "object",
	"properties": map[string]any{"name": map[string]any{"type": "string"}},
	"required":   []string{"name"},
}

type defaultsIn struct {
	Name     string `json:"name"`
	Greeting string `json:"greeting"`
	Style    struct {
		Case string `json:"case"`
	} `json:"style"`
}

// defaultsSchema has defaults for a property and for one of a property's
// properties.
var defaultsSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":     map[string]any{"type": "string"},
		"greeting": map[string]any{"type": "string", "default": "Hello"},
		"style": map[string]any{"type": "object", "properties": map[string]any{
			"case": map[string]any{"type": "string", "default": "lower"},
		}},
	},
}

// apiTools are tools written as a go-sdk author writes them: zero
// ToolOptions (TaskOptional), typed output, and questions asked with
// Elicit whether the call runs inline or as a task.
func apiTools(cancelled chan<- error) func(*mcpserver.Server) error {
	return func(s *mcpserver.Server) error {
		if err := mcpserver.AddTool(s, &mcp.Tool{Name: "render"}, mcpserver.ToolOptions{},
			func(ctx context.Context, req *mcp.CallToolRequest, in renderIn) (*mcp.CallToolResult, renderOut, error) {
				return nil, renderOut{File: in.Name + ".mp4"}, nil
			}); err != nil {
			return err
		}
		badSchema := map[string]any{
			"type":       "object",
			"properties": map[string]any{"file": map[string]any{"type": "string"}},
			"required":   []string{"file"},
		}
		if err := mcpserver.AddTool(s, &mcp.Tool{Name: "bad_output", OutputSchema: badSchema}, mcpserver.ToolOptions{},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, map[string]any, error) {
				return nil, map[string]any{"file": 42}, nil
			}); err != nil {
			return err
		}
		if err := mcpserver.AddTool(s, &mcp.Tool{Name: "ask_twice"}, mcpserver.ToolOptions{},
			func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				first, err := mcpserver.Elicit(ctx, "first", &mcp.ElicitParams{Message: "First name?", RequestedSchema: nameForm})
				if err != nil {
					return nil, nil, err
				}
				last, err := mcpserver.Elicit(ctx, "last", &mcp.ElicitParams{Message: "Last name?", RequestedSchema: nameForm})
				if err != nil {
					return nil, nil, err
				}
				c := mcpserver.CallFrom(ctx)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%v %v (task: %v, version: %v)",
					first.Content["name"], last.Content["name"], c.InTask(), req.Params.Meta[mcp.MetaKeyProtocolVersion])}}}, nil, nil
			}); err != nil {
			return err
		}
		if err := mcpserver.AddTool(s, &mcp.Tool{Name: "greet_defaults", InputSchema: defaultsSchema}, mcpserver.ToolOptions{},
			func(_ context.Context, _ *mcp.CallToolRequest, in defaultsIn) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Greeting + " " + in.Name + " (" + in.Style.Case + ")"}}}, nil, nil
			}); err != nil {
			return err
		}
		if err := mcpserver.AddTool(s, &mcp.Tool{Name: "count_args"}, mcpserver.ToolOptions{},
			func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
				in["seen"] = true // a nil map would panic
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d arguments", len(in)-1)}}}, nil, nil
			}); err != nil {
			return err
		}
		if err := mcpserver.AddTool(s, &mcp.Tool{Name: "echo_meta"}, mcpserver.ToolOptions{},
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				b, err := json.Marshal(req.Params.Meta)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, err
			}); err != nil {
			return err
		}
		return mcpserver.AddTool(s, &mcp.Tool{Name: "wait_cancel"}, mcpserver.ToolOptions{Task: mcpserver.TaskRequired},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				_ = mcpserver.SetStatus(ctx, "waiting")
				<-ctx.Done()
				cancelled <- context.Cause(ctx)
				return nil, nil, ctx.Err()
			})
	}
}

// call sends tools/call of tool with the _meta macro meta, the arguments
// args and the extra params, and returns the JSON-RPC reply.
func (c *testClient) call(t *testing.T, meta, tool, args, extra string) *rpcReply {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + meta + `,"name":"` + tool + `","arguments":` + args + extra + `}}`
	return c.rpc(t, "", "tools/call", tool, body).reply(t)
}

// TestAddTool_TypedOutput: a go-sdk-shaped handler's output is validated
// against the inferred (or given) output schema, becomes
// structuredContent, and fills content when the handler gives none,
// inline and in a task alike; an output that does not match is refused.
func TestAddTool_TypedOutput(t *testing.T) {
	c := startServer(t, serverConfig{register: apiTools(nil)})

	list := c.rpc(t, "", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":$META}}`).reply(t)
	var tools struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(list.Result, &tools); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "render" && !jsonSame(tool.OutputSchema, json.RawMessage(`{"type":"object","properties":{"file":{"type":"string"}},"required":["file"],"additionalProperties":false}`)) {
			t.Errorf("render's outputSchema = %s, want the schema of renderOut", tool.OutputSchema)
		}
	}

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META_NOTASKS,"name":"render","arguments":{"name":"intro"}}}`
	rep := c.rpc(t, "", "tools/call", "render", body).reply(t)
	var res struct {
		Content           []map[string]any `json:"content"`
		StructuredContent map[string]any   `json:"structuredContent"`
	}
	if err := json.Unmarshal(rep.Result, &res); err != nil || res.StructuredContent["file"] != "intro.mp4" ||
		len(res.Content) != 1 || res.Content[0]["text"] != `{"file":"intro.mp4"}` {
		t.Errorf("inline render = %s (%v), want structuredContent and its JSON as text content", rep.raw, err)
	}

	bad := c.call(t, "$META_NOTASKS", "bad_output", "{}", "")
	if bad.Error == nil || bad.Error.Code != -32603 || !strings.Contains(bad.Error.Message, "output schema") {
		t.Errorf("inline bad_output = %s, want -32603 naming the output schema", bad.raw)
	}
	var created taskView
	if err := json.Unmarshal(c.call(t, "$META", "bad_output", "{}", "").Result, &created); err != nil || created.TaskID == "" {
		t.Fatalf("bad_output with the extension made no task: %v", err)
	}
	got := c.waitStatus(t, "", created.TaskID, "failed", nil)
	if !strings.Contains(string(got), "output schema") {
		t.Errorf("failed task = %s, want an error naming the output schema", got)
	}
}

// TestAddTool_ZeroOptions: the zero ToolOptions is TaskOptional: a task
// for a client that declares the extension, inline for the others.
func TestAddTool_ZeroOptions(t *testing.T) {
	c := startServer(t, serverConfig{register: apiTools(nil)})
	var v taskView
	if err := json.Unmarshal(c.call(t, "$META", "render", `{"name":"intro"}`, "").Result, &v); err != nil || v.ResultType != "task" {
		t.Fatalf("render with the extension: resultType %q (%v), want task", v.ResultType, err)
	}
	done := c.waitStatus(t, "", v.TaskID, "completed", nil)
	if !strings.Contains(string(done), `"structuredContent":{"file":"intro.mp4"}`) {
		t.Errorf("task result = %s, want the structured output", done)
	}
	v = taskView{}
	if err := json.Unmarshal(c.call(t, "$META_NOTASKS", "render", `{"name":"intro"}`, "").Result, &v); err != nil || v.ResultType != "complete" {
		t.Errorf("render without the extension: resultType %q (%v), want complete", v.ResultType, err)
	}
}

// TestAddTool_Defaults: the handler's input has the schema's defaults
// for the properties the arguments leave out, at any depth, inline and in
// a task alike; given values are kept.
func TestAddTool_Defaults(t *testing.T) {
	c := startServer(t, serverConfig{register: apiTools(nil)})
	for _, tc := range []struct{ args, want string }{
		{`{"name":"Ann","style":{}}`, "Hello Ann (lower)"},
		{`{"name":"Ann","greeting":"Hi","style":{"case":"upper"}}`, "Hi Ann (upper)"},
		{`{"name":"Ann"}`, "Hello Ann (lower)"},
	} {
		inline := c.call(t, "$META_NOTASKS", "greet_defaults", tc.args, "")
		if !strings.Contains(string(inline.Result), `"text":"`+tc.want+`"`) {
			t.Errorf("inline greet_defaults %s = %s, want %q", tc.args, inline.raw, tc.want)
		}
		var v taskView
		if err := json.Unmarshal(c.call(t, "$META", "greet_defaults", tc.args, "").Result, &v); err != nil || v.TaskID == "" {
			t.Fatalf("greet_defaults with the extension made no task: %v", err)
		}
		if done := c.waitStatus(t, "", v.TaskID, "completed", nil); !strings.Contains(string(done), `"text":"`+tc.want+`"`) {
			t.Errorf("task greet_defaults %s = %s, want %q", tc.args, done, tc.want)
		}
	}
}

// TestAddTool_NoArguments: a call without arguments, or with null ones,
// gives a map input an empty map, as go-sdk does, inline and in a task.
func TestAddTool_NoArguments(t *testing.T) {
	c := startServer(t, serverConfig{register: apiTools(nil)})
	for _, args := range []string{``, `,"arguments":null`, `,"arguments":{}`, `,"arguments":{"a":1}`} {
		want := "0 arguments"
		if strings.Contains(args, `"a"`) {
			want = "1 arguments"
		}
		for _, meta := range []string{"$META_NOTASKS", "$META"} {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + meta + `,"name":"count_args"` + args + `}}`
			rep := c.rpc(t, "", "tools/call", "count_args", body).reply(t)
			got := string(rep.Result)
			var v taskView
			if json.Unmarshal(rep.Result, &v) == nil && v.TaskID != "" {
				got = string(c.waitStatus(t, "", v.TaskID, "completed", nil))
			}
			if !strings.Contains(got, `"text":"`+want+`"`) {
				t.Errorf("count_args%s with %s = %s, want %q", args, meta, rep.raw, want)
			}
		}
	}
}

// TestTaskMeta: a task's handler finds the _meta of the request that
// created it in its request, on both routes and in both eras, as an inline
// handler does: the members the client sent (clientInfo, its own keys),
// the protocol version and the client capabilities, but not the progress
// token, which a task's run cannot use. A _meta too large to keep is
// refused with -32602 naming it.
func TestTaskMeta(t *testing.T) {
	const extra = `"com.example/tenant":"acme <&>","progressToken":"p1"`
	meta := strings.TrimSuffix(expandMeta("$META"), "}") + "," + extra + "}"
	type got struct {
		Tenant   string          `json:"com.example/tenant"`
		Progress json.RawMessage `json:"progressToken"`
		Version  string          `json:"io.modelcontextprotocol/protocolVersion"`
		Info     json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
		Caps     json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	}
	check := func(t *testing.T, text, version string, info bool) {
		t.Helper()
		var g got
		if err := json.Unmarshal([]byte(text), &g); err != nil {
			t.Fatalf("the handler's _meta: %v: %s", err, text)
		}
		if g.Tenant != "acme <&>" || g.Progress != nil || g.Version != version || (g.Info != nil) != info || g.Caps == nil {
			t.Errorf("the handler's _meta = %s; want the tenant, version %s, the capabilities, clientInfo %v, no progressToken", text, version, info)
		}
	}
	resultText := func(t *testing.T, result json.RawMessage) string {
		t.Helper()
		var r struct {
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatalf("result: %v: %s", err, result)
		}
		if len(r.Result.Content) == 1 {
			return r.Result.Content[0].Text
		}
		if len(r.Content) == 1 {
			return r.Content[0].Text
		}
		t.Fatalf("result without one text: %s", result)
		return ""
	}
	for _, route := range routes {
		t.Run(route.name, func(t *testing.T) {
			c := startServer(t, serverConfig{register: apiTools(nil), noFastPath: route.noFastPath})
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + meta + `,"name":"echo_meta"}}`
			rep := c.rpc(t, "", "tools/call", "echo_meta", body).reply(t)
			var v taskView
			if json.Unmarshal(rep.Result, &v) != nil || v.TaskID == "" {
				t.Fatalf("tools/call: %s", rep.raw)
			}
			check(t, resultText(t, c.waitStatus(t, "", v.TaskID, "completed", nil)), "2026-07-28", true)

			big := strings.TrimSuffix(expandMeta("$META"), "}") + `,"com.example/blob":"` + strings.Repeat("x", mcpserver.MaxTaskMetaBytes) + `"}`
			body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":` + big + `,"name":"echo_meta"}}`
			if rep := c.rpc(t, "", "tools/call", "echo_meta", body).reply(t); rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, "params._meta") {
				t.Errorf("a _meta over MaxTaskMetaBytes: %s, want -32602 naming params._meta", rep.raw)
			}
			bigCaps := strings.Replace(expandMeta("$META"), `"elicitation":{"form":{}}`, `"elicitation":{"form":{}},"experimental":{"blob":"`+strings.Repeat("x", mcpserver.MaxTaskMetaBytes)+`"}`, 1)
			body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":` + bigCaps + `,"name":"echo_meta"}}`
			if rep := c.rpc(t, "", "tools/call", "echo_meta", body).reply(t); rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, "clientCapabilities") {
				t.Errorf("client capabilities over MaxTaskMetaBytes: %s, want -32602 naming them", rep.raw)
			}
		})
	}
	t.Run("2025-11-25", func(t *testing.T) {
		c := startServer(t, serverConfig{register: apiTools(nil), tokens: mcpserver.Tokens{"a-token": "alice"}})
		s := initialize(t, c, "a-token")
		id := s.callTask(`{"_meta":{` + extra + `},"name":"echo_meta","task":{}}`)
		rep := s.call("tasks/result", `{"taskId":"`+id+`"}`)
		if rep.Error != nil {
			t.Fatalf("tasks/result: %s", rep.raw)
		}
		check(t, resultText(t, rep.Result), "2025-11-25", false)
	})
}

// mrtrRound is what the tests read of an input_required result.
type mrtrRound struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
	Content       []map[string]any           `json:"content"`
	IsError       bool                       `json:"isError"`
}

// TestElicit_Inline: Elicit in a call that runs inline is an MRTR round
// per question; the answers of earlier rounds come back in the signed
// requestState, and a forged one is refused. A client without
// elicitation is not asked.
func TestElicit_Inline(t *testing.T) {
	c := startServer(t, serverConfig{register: apiTools(nil)})
	round := func(extra string) (*rpcReply, mrtrRound) {
		t.Helper()
		rep := c.call(t, "$META_ELICIT", "ask_twice", "{}", extra)
		var r mrtrRound
		if rep.Error == nil {
			if err := json.Unmarshal(rep.Result, &r); err != nil {
				t.Fatal(err)
			}
		}
		return rep, r
	}
	_, r1 := round("")
	if r1.ResultType != "input_required" || r1.InputRequests["first"] == nil || r1.RequestState == "" {
		t.Fatalf("first call = %+v, want a round asking first, with a requestState", r1)
	}
	answer := func(key, name, state string) string {
		return fmt.Sprintf(`,"inputResponses":{%q:{"action":"accept","content":{"name":%q}}},"requestState":%q`, key, name, state)
	}
	_, r2 := round(answer("first", "Ada", r1.RequestState))
	if r2.ResultType != "input_required" || r2.InputRequests["last"] == nil || len(r2.InputRequests) != 1 {
		t.Fatalf("second call = %+v, want a round asking last only", r2)
	}
	_, r3 := round(answer("last", "Lovelace", r2.RequestState))
	if r3.ResultType != "complete" || len(r3.Content) != 1 || r3.Content[0]["text"] != "Ada Lovelace (task: false, version: 2026-07-28)" {
		t.Errorf("third call = %+v, want the greeting from both answers", r3)
	}

	// The first answer, forged into a requestState: refused.
	forged := r2.RequestState[:len(r2.RequestState)-2] + "AA"
	if rep, _ := round(answer("last", "Lovelace", forged)); rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, "requestState") {
		t.Errorf("forged requestState: %s, want -32602 naming requestState", rep.raw)
	}
	// A bad answer: -32602 naming the key.
	if rep, _ := round(`,"inputResponses":{"first":{"action":"accept","content":{"name":7}}}`); rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, `"first"`) {
		t.Errorf("bad answer: %s, want -32602 naming first", rep.raw)
	}
	// No elicitation declared: nothing is asked; the handler gets
	// ErrElicitationNotDeclared and returns it, and the call gets -32021
	// naming the capability.
	if rep := c.call(t, "$META_NOTASKS", "ask_twice", "{}", ""); rep.Error == nil || rep.Error.Code != -32021 || !strings.Contains(string(rep.Error.Data), `"elicitation"`) {
		t.Errorf("without elicitation: %s, want -32021 naming elicitation", rep.raw)
	}
}

// TestElicit_Task: the same handler, called as a task, asks through the
// task's input requests.
func TestElicit_Task(t *testing.T) {
	c := startServer(t, serverConfig{register: apiTools(nil)})
	var v taskView
	if err := json.Unmarshal(c.call(t, "$META", "ask_twice", "{}", "").Result, &v); err != nil || v.ResultType != "task" {
		t.Fatalf("ask_twice with the extension: %q (%v), want a task", v.ResultType, err)
	}
	for _, a := range []struct{ key, name string }{{"first", "Grace"}, {"last", "Hopper"}} {
		got := c.waitStatus(t, "", v.TaskID, "input_required", nil)
		if !strings.Contains(string(got), `"`+a.key+`":{"method":"elicitation/create"`) {
			t.Fatalf("input_required task = %s, want the question %s", got, a.key)
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/update","params":{"_meta":$META,"taskId":%q,"inputResponses":{%q:{"action":"accept","content":{"name":%q}}}}}`, v.TaskID, a.key, a.name)
		if rep := c.rpc(t, "", "tasks/update", v.TaskID, body).reply(t); rep.Error != nil {
			t.Fatalf("tasks/update: %s", rep.raw)
		}
	}
	done := c.waitStatus(t, "", v.TaskID, "completed", nil)
	if !strings.Contains(string(done), "Grace Hopper (task: true, version: 2026-07-28)") {
		t.Errorf("task result = %s", done)
	}
}

// TestCancelCause: a handler tells a user's cancel from a draining server
// by the cause of its ctx.
func TestCancelCause(t *testing.T) {
	cancelled := make(chan error, 1)
	c := startServer(t, serverConfig{register: apiTools(cancelled)})
	var v taskView
	if err := json.Unmarshal(c.call(t, "$META", "wait_cancel", "{}", "").Result, &v); err != nil || v.TaskID == "" {
		t.Fatalf("wait_cancel made no task: %v", err)
	}
	waiting := "waiting"
	c.waitStatus(t, "", v.TaskID, "working", &waiting)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/cancel","params":{"_meta":$META,"taskId":%q}}`, v.TaskID)
	if rep := c.rpc(t, "", "tasks/cancel", v.TaskID, body).reply(t); rep.Error != nil {
		t.Fatalf("tasks/cancel: %s", rep.raw)
	}
	if cause := <-cancelled; !errors.Is(cause, mcpserver.ErrCancelRequested) || errors.Is(cause, mcpserver.ErrShutdown) {
		t.Errorf("handler's ctx cause = %v, want ErrCancelRequested", cause)
	}
	c.waitStatus(t, "", v.TaskID, "cancelled", nil)
}

// TestLifecycle: AddTool refuses a duplicate name and a tool after Start;
// Start needs a store and runs once; the handlers answer 503 until Start,
// and readiness ends at Shutdown.
func TestLifecycle(t *testing.T) {
	noop := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, nil
	}
	impl := &mcp.Implementation{Name: "lifecycle", Version: "1"}
	if err := mcpserver.New(impl, nil).Start(t.Context()); err == nil || !strings.Contains(err.Error(), "Options.Store") {
		t.Errorf("Start without a store: %v, want an error naming Options.Store", err)
	}

	srv := mcpserver.New(impl, &mcpserver.Options{Store: memory.New()})
	if err := mcpserver.AddTool(srv, &mcp.Tool{Name: "a"}, mcpserver.ToolOptions{}, noop); err != nil {
		t.Fatal(err)
	}
	if err := mcpserver.AddTool(srv, &mcp.Tool{Name: "a"}, mcpserver.ToolOptions{}, noop); !errors.Is(err, mcpserver.ErrDuplicateTool) {
		t.Errorf("AddTool of a duplicate: %v, want ErrDuplicateTool", err)
	}
	if err := mcpserver.AddTool(srv, &mcp.Tool{Name: "b", InputSchema: map[string]any{"type": "string"}}, mcpserver.ToolOptions{}, noop); err == nil {
		t.Error("AddTool of a tool go-sdk refuses (input schema not an object): no error")
	}
	mux := srv.Mux()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before Start: %d, want 503", code)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", strings.NewReader(`{}`)))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "not started") {
		t.Errorf("/mcp before Start: %d %s, want 503 saying it has not started", rec.Code, rec.Body)
	}

	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); !errors.Is(err, mcpserver.ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	if err := mcpserver.AddTool(srv, &mcp.Tool{Name: "c"}, mcpserver.ToolOptions{}, noop); !errors.Is(err, mcpserver.ErrStarted) {
		t.Errorf("AddTool after Start: %v, want ErrStarted", err)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz after Start: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "mcptasks_queue_depth 0") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d, want the task and runtime metrics:\n%s", code, body)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("/readyz after Shutdown: %d %q, want 503 draining", code, body)
	}
}

// TestMux_OriginChecks: /mcp and /metrics, whatever the method, refuse a
// browser of another origin and a request under a rebound Host name with
// HTTP 403, and serve programs (before, /metrics answered a DNS-rebinding
// page, and a GET or OPTIONS of /mcp got go-sdk's 405 instead of 403);
// /healthz and /readyz, which tell nothing more than up and ready, answer
// anyone, as probes through proxies need.
func TestMux_OriginChecks(t *testing.T) {
	t.Parallel()
	srv := mcpserver.New(&mcp.Implementation{Name: "t", Version: "0"}, &mcpserver.Options{Store: memory.New(), Engine: &engine.Options{Workers: -1}})
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	hs := httptest.NewServer(srv.Mux()) // a loopback listener
	t.Cleanup(hs.Close)
	for _, route := range []struct {
		method, path string
		open         bool // answers anyone
	}{
		{"GET", "/healthz", true}, {"GET", "/readyz", true}, {"GET", "/metrics", false}, {"GET", "/mcp", false}, {"OPTIONS", "/mcp", false}, {"HEAD", "/mcp", false},
	} {
		for _, tc := range []struct {
			name   string
			header map[string]string
			host   string
			want   int
		}{
			{"program", nil, "", 0},
			{"same-origin page", map[string]string{"Sec-Fetch-Site": "same-origin"}, "", 0},
			{"another origin", map[string]string{"Origin": "https://evil.example"}, "", http.StatusForbidden},
			{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", http.StatusForbidden},
			{"rebound Host", nil, "evil.example", http.StatusForbidden},
		} {
			req, _ := http.NewRequestWithContext(t.Context(), route.method, hs.URL+route.path, nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want403 := tc.want == http.StatusForbidden && !route.open
			if refused := resp.StatusCode == http.StatusForbidden; refused != want403 {
				t.Errorf("%s %s, %s: HTTP %d; want 403: %v", route.method, route.path, tc.name, resp.StatusCode, want403)
			}
		}
	}
}

// unpingable is a store whose Ping fails with an error that names what a
// driver's error names: the database, its user and address.
type unpingable struct{ store.Store }

func (unpingable) Ping(context.Context) error {
	return errors.New("failed to connect to `user=app database=tasks`: 10.0.0.7:5432")
}

// TestReadyz_StoreErrorNotSent: /readyz, which answers anyone, says the
// store is unavailable without the store's error.
func TestReadyz_StoreErrorNotSent(t *testing.T) {
	srv := mcpserver.New(&mcp.Implementation{Name: "t", Version: "0"}, &mcpserver.Options{Store: unpingable{memory.New()}, Engine: &engine.Options{Workers: -1}})
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	rec := httptest.NewRecorder()
	srv.Mux().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if body := rec.Body.String(); rec.Code != http.StatusServiceUnavailable || body != "store unavailable\n" {
		t.Errorf("/readyz with the store down: %d %q, want 503 \"store unavailable\" and nothing of the error", rec.Code, body)
	}
}
