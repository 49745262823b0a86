package mcpserver

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// JSON-RPC error codes used here.
const (
	codeInvalidParams  = jsonrpc.CodeInvalidParams
	codeInternalError  = jsonrpc.CodeInternalError
	codeHeaderMismatch = -32020
)

// errTaskNotFound is the one error for unknown, expired, malformed and
// foreign task ids, byte-identical in every case.
var errTaskNotFound = &jsonrpc.Error{Code: codeInvalidParams, Message: "Failed to retrieve task: Task not found"}

// missingTasksCapability returns the -32021 error for a request that needs
// the Tasks extension the client did not declare.
func missingTasksCapability(what string) error {
	// Written out: encoding mcp.ClientCapabilities would add "roots":{}.
	data := json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + task.ExtensionID + `":{}}}}`)
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("%s requires the %s extension; declare it in _meta clientCapabilities.extensions", what, task.ExtensionID),
		Data:    data,
	}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}
