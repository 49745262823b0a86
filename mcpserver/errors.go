package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/store"
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
	return missingCapabilities(what, needs{extensions: []string{task.ExtensionID}})
}

// missingCapabilities returns the -32021 error for what, which needs the
// capabilities n that the request did not declare: data.requiredCapabilities
// names them (TASKS-SPEC §2.4).
func missingCapabilities(what string, n needs) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": n.capabilitiesJSON()}) // maps of maps always encode
	var msg string
	switch names := n.names(); {
	case len(names) == 1 && len(n.extensions) == 1:
		msg = what + " requires the " + n.extensions[0] + " extension; declare it in _meta clientCapabilities.extensions"
	case len(names) == 1:
		msg = what + " requires the client capability " + names[0] + "; declare it in _meta clientCapabilities"
	default:
		msg = what + " requires the client capabilities " + strings.Join(names, ", ") + "; declare them in _meta clientCapabilities"
	}
	return &jsonrpc.Error{Code: codeMissingCapability, Message: msg, Data: data}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// internalError is a -32603 error whose message says what went wrong on
// the server's side, for a tool's author to read (an output that does not
// match its schema): it tells nothing of the server's insides.
func internalError(format string, args ...any) error {
	return &jsonrpc.Error{Code: codeInternalError, Message: fmt.Sprintf(format, args...)}
}

// taskError maps an engine error to the JSON-RPC error of a tasks/* reply:
// the one not-found error, -32602 naming the input key and the field of an
// answer that checkAnswer refused, or an internal error that tells the
// client nothing of the server's insides (the cause is logged).
func (s *Server) taskError(method string, err error) error {
	var ae *store.AnswerError
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return errTaskNotFound
	case errors.As(err, &ae):
		return invalidParams("params.inputResponses[%q]: %v; the input is still waiting for a valid answer", ae.Key, ae.Err)
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
