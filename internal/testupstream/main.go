// Command testupstream is a plain MCP server (go-sdk, no Tasks extension)
// that the tests of "mcptasks proxy" put behind the proxy. It serves over
// stdio, or over Streamable HTTP at http://ADDR/mcp with -http ADDR:
// stateful (up to protocol 2025-11-25), or with -stateless, stateless
// (2026-07-28, as go-sdk's server requires).
//
// Tools:
//
//	slow_echo {text, seconds}  sleeps, then returns text
//	quick_echo {text}          returns text at once
//	ask_name {}                asks the user's name (an input_required round), greets
//	ask_two {}                 asks a name and a colour in one round
//	die {}                     exits the process with status 3 mid-call
//	fail {}                    returns a tool error (isError)
//	rpc_error {}               returns a JSON-RPC error
//
// Questions are asked as multi round-trip input requests (SEP-2322):
// clients on 2026-07-28 get an input_required result, older clients an
// elicitation/create request, which go-sdk's server sends for them. Each
// tool logs what it does to stderr ("slow_echo: start hi", "slow_echo:
// cancelled hi"), which the tests read from the proxy's stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at http://`ADDR`/mcp instead of stdio")
	stateless := flag.Bool("stateless", false, "with -http, serve stateless HTTP, which go-sdk's server needs for protocol 2026-07-28 (stateful HTTP speaks up to 2025-11-25)")
	pageSize := flag.Int("page-size", 2, "tools per tools/list page")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("testupstream: ")

	s := mcp.NewServer(&mcp.Implementation{Name: "testupstream", Version: "1"}, &mcp.ServerOptions{
		Instructions: "A test server.",
		PageSize:     *pageSize,
	})
	addTools(s)
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
			log.Fatal(err)
		}
		return
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless: *stateless,
		// On 2026-07-28 a request's end is its cancellation.
		PropagateRequestCancellation: true,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	log.Printf("listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}

type echoIn struct {
	Text    string  `json:"text" jsonschema:"the text to return"`
	Seconds float64 `json:"seconds,omitempty" jsonschema:"how long to sleep first"`
}

type quickIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// measured is the structured output of the measure tool.
type measured struct {
	Length int `json:"length"`
}

func addTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "slow_echo", Description: "Sleeps for seconds, then returns text."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			log.Printf("slow_echo: start %s", in.Text)
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
			case <-ctx.Done():
				log.Printf("slow_echo: cancelled %s", in.Text)
				return nil, nil, ctx.Err()
			}
			log.Printf("slow_echo: done %s", in.Text)
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "measure", Description: "Returns the length of text as structured output (the tool declares an output schema)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in quickIn) (*mcp.CallToolResult, measured, error) {
			return nil, measured{Length: len(in.Text)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "quick_echo", Description: "Returns text at once."},
		func(_ context.Context, _ *mcp.CallToolRequest, in quickIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_name", Description: "Asks your name and greets you."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
			if !ok {
				log.Printf("ask_name: asking")
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": question("What is your name?", "name")}}, nil, nil
			}
			if r.Action != "accept" {
				return text("No name given (" + r.Action + ")"), nil, nil
			}
			return text(fmt.Sprintf("Hello, %v!", r.Content["name"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_briefly", Description: "Asks your name with elicitation/create (sessions before 2026-07-28), gives up after seconds, and says so."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Seconds float64 `json:"seconds"`
		}) (*mcp.CallToolResult, any, error) {
			ctx, cancel := context.WithTimeout(ctx, time.Duration(in.Seconds*float64(time.Second)))
			defer cancel()
			log.Printf("ask_briefly: asking")
			r, err := req.Session.Elicit(ctx, question("What is your name, quickly?", "name"))
			if err != nil {
				log.Printf("ask_briefly: gave up: %v", err)
				return text("No answer in time"), nil, nil
			}
			return text(fmt.Sprintf("Hello, %v!", r.Content["name"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_two", Description: "Asks a name and a colour at once."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			name, ok1 := req.Params.InputResponses["a_name"].(*mcp.ElicitResult)
			colour, ok2 := req.Params.InputResponses["b_colour"].(*mcp.ElicitResult)
			if !ok1 || !ok2 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"a_name":   question("What is your name?", "name"),
					"b_colour": question("What is your favourite colour?", "colour"),
				}}, nil, nil
			}
			return text(fmt.Sprintf("%v likes %v", name.Content["name"], colour.Content["colour"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "Exits the server with status 3 mid-call."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			log.Printf("die: exiting")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Returns a tool error."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("fail: something broke")
		})
	s.AddTool(&mcp.Tool{Name: "rpc_error", Description: "Returns a JSON-RPC error.", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32000, Message: "the database is locked"}
		})
}

// question is a form elicitation of one required string field.
func question(msg, field string) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Message: msg,
		RequestedSchema: &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{field: {Type: "string"}},
			Required:   []string{field},
		},
	}
}
