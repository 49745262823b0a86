package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/task"
)

func TestWriteContent(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	writeContent(&out, &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "line one"},
		&mcp.TextContent{Text: "line two\n"},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte("12345")},
		&mcp.ResourceLink{URI: "file:///r.csv", Name: "r.csv"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", Text: "hello"}},
	}})
	want := "line one\nline two\n[image image/png, 5 bytes]\n[resource file:///r.csv r.csv]\n[resource file:///a.txt]\nhello\n"
	if out.String() != want {
		t.Errorf("content:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	writeContent(&out, &mcp.CallToolResult{StructuredContent: map[string]any{"rows": 5}})
	if out.String() != "{\n  \"rows\": 5\n}\n" {
		t.Errorf("structured content: %q", out.String())
	}
}

func TestWriteTask(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	ttl := int64(time.Hour / time.Millisecond)
	params := json.RawMessage(`{"mode":"form","message":"Overwrite?","requestedSchema":{"type":"object","properties":{"overwrite":{"type":"boolean"}},"required":["overwrite"]}}`)
	st := &client.TaskStatus{
		TaskID: "-abc", Status: task.InputRequired, StatusMessage: "Waiting",
		CreatedAt: now.Add(-2 * time.Minute), LastUpdatedAt: now.Add(-time.Minute), TTLMs: &ttl,
		InputRequests: map[string]*client.InputRequest{
			"confirm-overwrite": {Method: client.MethodElicit, Params: params, Elicit: &mcp.ElicitParams{Message: "Overwrite?"}},
		},
	}
	var out bytes.Buffer
	writeTask(&out, &client.Task{ID: "-abc", ServerURL: "http://a/mcp", Tool: "export_report"}, st, " --url http://a/mcp", now)
	for _, want := range []string{
		"Task     -abc\n",
		"Tool     export_report\n",
		"Status   input_required · Waiting\n",
		"(2m00s ago)",
		"(in 58m00s)",
		"Questions:\n  confirm-overwrite: Overwrite?\n",
		"Answer with:\n  mcptasks answer --url http://a/mcp -- -abc overwrite=<boolean>\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("get output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestAnswerHint(t *testing.T) {
	t.Parallel()
	form := func(props string) *client.InputRequest {
		return &client.InputRequest{Method: client.MethodElicit, Params: json.RawMessage(`{"requestedSchema":{"type":"object","properties":` + props + `,"required":["a","b"]}}`)}
	}
	got := answerHint("T1", map[string]*client.InputRequest{
		"first":     form(`{"a":{"type":"string","enum":["x","y"]},"b":{"type":"integer"},"c":{"type":"string"}}`),
		"it's mine": {Method: "sampling/createMessage"},
	}, "")
	want := "  mcptasks answer T1 first a=<x|y> b=<integer>\n  mcptasks answer T1 'it'\\''s mine'\n"
	if got != want {
		t.Errorf("answerHint:\n%s\nwant:\n%s", got, want)
	}
}
