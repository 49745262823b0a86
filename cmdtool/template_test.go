package cmdtool

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestTemplate_Expand(t *testing.T) {
	t.Parallel()
	args := map[string]any{
		"s": "a b", "n": json.Number("42"), "f": json.Number("2.50"), "big": json.Number("1e21"),
		"long": json.Number("12345678901234567890"), "huge": json.Number("1000000000000000000000"),
		"t": true, "list": []any{"x", json.Number("1")}, "obj": map[string]any{"k": "v"}, "null": nil,
		"dash-ed": "d",
	}
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"plain", "plain", true},
		{"{s}", "a b", true},
		{"--name={s}!", "--name=a b!", true},
		{"{n}/{f}/{big}/{t}", "42/2.5/1e+21/true", true},
		{"{long} {huge}", "12345678901234567890 1000000000000000000000", true}, // integers past int64 stay exact
		{"{list}", `["x",1]`, true},
		{"{obj}", `{"k":"v"}`, true},
		{"{dash-ed}", "d", true},
		{"{missing}", "", false},
		{"x{null}", "", false},
		{"{{s}", "{s}", true},
		{"awk '{print $1}'", "awk '{print $1}'", true},
		{"{ s }", "{ s }", true},
		{"{1x}", "{1x}", true},
		{"}{", "}{", true},
		{"{s", "{s", true},
		{"$(touch x); `id` | & {s}", "$(touch x); `id` | & a b", true},
	}
	for _, c := range cases {
		got, ok := parseTemplate(c.in).expand(args)
		if got != c.want || ok != c.ok {
			t.Errorf("expand(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if got := parseTemplate("Delete {s} and {missing}?").expandOr(args); got != "Delete a b and ?" {
		t.Errorf("expandOr: %q", got)
	}
}

func TestTemplate_Args(t *testing.T) {
	t.Parallel()
	tp := parseTemplate("{a}-{b}{a}{{c}")
	if got := strings.Join(tp.args(), ","); got != "a,b,a" {
		t.Errorf("args = %s", got)
	}
	if _, ok := tp.whole(); ok {
		t.Error("whole() on a mixed template")
	}
	if name, ok := parseTemplate("{a}").whole(); !ok || name != "a" {
		t.Errorf("whole() = %q, %v", name, ok)
	}
}

func TestExpandArg(t *testing.T) {
	t.Parallel()
	args := map[string]any{"files": []any{"a", "b c"}, "n": json.Number("3"), "empty": ""}
	cases := []struct {
		in   string
		want []string
	}{
		{"{files}", []string{"a", "b c"}},
		{"--files={files}", []string{`--files=["a","b c"]`}},
		{"{n}", []string{"3"}},
		{"{empty}", []string{""}},
		{"{absent}", nil},
		{"--opt={absent}", nil},
	}
	for _, c := range cases {
		if got := expandArg(parseTemplate(c.in), args); !reflect.DeepEqual(got, c.want) {
			t.Errorf("expandArg(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestArgEnvName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"dir": "MCPTASKS_ARG_DIR", "out-file.csv": "MCPTASKS_ARG_OUT_FILE_CSV", "é": "MCPTASKS_ARG__"} {
		if got := ArgEnvName(in); got != want {
			t.Errorf("ArgEnvName(%q) = %q, want %q", in, got, want)
		}
	}
}
