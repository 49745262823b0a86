package cmdtool

import (
	"encoding/json"
	"math"
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
// in plain decimal, a boolean as true or false, an array or object as
// compact JSON.
func format(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		if !strings.ContainsAny(string(v), ".eE") {
			return string(v) // an integer, exact however long
		}
		if f, err := v.Float64(); err == nil {
			return formatFloat(f)
		}
		return string(v)
	case float64:
		return formatFloat(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// formatFloat writes f without an exponent unless it is huge or tiny, as
// JavaScript does: 1 for 1.0, 0.25, 1e+21.
func formatFloat(f float64) string {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
