package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcptasks/mcptasks/task"
)

// RawValue is the column value of a JSON value: NULL when empty. It is a
// string, not []byte, so that a driver sends it as text (with pgx's simple
// protocol, rather than as bytea).
func RawValue(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// RawFrom is the JSON value of a column: nil when NULL or empty.
func RawFrom(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

// EncodeRaws returns m as a JSON object whose values are m's bytes, keys
// sorted; NULL when m is empty. A nil value is written as null; a value
// that is not valid JSON is an error.
func EncodeRaws(m map[string]json.RawMessage) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		if err := writeRaw(&b, m[k]); err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

// writeRaw writes the JSON value v, or null if it is empty.
func writeRaw(b *strings.Builder, v json.RawMessage) error {
	if len(v) == 0 {
		b.WriteString("null")
		return nil
	}
	if !json.Valid(v) {
		return fmt.Errorf("not valid JSON: %.40q", v)
	}
	b.Write(bytes.TrimSpace(v))
	return nil
}

// DecodeRaws is the inverse of [EncodeRaws]: nil when b is NULL or empty.
func DecodeRaws(b []byte) (map[string]json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// EncodeError returns e as a JSON-RPC error object that keeps e.Data's
// bytes; NULL when e is nil.
func EncodeError(e *task.Error) (any, error) {
	if e == nil {
		return nil, nil
	}
	msg, err := json.Marshal(e.Message)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"code":%d,"message":%s`, e.Code, msg)
	if len(e.Data) > 0 {
		b.WriteString(`,"data":`)
		if err := writeRaw(&b, e.Data); err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

// DecodeError is the inverse of [EncodeError]: nil when b is NULL or empty.
func DecodeError(b []byte) (*task.Error, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var e task.Error
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	return &e, nil
}
