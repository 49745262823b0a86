package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/mcptasks/mcptasks/task"
)

// TestDeclaresTasks_AsParseCaps checks that DeclaresTasks, which decodes
// only the Tasks extension, answers as needs.declaresTasks of the full
// parse of the capabilities does, malformed ones included.
func TestDeclaresTasks_AsParseCaps(t *testing.T) {
	for _, caps := range []string{
		``, `{}`, `null`, `[]`, `5`, `{"extensions":{}}`, `{"extensions":null}`, `{"extensions":5}`, `{"extensions":[]}`,
		`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`,
		`{"extensions":{"io.modelcontextprotocol/tasks":null}}`,
		`{"extensions":{"io.modelcontextprotocol/tasks":5}}`,
		`{"extensions":{"other":{}}}`,
		`{"extensions":{"other":{},"io.modelcontextprotocol/tasks":{"x":1}}}`,
		`{"elicitation":5,"extensions":{"io.modelcontextprotocol/tasks":{}}}`,
		`{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`,
		`{"sampling":{},"roots":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{}}}`,
		`{"Extensions":{"io.modelcontextprotocol/tasks":{}}}`,
		`{"extensions":{"io.modelcontextprotocol/Tasks":{}}}`,
		`{"extensions":{"io.modelcontextprotocol/tasks":{}},}`,
	} {
		want := parseCaps(json.RawMessage(caps)).has().declaresTasks(task.ProtocolVersion)
		if got := DeclaresTasks(task.ProtocolVersion, json.RawMessage(caps)); got != want {
			t.Errorf("DeclaresTasks(%s) = %v, parseCaps says %v", caps, got, want)
		}
	}
	declared := json.RawMessage(`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
	if DeclaresTasks("2025-11-25", declared) || parseCaps(declared).has().declaresTasks("2025-11-25") {
		t.Error("declared under 2025-11-25")
	}
}
