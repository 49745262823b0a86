package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// maxShownJSON bounds the JSON a page shows of one value; the rest is cut.
const maxShownJSON = 64 << 10

// redacted is what a redacted value shows instead of its content.
const redacted = "…"

// showJSON returns raw indented for a page, redacted if redact is set: every
// string, number and boolean replaced by "…", objects and arrays kept, so
// that an operator sees the shape and the keys but no values. Empty raw is
// "". A value that is not JSON is shown as text, or not at all when
// redacted.
func showJSON(raw json.RawMessage, redact bool) string {
	if len(raw) == 0 {
		return ""
	}
	if redact {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return redacted
		}
		b, _ := json.MarshalIndent(redactValue(v), "", "  ")
		return cut(string(b))
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return cut(string(raw))
	}
	return cut(b.String())
}

// redactValue returns v with every leaf replaced by "…".
func redactValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = redactValue(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = redactValue(e)
		}
		return v
	case nil:
		return nil
	}
	return redacted
}

// cut bounds s to maxShownJSON bytes.
func cut(s string) string {
	if len(s) <= maxShownJSON {
		return s
	}
	return strings.ToValidUTF8(s[:maxShownJSON], "") + fmt.Sprintf("\n… (%d more bytes not shown)", len(s)-maxShownJSON)
}
