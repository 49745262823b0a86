package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/task"
)

// A tools/call may carry an idempotency key, the string at
// params._meta["io.github.mcptasks/idempotencyKey"] (task.MetaIdempotencyKey):
// while a task that the same principal created with the key lives, a call
// with the key gets that task's CreateTaskResult again instead of a second
// task, on any replica. Both request paths read the key from their own
// decoding of _meta and hand it to createTask; engine.Create does the rest.

// idempotencyKey decodes the idempotency key of a tools/call from the JSON
// of its _meta value (nil when the call has none).
func idempotencyKey(raw json.RawMessage) (string, error) {
	if raw == nil {
		return "", nil
	}
	var k string
	if decodeJSON(raw, &k) != nil || k == "" {
		return "", invalidParams("_meta[%q] must be a string of 1 to %d printable ASCII characters", task.MetaIdempotencyKey, engine.MaxIdempotencyKeyLen)
	}
	return k, nil
}

// sdkIdempotencyKey is idempotencyKey for a go-sdk request's _meta.
func sdkIdempotencyKey(meta anyMeta) (string, error) {
	v, ok := meta[task.MetaIdempotencyKey]
	if !ok {
		return "", nil
	}
	raw, err := json.Marshal(v) // a value decoded from JSON always encodes
	if err != nil {
		raw = json.RawMessage(`null`)
	}
	return idempotencyKey(raw)
}

// createError maps an error of engine.Create to the JSON-RPC error of the
// tools/call: -32602 for a bad or reused idempotency key, else -32603 that
// says the task may exist and how to retry safely.
func createError(err error, key string) *jsonrpc.Error {
	switch {
	case errors.Is(err, engine.ErrInvalidKey):
		return &jsonrpc.Error{Code: codeInvalidParams, Message: fmt.Sprintf("_meta[%q] must be 1 to %d printable ASCII characters", task.MetaIdempotencyKey, engine.MaxIdempotencyKeyLen)}
	case errors.Is(err, engine.ErrKeyReused):
		return &jsonrpc.Error{Code: codeInvalidParams, Message: fmt.Sprintf("The idempotency key %q was used for another call (another tool or other arguments); use a new key for a new call", key)}
	}
	msg := fmt.Sprintf("The task could not be confirmed: it may have been created. Retry the call with the same _meta[%q] to get it without creating a second one", task.MetaIdempotencyKey)
	if key == "" {
		msg += "; without a key, a retry may run the work twice"
	}
	return &jsonrpc.Error{Code: codeInternalError, Message: msg}
}
