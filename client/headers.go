package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Header names of the 2026-07-28 Streamable HTTP transport.
const (
	headerProtocolVersion = "MCP-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerParamPrefix     = "Mcp-Param-"

	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// EncodeHeaderValue returns v as an Mcp-* header value: unchanged when it
// is plain safe ASCII, otherwise (non-ASCII, control characters, leading
// or trailing whitespace, or a value that looks like the sentinel itself)
// as =?base64?<standard base64 of the UTF-8 bytes>?=.
func EncodeHeaderValue(v string) string {
	if !needsBase64(v) {
		return v
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + base64Suffix
}

// DecodeHeaderValue reverses [EncodeHeaderValue]. Surrounding whitespace
// is ignored; ok is false for a sentinel whose base64 is invalid.
func DecodeHeaderValue(h string) (v string, ok bool) {
	h = strings.TrimSpace(h)
	if inner, found := strings.CutPrefix(h, base64Prefix); found {
		if inner, found = strings.CutSuffix(inner, base64Suffix); found {
			b, err := base64.StdEncoding.DecodeString(inner)
			if err != nil {
				return "", false
			}
			return string(b), true
		}
	}
	return h, true
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	switch s[0] {
	case ' ', '\t':
		return true
	}
	switch s[len(s)-1] {
	case ' ', '\t':
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix)
}

// nameParam returns the params field whose value the Mcp-Name header
// carries for method, or "" if the method has none.
func nameParam(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId"
	}
	return ""
}

// paramHeader binds a (possibly nested) tool argument to the
// Mcp-Param-{Name} header that mirrors it (x-mcp-header, SEP-2243).
type paramHeader struct {
	path   []string
	header string
}

// schemaProp is what x-mcp-header processing needs of a schema property.
type schemaProp struct {
	Type       json.RawMessage       `json:"type"`
	XMCPHeader json.RawMessage       `json:"x-mcp-header"`
	Properties map[string]schemaProp `json:"properties"`
}

// paramHeaders returns the x-mcp-header bindings of a tool input schema,
// or an error if an annotation is invalid: empty, not a token, on a
// property that is not a string, integer or boolean, or a duplicate
// (case-insensitive). Clients must not call such tools.
func paramHeaders(inputSchema any) ([]paramHeader, error) {
	if inputSchema == nil {
		return nil, nil
	}
	b, err := json.Marshal(inputSchema)
	if err != nil {
		return nil, err
	}
	var root schemaProp
	if json.Unmarshal(b, &root) != nil {
		return nil, nil // a schema we cannot read has no usable annotations
	}
	var out []paramHeader
	seen := map[string]bool{}
	var walk func(props map[string]schemaProp, prefix []string) error
	walk = func(props map[string]schemaProp, prefix []string) error {
		for _, name := range sortedKeys(props) {
			p := props[name]
			path := append(append([]string(nil), prefix...), name)
			if p.XMCPHeader != nil {
				var h string
				if err := json.Unmarshal(p.XMCPHeader, &h); err != nil || h == "" {
					return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", strings.Join(path, "."))
				}
				if !isToken(h) {
					return fmt.Errorf("property %q: x-mcp-header %q is not a valid header name", strings.Join(path, "."), h)
				}
				var typ string
				_ = json.Unmarshal(p.Type, &typ)
				if typ != "string" && typ != "integer" && typ != "boolean" {
					return fmt.Errorf("property %q: x-mcp-header on a %s property; only string, integer and boolean are allowed", strings.Join(path, "."), p.Type)
				}
				if seen[strings.ToLower(h)] {
					return fmt.Errorf("property %q: x-mcp-header %q is used twice", strings.Join(path, "."), h)
				}
				seen[strings.ToLower(h)] = true
				out = append(out, paramHeader{path: path, header: h})
			}
			if len(p.Properties) > 0 {
				if err := walk(p.Properties, path); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root.Properties, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// isToken reports whether s is an HTTP token (RFC 9110 tchar+).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// paramHeaderValues returns the Mcp-Param-* headers for the JSON
// arguments args. Absent and null arguments, and values that are not a
// string, boolean or safe integer, get no header.
func paramHeaderValues(bindings []paramHeader, args json.RawMessage) map[string]string {
	if len(bindings) == 0 || len(args) == 0 {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(args, &top) != nil {
		return nil
	}
	out := map[string]string{}
	for _, b := range bindings {
		raw, ok := lookupPath(top, b.path)
		if !ok {
			continue
		}
		if v, ok := primitiveString(raw); ok {
			out[headerParamPrefix+b.header] = EncodeHeaderValue(v)
		}
	}
	return out
}

func lookupPath(obj map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := obj[path[0]]
	for _, p := range path[1:] {
		if !ok {
			return nil, false
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(cur, &m) != nil {
			return nil, false
		}
		cur, ok = m[p]
	}
	return cur, ok
}

// primitiveString formats a JSON string, boolean or integer (within
// ±2^53-1) as a header value.
func primitiveString(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		const maxSafe = 1<<53 - 1
		if v != math.Trunc(v) || math.Abs(v) > maxSafe {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}
