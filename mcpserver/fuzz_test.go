package mcpserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzHeaderValue checks that decoding an Mcp-* header never panics, and
// that a value sent in the =?base64?…?= form decodes to what was encoded.
func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{"", "greet", "  padded  ", "=?base64?Z3JlZXQ=?=", "=?base64?!!?=", "=?base64??=", "é", "a\tb", "=?base64?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("Mcp-Name", v)
		_, _ = headerValue(h, "Mcp-Name")

		h.Set("Mcp-Name", base64Prefix+base64.StdEncoding.EncodeToString([]byte(v))+base64Suffix)
		got, ok := headerValue(h, "Mcp-Name")
		if !ok || got != v {
			t.Fatalf("base64 form of %q decoded to %q, %v", v, got, ok)
		}
	})
}

// FuzzParams checks the decoders of tasks/* params: they never panic,
// accept exactly a JSON string as taskId, and accept inputResponses only as
// an object of objects.
func FuzzParams(f *testing.F) {
	for _, s := range []string{`"abc"`, `123`, `null`, ``, `{"k":{"action":"accept"}}`, `{"k":"x"}`, `[]`, `{}`, `{"k":{}} `, `"\u0000"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		id, err := taskID(raw)
		var s string
		if wantOK := json.Unmarshal(raw, &s) == nil && string(raw) != "null" && len(raw) > 0; wantOK != (err == nil) || (err == nil && id != s) {
			t.Fatalf("taskID(%q) = %q, %v", raw, id, err)
		}
		m, err := inputResponses(raw)
		if err == nil {
			for k, v := range m {
				if !isJSONObject(v) {
					t.Fatalf("inputResponses(%q) accepted %q: %q", raw, k, v)
				}
			}
		}
	})
}

// FuzzJSONDepth checks the guard's depth scan against encoding/json: for
// every valid JSON text, jsonDepthOver reports exactly whether its objects
// and arrays nest deeper than the limit, brackets inside strings and
// escaped quotes included; for any other text it never panics.
func FuzzJSONDepth(f *testing.F) {
	for _, s := range []string{`{}`, `[[1],[[2]]]`, `{"a":"[[[\"{"}`, `"\\"`, `[{"a":[{"b":"]]]"}]}]`, `[`, `"`, `x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for limit := 0; limit < 6; limit++ {
			over := jsonDepthOver(b, limit)
			if !json.Valid(b) {
				continue
			}
			depth, deepest := 0, 0
			dec := json.NewDecoder(bytes.NewReader(b))
			for {
				tok, err := dec.Token()
				if err != nil {
					break
				}
				switch tok {
				case json.Delim('{'), json.Delim('['):
					depth++
					deepest = max(deepest, depth)
				case json.Delim('}'), json.Delim(']'):
					depth--
				}
			}
			if over != (deepest > limit) {
				t.Fatalf("jsonDepthOver(%q, %d) = %v; the text nests %d levels", b, limit, over, deepest)
			}
		}
	})
}
