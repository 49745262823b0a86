package cmdtool

import (
	"encoding/json"
	"math"
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
		{"{n}/{f}/{big}/{t}", "42/2.5/1000000000000000000000/true", true},
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

// TestFormat_Numbers checks that a number reaches the command in one
// canonical form whatever its JSON spelling: -0, which minimum: 0 admits,
// must not become the option-like "-0" (head -n -0 prints every line).
func TestFormat_Numbers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   any
		want string
	}{
		{json.Number("0"), "0"},
		{json.Number("-0"), "0"},
		{json.Number("-0.0"), "0"},
		{json.Number("-0e5"), "0"},
		{json.Number("0E-3"), "0"},
		{json.Number("42"), "42"},
		{json.Number("-42"), "-42"},
		{json.Number("1e2"), "100"},
		{json.Number("1E+2"), "100"},
		{json.Number("1.0"), "1"},
		{json.Number("100.000"), "100"},
		{json.Number("1.5e1"), "15"},
		{json.Number("2500e-2"), "25"},
		{json.Number("-3.0e0"), "-3"},
		{json.Number("1e21"), "1000000000000000000000"},
		{json.Number("12345678901234567891e0"), "12345678901234567891"}, // exact past float64
		{json.Number("2.50"), "2.5"},
		{json.Number("12e-1"), "1.2"},
		{json.Number("-0.25"), "-0.25"},
		{json.Number("1e-7"), "1e-07"},
		{json.Number("1e400"), "1e400"}, // past float64 (and the schema check): as sent
		{json.Number("1e-400"), "0"},
		{float64(0), "0"},
		{math.Copysign(0, -1), "0"},
		{float64(100), "100"},
		{1e21, "1000000000000000000000"},
		{0.1, "0.1"},
		{3, "3"},
		{[]any{json.Number("-0"), json.Number("1.0"), "x"}, `[0,1,"x"]`},
		{map[string]any{"n": json.Number("1e2")}, `{"n":100}`},
	}
	for _, c := range cases {
		if got := format(c.in); got != c.want {
			t.Errorf("format(%#v) = %q, want %q", c.in, got, c.want)
		}
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
