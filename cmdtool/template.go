package cmdtool

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// A template is a string with {arg} placeholders: an argv entry, the dir,
// an env value or the confirmation message. "{{" stands for a literal "{";
// any other brace that does not open a placeholder is literal too, so
// "awk '{print $1}'" needs no escaping.
type template struct {
	raw   string
	parts []part
}

// part is one literal run or one placeholder of a template.
type part struct {
	lit string
	arg string // the argument a placeholder names; "" for a literal
}

// parseTemplate splits s into literal runs and placeholders. It never
// fails: a placeholder is "{" NAME "}" where NAME is a letter or "_"
// followed by letters, digits, "_" or "-".
func parseTemplate(s string) template {
	t := template{raw: s}
	var lit strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '{' {
			lit.WriteByte(s[i])
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "{{") {
			lit.WriteByte('{')
			i += 2
			continue
		}
		n := placeholderLen(s[i+1:])
		if n == 0 {
			lit.WriteByte('{')
			i++
			continue
		}
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String()})
			lit.Reset()
		}
		t.parts = append(t.parts, part{arg: s[i+1 : i+1+n]})
		i += n + 2
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{lit: lit.String()})
	}
	return t
}

// placeholderLen returns the length of the name that starts s if a "}"
// closes it, or 0.
func placeholderLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '}':
			return i
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && (c == '-' || '0' <= c && c <= '9'):
		default:
			return 0
		}
	}
	return 0
}

// args returns the arguments the template names, in order, with repeats.
func (t template) args() []string {
	var names []string
	for _, p := range t.parts {
		if p.arg != "" {
			names = append(names, p.arg)
		}
	}
	return names
}

// whole returns the argument name if the template is exactly one
// placeholder.
func (t template) whole() (string, bool) {
	if len(t.parts) == 1 && t.parts[0].arg != "" {
		return t.parts[0].arg, true
	}
	return "", false
}

// expand fills the placeholders from args. ok is false if a placeholder
// names an argument that is absent (or null).
func (t template) expand(args map[string]any) (s string, ok bool) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.arg == "" {
			b.WriteString(p.lit)
			continue
		}
		v, present := args[p.arg]
		if !present || v == nil {
			return "", false
		}
		b.WriteString(format(v))
	}
	return b.String(), true
}

// expandOr is expand with absent arguments rendered as "".
func (t template) expandOr(args map[string]any) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.arg == "" {
			b.WriteString(p.lit)
		} else if v := args[p.arg]; v != nil {
			b.WriteString(format(v))
		}
	}
	return b.String()
}

// format renders an argument value as text: a string as it is, a number
// in canonical decimal (see formatNumber), a boolean as true or false, an
// array or object as compact JSON, its numbers canonical too.
func format(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case json.Number, float64, int, int64:
		return string(canonical(v).(json.Number))
	}
	b, err := json.Marshal(canonical(v))
	if err != nil {
		return ""
	}
	return string(b)
}

// canonical returns v with every number, however deep, as the json.Number
// formatNumber makes of it, so that two spellings of one value (1, 1.0,
// 1e0; 0 and -0) give one text. Other values are returned as they are;
// maps and slices are copied, never changed in place.
func canonical(v any) any {
	switch v := v.(type) {
	case json.Number:
		return json.Number(formatNumber(string(v)))
	case float64:
		return json.Number(formatFloat(v))
	case int:
		return json.Number(strconv.Itoa(v))
	case int64:
		return json.Number(strconv.FormatInt(v, 10))
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = canonical(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = canonical(e)
		}
		return out
	}
	return v
}

// maxIntegerDigits bounds the digits formatNumber writes out for an
// integer given with an exponent (1e400); past it, the value is written as
// a float64 would be. float64's largest value has 309 digits.
const maxIntegerDigits = 400

// formatNumber writes the JSON number s in a canonical form: an integer
// (by value: 100 for 1e2 and 100.0) as its exact decimal digits, and zero
// as 0, never -0, so that no integer a schema's minimum: 0 admits looks
// like an option; any other number as formatFloat writes its float64. An
// s that is not a JSON number is returned as it is.
func formatNumber(s string) string {
	m := numberRE.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	exp := 0
	if m[4] != "" {
		e, err := strconv.Atoi(m[4])
		if err != nil || e > maxExponent || e < -maxExponent {
			return floatText(s)
		}
		exp = e
	}
	digits := strings.TrimLeft(m[2]+m[3], "0")
	exp -= len(m[3])
	if digits == "" {
		return "0"
	}
	if exp < 0 { // an integer only if the digits past the point are zeros
		n := len(digits) + exp
		if n <= 0 || strings.TrimRight(digits[n:], "0") != "" {
			return floatText(s)
		}
		digits, exp = digits[:n], 0
	}
	if len(digits)+exp > maxIntegerDigits {
		return floatText(s)
	}
	return m[1] + digits + strings.Repeat("0", exp)
}

// numberRE matches a JSON number: its sign, integer digits, fraction
// digits and exponent.
var numberRE = regexp.MustCompile(`^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$`)

// maxExponent bounds the exponent formatNumber works with digit by digit.
const maxExponent = 1 << 20

// floatText writes the number s as formatFloat writes its float64, or
// returns s if it is out of float64's range.
func floatText(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return formatFloat(f)
}

// formatFloat writes f in plain decimal, as JavaScript does, but for a
// fraction under 1e-6, which gets an exponent (1e-07): an integral f as
// its exact digits (1 for 1.0, 1000000000000000000000 for 1e21), and zero
// as 0, never -0.
func formatFloat(f float64) string {
	if f == 0 {
		return "0"
	}
	if math.Abs(f) < 1e-6 {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
