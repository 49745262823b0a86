package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFile is the Tasks extension schema (see testdata/README.md).
const schemaFile = "testdata/tasks-2026-07-28.schema.json"

// errorResponseSchema is the JSON-RPC error response envelope; the error
// object itself is the schema's own Error.
const errorResponseSchema = `{
  "type": "object",
  "required": ["jsonrpc", "error"],
  "properties": {
    "jsonrpc": {"const": "2.0"},
    "id": {"$ref": "#/$defs/RequestId"},
    "error": {"$ref": "#/$defs/Error"}
  },
  "not": {"required": ["result"]}
}`

var (
	schemaOnce sync.Once
	schemas    map[string]*jsonschema.Resolved
	schemaErr  error
)

// schemaFor returns the resolved schema of the $defs entry def, or of the
// error envelope for def "ErrorResponse".
func schemaFor(def string) (*jsonschema.Resolved, error) {
	schemaOnce.Do(func() {
		b, err := os.ReadFile(schemaFile)
		if err != nil {
			schemaErr = err
			return
		}
		var root map[string]json.RawMessage
		if err := json.Unmarshal(b, &root); err != nil {
			schemaErr = err
			return
		}
		schemas = map[string]*jsonschema.Resolved{}
		for _, d := range []string{"CreateTaskResult", "GetTaskResult", "UpdateTaskResult", "CancelTaskResult", "ErrorResponse"} {
			var top map[string]json.RawMessage
			if d == "ErrorResponse" {
				if err := json.Unmarshal([]byte(errorResponseSchema), &top); err != nil {
					schemaErr = err
					return
				}
			} else {
				top = map[string]json.RawMessage{"$ref": json.RawMessage(`"#/$defs/` + d + `"`)}
			}
			for _, k := range []string{"$schema", "$id", "$defs"} {
				top[k] = root[k]
			}
			b, err := json.Marshal(top)
			if err != nil {
				schemaErr = err
				return
			}
			var s jsonschema.Schema
			if err := json.Unmarshal(b, &s); err != nil {
				schemaErr = fmt.Errorf("%s: %w", d, err)
				return
			}
			r, err := s.Resolve(nil)
			if err != nil {
				schemaErr = fmt.Errorf("%s: %w", d, err)
				return
			}
			schemas[d] = r
		}
	})
	if schemaErr != nil {
		return nil, schemaErr
	}
	return schemas[def], nil
}

// validateExchange checks one JSON-RPC response to a request of method
// against the Tasks schema and the wire rules the schema does not encode
// (TASKS-SPEC §3.5–§3.10, CONFORMANCE §4.2). Results of other methods are
// checked only for resultType, unless they are a CreateTaskResult.
func validateExchange(method string, msg json.RawMessage) error {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(msg, &env); err != nil {
		return fmt.Errorf("response is not a JSON object: %w", err)
	}
	if _, ok := env["error"]; ok {
		return validateError(msg, env)
	}
	res, ok := env["result"]
	if !ok {
		return nil // a notification
	}
	var r map[string]any
	if err := decodeNumbers(res, &r); err != nil {
		return fmt.Errorf("result is not an object: %w", err)
	}
	var plain any // jsonschema-go wants float64 numbers, not json.Number
	if err := json.Unmarshal(res, &plain); err != nil {
		return err
	}
	rt, _ := r["resultType"].(string)
	if rt == "" {
		return errors.New("result has no resultType")
	}
	switch {
	case method == "tasks/get":
		return validateDef("GetTaskResult", plain, r, checkDetailed)
	case method == "tasks/update":
		return validateDef("UpdateTaskResult", plain, r, checkAck)
	case method == "tasks/cancel":
		return validateDef("CancelTaskResult", plain, r, checkAck)
	case rt == "task" && method == "tools/call":
		return validateDef("CreateTaskResult", plain, r, checkCreate)
	case rt == "task":
		return fmt.Errorf("resultType \"task\" on a %s result", method)
	case method == "tools/call" && rt == "input_required":
		return forbid(r, "taskId", "status")
	case method == "tools/call" && rt != "complete":
		return fmt.Errorf("tools/call result with resultType %q", rt)
	}
	return nil
}

func validateError(msg json.RawMessage, env map[string]json.RawMessage) error {
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		return err
	}
	s, err := schemaFor("ErrorResponse")
	if err != nil {
		return err
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("error response: %w", err)
	}
	var e struct {
		Code int64 `json:"code"`
		Data *struct {
			RequiredCapabilities map[string]any `json:"requiredCapabilities"`
			Supported            []string       `json:"supported"`
			Requested            *string        `json:"requested"`
		} `json:"data"`
	}
	if err := json.Unmarshal(env["error"], &e); err != nil {
		return err
	}
	switch {
	case e.Code == -32021 && (e.Data == nil || e.Data.RequiredCapabilities == nil):
		return errors.New("-32021 without data.requiredCapabilities")
	case e.Code == -32022 && (e.Data == nil || e.Data.Supported == nil || e.Data.Requested == nil):
		return errors.New("-32022 without data.supported and data.requested")
	case e.Code <= -32020 && e.Code >= -32099 && e.Code != -32020 && e.Code != -32021 && e.Code != -32022:
		return fmt.Errorf("code %d is reserved and undefined", e.Code)
	case e.Code == -32002 || e.Code == -32042 || e.Code == -32003:
		return fmt.Errorf("retired code %d", e.Code)
	}
	return nil
}

// validateDef validates plain against the schema's $defs entry def, then
// runs the extra checks on r, the same value decoded with json.Number.
func validateDef(def string, plain any, r map[string]any, extra ...func(map[string]any) error) error {
	s, err := schemaFor(def)
	if err != nil {
		return err
	}
	if err := s.Validate(plain); err != nil {
		return fmt.Errorf("%s: %w", def, err)
	}
	for _, f := range extra {
		if err := f(r); err != nil {
			return fmt.Errorf("%s: %w", def, err)
		}
	}
	return nil
}

// checkTask checks the Task fields the schema leaves loose.
func checkTask(r map[string]any) error {
	for _, k := range []string{"createdAt", "lastUpdatedAt"} {
		s, _ := r[k].(string)
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !strings.HasSuffix(s, "Z") || tm.IsZero() {
			return fmt.Errorf("%s %q is not an RFC 3339 UTC time", k, s)
		}
	}
	if v := r["ttlMs"]; v != nil {
		if n, ok := v.(json.Number); !ok || !positiveInt(n) {
			return fmt.Errorf("ttlMs %v is not null or a positive integer", v)
		}
	}
	if v, ok := r["pollIntervalMs"]; ok {
		if n, ok := v.(json.Number); !ok || !positiveInt(n) {
			return fmt.Errorf("pollIntervalMs %v is not a positive integer", v)
		}
	}
	if id, _ := r["taskId"].(string); len(id) < 22 {
		return fmt.Errorf("taskId %q is too short to hold 128 bits", id)
	}
	return forbid(r, "ttl", "pollInterval", "requestState", "task")
}

func positiveInt(n json.Number) bool {
	i, err := n.Int64()
	return err == nil && i > 0
}

func checkCreate(r map[string]any) error {
	if r["status"] != "working" {
		return fmt.Errorf("a new task is %v, not working", r["status"])
	}
	if err := forbid(r, "result", "error", "inputRequests"); err != nil {
		return err
	}
	return checkTask(r)
}

func checkDetailed(r map[string]any) error {
	if r["resultType"] != "complete" {
		return fmt.Errorf("resultType %v", r["resultType"])
	}
	if err := checkTask(r); err != nil {
		return err
	}
	switch r["status"] {
	case "working", "cancelled":
		return forbid(r, "result", "error", "inputRequests")
	case "input_required":
		if m, _ := r["inputRequests"].(map[string]any); len(m) == 0 {
			return errors.New("input_required without inputRequests")
		}
		return forbid(r, "result", "error")
	case "completed":
		if err := forbid(r, "error", "inputRequests"); err != nil {
			return err
		}
		res, _ := r["result"].(map[string]any)
		if res["resultType"] != "complete" {
			return fmt.Errorf("inlined result has resultType %v", res["resultType"])
		}
		if meta, ok := res["_meta"].(map[string]any); ok {
			if _, ok := meta["io.modelcontextprotocol/related-task"]; ok {
				return errors.New("inlined result carries related-task _meta")
			}
		}
	case "failed":
		return forbid(r, "result", "inputRequests")
	}
	return nil
}

func checkAck(r map[string]any) error {
	for k := range r {
		if k != "resultType" && k != "_meta" {
			return fmt.Errorf("ack carries %q", k)
		}
	}
	return nil
}

func forbid(r map[string]any, keys ...string) error {
	for _, k := range keys {
		if _, ok := r[k]; ok {
			return fmt.Errorf("carries %q", k)
		}
	}
	return nil
}

// decodeNumbers decodes b into v keeping numbers as json.Number.
func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// TestValidateExchange checks that the validator used by the wire tests
// rejects what it must, so that a passing transcript means something.
func TestValidateExchange(t *testing.T) {
	t.Parallel()
	const (
		id    = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		times = `"createdAt":"2026-07-28T10:30:00.000Z","lastUpdatedAt":"2026-07-28T10:30:00.000Z"`
		task  = `"taskId":"` + id + `",` + times + `,"ttlMs":3600000,"pollIntervalMs":1000`
	)
	ok := []struct{ method, msg string }{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","status":"working",` + task + `}}`},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","status":"working","taskId":"` + id + `",` + times + `,"ttlMs":null}}`},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}`},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"working",` + task + `}}`},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"completed",` + task + `,"result":{"resultType":"complete","content":[],"isError":true}}}`},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"failed",` + task + `,"error":{"code":-32603,"message":"m"}}}`},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"input_required",` + task + `,"inputRequests":{"k":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}}}}`},
		{"tasks/update", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{}}}`},
		{"tasks/cancel", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}`},
		{"tasks/get", `{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m","data":{"requiredCapabilities":{}}}}`},
	}
	bad := []struct{ why, method, msg string }{
		{"create: resultType complete", "tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","status":"working",` + task + `}}`},
		{"create: no ttlMs", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","status":"working","taskId":"` + id + `",` + times + `}}`},
		{"create: nested", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","task":{"status":"working",` + task + `}}}`},
		{"create: carries result", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","status":"working",` + task + `,"result":{}}}`},
		{"create: zero ttl", "tools/call", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","status":"working","taskId":"` + id + `",` + times + `,"ttlMs":0}}`},
		{"get: bad status", "tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"done",` + task + `}}`},
		{"get: completed without result", "tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"completed",` + task + `}}`},
		{"get: failed with result", "tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"failed",` + task + `,"error":{"code":1,"message":"m"},"result":{}}}`},
		{"get: bad input request", "tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"input_required",` + task + `,"inputRequests":{"k":{"method":"ping"}}}}`},
		{"get: local time", "tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"working","taskId":"` + id + `","createdAt":"2026-07-28T10:30:00+02:00","lastUpdatedAt":"2026-07-28T10:30:00Z","ttlMs":null}}`},
		{"get: no resultType", "tasks/get", `{"jsonrpc":"2.0","id":1,"result":{"status":"working",` + task + `}}`},
		{"ack: carries status", "tasks/cancel", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","status":"cancelled"}}`},
		{"ack: resultType task", "tasks/update", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task"}}`},
		{"error: no message", "tasks/get", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}`},
		{"error: string code", "tasks/get", `{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`},
		{"error: -32021 without data", "tasks/get", `{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m"}}`},
		{"error: retired code", "tasks/get", `{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"m"}}`},
		{"error: bad jsonrpc", "tasks/get", `{"jsonrpc":"1.0","id":1,"error":{"code":-32602,"message":"m"}}`},
	}
	for _, c := range ok {
		if err := validateExchange(c.method, json.RawMessage(c.msg)); err != nil {
			t.Errorf("%s %s: unexpected error %v", c.method, c.msg, err)
		}
	}
	for _, c := range bad {
		if err := validateExchange(c.method, json.RawMessage(c.msg)); err == nil {
			t.Errorf("%s: accepted %s", c.why, c.msg)
		}
	}
}
