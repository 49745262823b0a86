package term

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const allKinds = `{
  "type": "object",
  "properties": {
    "zeta":   {"type": "string", "title": "Zeta", "minLength": 2, "maxLength": 4},
    "email":  {"type": "string", "format": "email"},
    "count":  {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
    "ratio":  {"type": "number", "maximum": 1},
    "ok":     {"type": "boolean", "default": true},
    "color":  {"type": "string", "enum": ["red", "green", "blue"], "enumNames": ["Red", "Green", "Blue"]},
    "size":   {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}], "default": "l"},
    "tags":   {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2},
    "day":    {"type": "string", "format": "date"}
  },
  "required": ["zeta", "count", "color"]
}`

func TestParseSchema(t *testing.T) {
	t.Parallel()
	form, err := ParseSchema(json.RawMessage(allKinds))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range form.Fields {
		names = append(names, f.Name)
	}
	// The order of the JSON text, not alphabetical.
	want := []string{"zeta", "email", "count", "ratio", "ok", "color", "size", "tags", "day"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("fields %v, want %v", names, want)
	}
	kinds := map[string]Kind{"zeta": String, "email": String, "count": Integer, "ratio": Number, "ok": Boolean, "color": Enum, "size": Enum, "tags": MultiEnum, "day": String}
	for name, k := range kinds {
		if got := form.Field(name).Kind; got != k {
			t.Errorf("%s: kind %v, want %v", name, got, k)
		}
	}
	if !form.Field("zeta").Required || form.Field("email").Required {
		t.Errorf("required: zeta %v, email %v", form.Field("zeta").Required, form.Field("email").Required)
	}
	if d := form.Field("count").Default; d != int64(3) {
		t.Errorf("count default %#v, want int64(3)", d)
	}
	if d := form.Field("size").Default; d != "l" {
		t.Errorf("size default %#v, want l", d)
	}
	if err := form.Check(map[string]any{"zeta": "ab"}); err == nil || !strings.Contains(err.Error(), "count, color") {
		t.Errorf("Check: %v, want missing count, color", err)
	}
}

func TestParseSchema_Errors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, schema, want string }{
		{"NotObject", `{"type": "array"}`, "want object"},
		{"BadJSON", `{"type": `, "requestedSchema"},
		{"ArrayWithoutItems", `{"properties": {"x": {"type": "array"}}}`, "without items"},
		{"BadDefault", `{"properties": {"n": {"type": "integer", "default": "many"}}}`, "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSchema(json.RawMessage(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
	for _, empty := range []string{"", "null", "{}"} {
		form, err := ParseSchema(json.RawMessage(empty))
		if err != nil || len(form.Fields) != 0 {
			t.Errorf("ParseSchema(%q) = %v, %v; want no fields", empty, form, err)
		}
	}
}

func TestField_Parse(t *testing.T) {
	t.Parallel()
	form, err := ParseSchema(json.RawMessage(allKinds))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field, in string
		want      any    // when valid
		err       string // else a part of the error
	}{
		{field: "ok", in: "y", want: true},
		{field: "ok", in: "No", want: false},
		{field: "ok", in: "true", want: true},
		{field: "ok", in: "maybe", err: "answer y or n"},
		{field: "zeta", in: "abc", want: "abc"},
		{field: "zeta", in: "a", err: "at least 2"},
		{field: "zeta", in: "abcde", err: "at most 4"},
		{field: "zeta", in: "äöü", want: "äöü"}, // runes, not bytes
		{field: "email", in: "ada@example.com", want: "ada@example.com"},
		{field: "email", in: "ada", err: "not a valid email"},
		{field: "day", in: "2026-07-28", want: "2026-07-28"},
		{field: "day", in: "28.7.2026", err: "like 2026-07-28"},
		{field: "count", in: "7", want: int64(7)},
		{field: "count", in: "7.5", err: "not a whole number"},
		{field: "count", in: "0", err: "less than the minimum 1"},
		{field: "count", in: "11", err: "more than the maximum 10"},
		{field: "ratio", in: "0.25", want: 0.25},
		{field: "ratio", in: "2", err: "more than the maximum 1"},
		{field: "ratio", in: "NaN", err: "not a number"},
		{field: "color", in: "2", want: "green"},
		{field: "color", in: "blue", want: "blue"},
		{field: "color", in: "RED", want: "red"},
		{field: "color", in: "4", err: "from 1 to 3"},
		{field: "size", in: "large", want: "l"}, // by title
		{field: "tags", in: "1, c", want: []any{"a", "c"}},
		{field: "tags", in: "a,a", want: []any{"a"}},
		{field: "tags", in: "a,b,c", err: "at most 2"},
		{field: "tags", in: "d", err: "not a choice"},
	} {
		t.Run(tc.field+"/"+tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := form.Field(tc.field).Parse(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("Parse(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestField_Prompt(t *testing.T) {
	t.Parallel()
	form, err := ParseSchema(json.RawMessage(allKinds))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"zeta":  "Zeta [2-4 characters]: ",
		"email": "email (optional) [email]: ",
		"count": "count [whole number 1-10, default 3]: ",
		"ratio": "ratio (optional) [number ≤ 1]: ",
		"ok":    "ok (optional) [Y/n]: ",
		"color": "color [1-3]: ",
		"size":  "size (optional) [1-2, default 2 (Large)]: ",
		"tags":  "tags (optional) [1-3, separated by commas]: ",
	} {
		if got := form.Field(name).Prompt(); got != want {
			t.Errorf("%s: prompt %q, want %q", name, got, want)
		}
	}
	if got := form.Field("color").Placeholder(); got != "<red|green|blue>" {
		t.Errorf("color placeholder %q", got)
	}
}
