package mcpserver

//lint:file-ignore SA1019 sampling and roots are deprecated features, but still input a task may ask for

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeInputRequest gives the bytes go-sdk's InputRequestMap gives, for
// every kind of request and for text that encoding/json escapes.
func TestEncodeInputRequest(t *testing.T) {
	odd := "Delete <a & b>? \u2028 \"é\"\n"
	schema := &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"z": {Type: "boolean", Description: odd}, "a": {Type: "string", Enum: []any{"x", 1.5}}},
		Required:   []string{"z"},
	}
	tests := []struct {
		name string
		req  mcp.InputRequest
	}{
		{"form, mode inferred", &mcp.ElicitParams{Message: odd, RequestedSchema: schema}},
		{"form, mode set", &mcp.ElicitParams{Mode: "form", Message: "m", RequestedSchema: map[string]any{"type": "object", "b": 1, "a": odd}}},
		{"url, mode inferred", &mcp.ElicitParams{Message: "open", URL: "https://x.example/a?b=1&c=<2>", ElicitationID: "e1"}},
		{"url, mode set", &mcp.ElicitParams{Mode: "url", Message: "open", URL: "https://x.example/", ElicitationID: "e2", Meta: mcp.Meta{"k": odd}}},
		{"sampling", &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: odd}}}, SystemPrompt: odd}},
		{"sampling with tools", &mcp.CreateMessageWithToolsParams{MaxTokens: 5, Messages: []*mcp.SamplingMessageV2{{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}}}},
		{"roots", &mcp.ListRootsParams{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := json.Marshal(mcp.InputRequestMap{"k": tt.req})
			if err != nil {
				t.Fatalf("go-sdk: %v", err)
			}
			var want map[string]json.RawMessage
			if err := json.Unmarshal(m, &want); err != nil {
				t.Fatal(err)
			}
			got, err := encodeInputRequest(tt.req)
			if err != nil {
				t.Fatalf("encodeInputRequest: %v", err)
			}
			if !bytes.Equal(got, want["k"]) {
				t.Errorf("encodeInputRequest:\n got %s\nwant %s", got, want["k"])
			}
		})
	}
	if _, err := encodeInputRequest(nil); err == nil {
		t.Error("encodeInputRequest(nil) succeeded, want an error")
	}
	// A schema that refers to itself is an error, not a crash.
	cycle := map[string]any{}
	cycle["self"] = cycle
	if _, err := encodeInputRequest(&mcp.ElicitParams{Message: "m", RequestedSchema: cycle}); err == nil {
		t.Error("encodeInputRequest of a cyclic schema succeeded, want an error")
	}
}
