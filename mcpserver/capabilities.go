package mcpserver

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// metaClientCapabilities is the _meta key of the client's capabilities.
const metaClientCapabilities = mcp.MetaKeyClientCapabilities

// DeclaresTasks reports whether a request declares the Tasks extension: its
// protocol version has the extension ([task.ProtocolVersion] or later) and
// the clientCapabilities of its own _meta, given as JSON, list it. What
// earlier requests declared never counts (TASKS-SPEC §3.2).
func DeclaresTasks(protocolVersion string, clientCapabilities json.RawMessage) bool {
	if protocolVersion < task.ProtocolVersion {
		return false
	}
	var c struct {
		Extensions struct {
			Tasks json.RawMessage `json:"io.modelcontextprotocol/tasks"` // task.ExtensionID
		} `json:"extensions"`
	}
	return decodeJSON(clientCapabilities, &c) == nil && c.Extensions.Tasks != nil
}

// rawClientCapabilities returns the clientCapabilities of a go-sdk
// request's _meta (see sdkMeta) as the client sent them ({} if absent), to
// be stored with a task or checked.
func rawClientCapabilities(meta anyMeta) json.RawMessage {
	v, ok := meta[metaClientCapabilities]
	if !ok {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(v) // a value decoded from JSON always encodes
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
