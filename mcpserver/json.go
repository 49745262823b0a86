package mcpserver

import (
	"errors"

	segjson "github.com/segmentio/encoding/json"
)

// errTrailing is returned by decodeJSON for data after the value.
var errTrailing = errors.New("invalid data after the top-level value")

// decodeJSON decodes b into v the way go-sdk reads requests: object member
// names match struct fields case-sensitively (JSON-RPC and MCP names are
// case-sensitive; encoding/json would also take "Method" for "method"), and
// nothing but space may follow the value. Strings and raw values may point
// into b, which the caller must not modify afterwards.
func decodeJSON(b []byte, v any) error {
	rest, err := segjson.Parse(b, v, segjson.ZeroCopy|segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(rest) > 0 {
		err = errTrailing
	}
	return err
}
