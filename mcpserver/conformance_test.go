package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestFirstTool_CallableWithoutArguments checks what the conformance
// scenario http-header-validation expects of a server: the first tool of
// tools/list answers a call with no arguments from a client that declares
// elicitation, sampling and roots but not the Tasks extension, without an
// error (the scenario checks header handling with it).
func TestFirstTool_CallableWithoutArguments(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{})
	const meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}}`
	rep := c.rpc(t, "", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":`+meta+`}}`).reply(t)
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(rep.Result, &list); err != nil || len(list.Tools) == 0 {
		t.Fatalf("tools/list: %v: %s", err, rep.raw)
	}
	first := list.Tools[0].Name
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":%s,"name":%q,"arguments":{}}}`, meta, first)
	resp := c.rpc(t, "", "tools/call", first, body)
	if rep := resp.reply(t); resp.status >= 400 || rep.Error != nil {
		t.Errorf("tools/call of the first tool, %s: HTTP %d %s", first, resp.status, rep.raw)
	}
}
