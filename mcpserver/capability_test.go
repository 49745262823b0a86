package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// TestMissingCapability checks the -32021 answer apart from the golden
// missing_capability transcript and its wording: every tasks/* request
// and every call of a task-only tool from a client that does not declare
// the extension gets HTTP 400 and -32021 whose data.requiredCapabilities
// names the extension (TASKS-SPEC §3.2).
func TestMissingCapability(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{})
	id := c.createTask(t, "", "confirm_delete", `{"filename":"notes.txt"}`)
	tests := []struct{ method, name, params string }{
		{"tasks/get", id, fmt.Sprintf(`{"taskId":%q}`, id)},
		{"tasks/update", id, fmt.Sprintf(`{"taskId":%q,"inputResponses":{}}`, id)},
		{"tasks/cancel", id, fmt.Sprintf(`{"taskId":%q}`, id)},
		{"tasks/get", "not-a-task-id", `{"taskId":"not-a-task-id"}`},
		{"tools/call", "failing_job", `{"name":"failing_job","arguments":{}}`},
		{"tools/call", "protocol_error_job", `{"name":"protocol_error_job","arguments":{}}`},
		{"tools/call", "confirm_delete", `{"name":"confirm_delete","arguments":{"filename":"a"}}`},
		{"tools/call", "multi_input", `{"name":"multi_input","arguments":{}}`},
		{"tools/call", "test_tool_with_task", `{"name":"test_tool_with_task","arguments":{}}`},
		{"tools/call", "export_report", `{"name":"export_report","arguments":{"rows":1}}`},
	}
	for _, tc := range tests {
		t.Run(tc.method+"/"+tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"_meta":$META_NOTASKS,%s}`, tc.method, tc.params[1:])
			resp := c.rpc(t, "", tc.method, tc.name, body)
			if resp.status != http.StatusBadRequest {
				t.Errorf("HTTP %d, want 400", resp.status)
			}
			rep := resp.reply(t)
			if rep.Error == nil || rep.Error.Code != -32021 {
				t.Fatalf("got %s, want a -32021 error", rep.raw)
			}
			if err := validateExchange(tc.method, rep.raw); err != nil {
				t.Error(err)
			}
			var data struct {
				RequiredCapabilities struct {
					Extensions map[string]json.RawMessage `json:"extensions"`
				} `json:"requiredCapabilities"`
			}
			if err := json.Unmarshal(rep.Error.Data, &data); err != nil {
				t.Fatalf("data: %v", err)
			}
			if got := string(data.RequiredCapabilities.Extensions[tasksExtensionID]); got != "{}" {
				t.Errorf("data.requiredCapabilities.extensions[%q] = %q, want {}", tasksExtensionID, got)
			}
		})
	}
}
