package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/task"
)

// This file is the one place where Go errors become JSON-RPC errors and
// JSON-RPC errors become HTTP statuses.

// JSON-RPC error codes the server answers with: the standard ones, and
// those MCP 2026-07-28 defines in its reserved range (TASKS-SPEC §2.5).
const (
	codeParseError        = jsonrpc.CodeParseError                    // -32700: the body is not JSON
	codeInvalidRequest    = jsonrpc.CodeInvalidRequest                // -32600: not one JSON-RPC request
	codeMethodNotFound    = jsonrpc.CodeMethodNotFound                // -32601
	codeInvalidParams     = jsonrpc.CodeInvalidParams                 // -32602
	codeInternalError     = jsonrpc.CodeInternalError                 // -32603
	codeHeaderMismatch    = mcp.CodeHeaderMismatch                    // -32020: an HTTP header is missing or differs from the body
	codeMissingCapability = mcp.CodeMissingRequiredClientCapabilities // -32021: the client did not declare what the request needs
	codeUnsupportedVer    = mcp.CodeUnsupportedProtocolVersion        // -32022
)

// CodePollTooFast is the JSON-RPC error code of a tasks/get refused by the
// poll rate limit (Options.MinPollInterval). It is an application code,
// outside the range the JSON-RPC and MCP specs reserve.
const CodePollTooFast = -31000

// errTaskNotFound is the one error for unknown, expired, malformed and
// foreign task ids, byte-identical in every case.
var errTaskNotFound = &jsonrpc.Error{Code: codeInvalidParams, Message: "Failed to retrieve task: Task not found"}

// missingTasksCapability returns the -32021 error for a request that needs
// the Tasks extension the client did not declare.
func missingTasksCapability(what string) error {
	// Written out: encoding mcp.ClientCapabilities would add "roots":{}.
	data := json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + task.ExtensionID + `":{}}}}`)
	return &jsonrpc.Error{
		Code:    codeMissingCapability,
		Message: fmt.Sprintf("%s requires the %s extension; declare it in _meta clientCapabilities.extensions", what, task.ExtensionID),
		Data:    data,
	}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// taskError maps an engine error to the JSON-RPC error of a tasks/* reply:
// the one not-found error, or an internal error that tells the client
// nothing of the server's insides (the cause is logged).
func (s *Server) taskError(method string, err error) error {
	if errors.Is(err, engine.ErrNotFound) {
		return errTaskNotFound
	}
	s.log.Error(method, "err", err)
	return &jsonrpc.Error{Code: codeInternalError, Message: "Internal error; try again"}
}

// rpcError returns err as a JSON-RPC error: itself if it is one, else an
// internal error carrying its text.
func rpcError(err error) *jsonrpc.Error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je
	}
	return &jsonrpc.Error{Code: codeInternalError, Message: err.Error()}
}

// errorStatus is the HTTP status of a JSON-RPC error reply, as go-sdk
// sends it: 400 for invalid params, a missing capability and a header
// mismatch, 404 for an unknown method, 200 for the rest (TASKS-SPEC §7.8).
func errorStatus(code int64) int {
	switch code {
	case codeInvalidParams, codeMissingCapability, codeHeaderMismatch, codeUnsupportedVer:
		return http.StatusBadRequest
	case codeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusOK
}
