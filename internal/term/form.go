package term

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the kind of value a form field takes.
type Kind int

// The kinds of fields an elicitation form may have.
const (
	String Kind = iota
	Number
	Integer
	Boolean
	// Enum is one of Options (a string with enum or oneOf).
	Enum
	// MultiEnum is a list of Options (an array whose items have enum or
	// anyOf).
	MultiEnum
)

// Option is a value of an Enum or MultiEnum field.
type Option struct {
	Value string
	Title string // shown instead of Value, if set
}

func (o Option) label() string {
	if o.Title != "" && o.Title != o.Value {
		return o.Title
	}
	return o.Value
}

// Field is one property of a form's requestedSchema.
type Field struct {
	Name        string
	Title       string
	Description string
	Kind        Kind
	Required    bool
	// Default is the value taken on empty input, or nil. Its type is the
	// one Parse returns for the field's kind.
	Default any
	// Format of a string: email, uri, date or date-time ("" for any).
	Format               string
	MinLength, MaxLength *int
	Minimum, Maximum     *float64
	Options              []Option
	MinItems, MaxItems   *int
}

// Form is a requestedSchema: the fields of a flat object, in the order the
// schema lists them.
type Form struct {
	Fields []*Field
}

// Field returns the field called name, or nil.
func (f *Form) Field(name string) *Field {
	for _, fl := range f.Fields {
		if fl.Name == name {
			return fl
		}
	}
	return nil
}

// HasRequired reports whether some field is required.
func (f *Form) HasRequired() bool {
	return slices.ContainsFunc(f.Fields, func(fl *Field) bool { return fl.Required })
}

// Check reports the required fields that content lacks.
func (f *Form) Check(content map[string]any) error {
	var missing []string
	for _, fl := range f.Fields {
		if _, ok := content[fl.Name]; fl.Required && !ok {
			missing = append(missing, fl.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing required field %s", strings.Join(missing, ", "))
	}
	return nil
}

// propSchema is the JSON of one property of a requestedSchema: the
// primitive schemas of elicitation (string, number, integer, boolean,
// single- and multi-select enums, with or without titles).
type propSchema struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	Default     json.RawMessage `json:"default"`
	Enum        []any           `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []constSchema   `json:"oneOf"`
	AnyOf       []constSchema   `json:"anyOf"`
	Items       *propSchema     `json:"items"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
}

type constSchema struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// options returns the choices of an enum schema: enum (with the legacy
// enumNames as titles), oneOf or anyOf of consts.
func (p *propSchema) options() []Option {
	var out []Option
	for i, v := range p.Enum {
		o := Option{Value: fmt.Sprint(v)}
		if i < len(p.EnumNames) {
			o.Title = p.EnumNames[i]
		}
		out = append(out, o)
	}
	for _, c := range append(slices.Clone(p.OneOf), p.AnyOf...) {
		out = append(out, Option{Value: fmt.Sprint(c.Const), Title: c.Title})
	}
	return out
}

// ParseSchema reads a requestedSchema: an object schema whose properties
// are primitive schemas. A missing or null schema is a form without
// fields. Properties keep the order of the JSON text.
func ParseSchema(raw json.RawMessage) (*Form, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return &Form{}, nil
	}
	var s struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("requestedSchema: %w", err)
	}
	if s.Type != "" && s.Type != "object" {
		return nil, fmt.Errorf("requestedSchema: type %q, want object", s.Type)
	}
	names, props, err := orderedObject(s.Properties)
	if err != nil {
		return nil, fmt.Errorf("requestedSchema properties: %w", err)
	}
	form := &Form{}
	for _, name := range names {
		var p propSchema
		if err := json.Unmarshal(props[name], &p); err != nil {
			return nil, fmt.Errorf("requestedSchema property %q: %w", name, err)
		}
		fl, err := newField(name, &p)
		if err != nil {
			return nil, fmt.Errorf("requestedSchema property %q: %w", name, err)
		}
		fl.Required = slices.Contains(s.Required, name)
		form.Fields = append(form.Fields, fl)
	}
	return form, nil
}

// orderedObject decodes a JSON object into its members, with their keys
// in the order of the text. A missing object has no members.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	members := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, members, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := members[key]; !dup {
			keys = append(keys, key)
		}
		members[key] = v
	}
	return keys, members, nil
}

func newField(name string, p *propSchema) (*Field, error) {
	fl := &Field{
		Name: name, Title: p.Title, Description: p.Description, Format: p.Format,
		MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum,
		MinItems: p.MinItems, MaxItems: p.MaxItems,
	}
	switch {
	case p.Type == "array":
		if p.Items == nil {
			return nil, errors.New("an array without items")
		}
		fl.Kind, fl.Options = MultiEnum, p.Items.options()
		if len(fl.Options) == 0 {
			return nil, errors.New("an array whose items have no enum or anyOf")
		}
	case len(p.Enum) > 0 || len(p.OneOf) > 0 || len(p.AnyOf) > 0:
		fl.Kind, fl.Options = Enum, p.options()
	case p.Type == "boolean":
		fl.Kind = Boolean
	case p.Type == "number":
		fl.Kind = Number
	case p.Type == "integer":
		fl.Kind = Integer
	default: // "string", and anything else a person can type
		fl.Kind = String
	}
	if len(p.Default) > 0 && string(p.Default) != "null" {
		d, err := fl.defaultValue(p.Default)
		if err != nil {
			return nil, fmt.Errorf("default: %w", err)
		}
		fl.Default = d
	}
	return fl, nil
}

// defaultValue converts a schema's default to the type Parse returns.
func (f *Field) defaultValue(raw json.RawMessage) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string:
		if f.Kind == MultiEnum {
			return nil, fmt.Errorf("%q is not a list", x)
		}
		return f.Parse(x)
	case bool:
		if f.Kind != Boolean {
			return nil, fmt.Errorf("%v is not a %s", x, f.kindName())
		}
		return x, nil
	case json.Number:
		return f.Parse(x.String())
	case []any:
		if f.Kind != MultiEnum {
			return nil, fmt.Errorf("a list for a %s", f.kindName())
		}
		var parts []string
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return f.parseList(parts)
	}
	return nil, fmt.Errorf("%s for a %s", raw, f.kindName())
}

func (f *Field) kindName() string {
	switch f.Kind {
	case Number:
		return "number"
	case Integer:
		return "integer"
	case Boolean:
		return "boolean"
	case Enum:
		return "choice"
	case MultiEnum:
		return "list of choices"
	}
	return "string"
}

// Parse validates s, typed for the field, and returns its value: a string,
// float64, int64, bool, the chosen option's value, or a []any of them. An
// enum takes the number of a choice, its value or its title; a list takes
// them separated by commas; a boolean takes y/yes/true/1 or n/no/false/0.
func (f *Field) Parse(s string) (any, error) {
	s = strings.TrimSpace(s)
	switch f.Kind {
	case Boolean:
		switch strings.ToLower(s) {
		case "y", "yes", "true", "t", "1", "on":
			return true, nil
		case "n", "no", "false", "f", "0", "off":
			return false, nil
		}
		return nil, fmt.Errorf("%s: answer y or n", f.Name)
	case Number, Integer:
		return f.parseNumber(s)
	case Enum:
		o, err := f.parseOption(s)
		if err != nil {
			return nil, err
		}
		return o.Value, nil
	case MultiEnum:
		var parts []string
		for p := range strings.SplitSeq(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		return f.parseList(parts)
	}
	return f.parseString(s)
}

func (f *Field) parseNumber(s string) (any, error) {
	var v float64
	var out any
	if f.Kind == Integer {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a whole number", f.Name, s)
		}
		v, out = float64(n), n
	} else {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return nil, fmt.Errorf("%s: %q is not a number", f.Name, s)
		}
		v, out = n, n
	}
	if f.Minimum != nil && v < *f.Minimum {
		return nil, fmt.Errorf("%s: %s is less than the minimum %s", f.Name, s, fmtNum(*f.Minimum))
	}
	if f.Maximum != nil && v > *f.Maximum {
		return nil, fmt.Errorf("%s: %s is more than the maximum %s", f.Name, s, fmtNum(*f.Maximum))
	}
	return out, nil
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (f *Field) parseString(s string) (any, error) {
	n := utf8.RuneCountInString(s)
	if f.MinLength != nil && n < *f.MinLength {
		return nil, fmt.Errorf("%s: at least %d characters, please", f.Name, *f.MinLength)
	}
	if f.MaxLength != nil && n > *f.MaxLength {
		return nil, fmt.Errorf("%s: at most %d characters, please", f.Name, *f.MaxLength)
	}
	var bad bool
	switch f.Format {
	case "email":
		a, err := mail.ParseAddress(s)
		bad = err != nil || a.Address != s
	case "uri":
		u, err := url.Parse(s)
		bad = err != nil || u.Scheme == ""
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		bad = err != nil
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		bad = err != nil
	}
	if bad {
		return nil, fmt.Errorf("%s: %q is not a valid %s (%s)", f.Name, s, f.Format, formatExample(f.Format))
	}
	return s, nil
}

func formatExample(format string) string {
	switch format {
	case "email":
		return "like ada@example.com"
	case "uri":
		return "like https://example.com/x"
	case "date":
		return "like 2026-07-28"
	case "date-time":
		return "like 2026-07-28T10:30:00Z"
	}
	return format
}

// parseOption matches s against the options: a number from 1, a value or
// a title (case-insensitively).
func (f *Field) parseOption(s string) (Option, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.Options) {
		return f.Options[n-1], nil
	}
	for _, o := range f.Options {
		if s == o.Value {
			return o, nil
		}
	}
	for _, o := range f.Options {
		if strings.EqualFold(s, o.Value) || (o.Title != "" && strings.EqualFold(s, o.Title)) {
			return o, nil
		}
	}
	return Option{}, fmt.Errorf("%s: %q is not a choice; type a number from 1 to %d", f.Name, s, len(f.Options))
}

func (f *Field) parseList(parts []string) (any, error) {
	out := []any{}
	seen := map[string]bool{}
	for _, p := range parts {
		o, err := f.parseOption(p)
		if err != nil {
			return nil, err
		}
		if !seen[o.Value] {
			seen[o.Value] = true
			out = append(out, o.Value)
		}
	}
	if f.MinItems != nil && len(out) < *f.MinItems {
		return nil, fmt.Errorf("%s: choose at least %d", f.Name, *f.MinItems)
	}
	if f.MaxItems != nil && len(out) > *f.MaxItems {
		return nil, fmt.Errorf("%s: choose at most %d", f.Name, *f.MaxItems)
	}
	return out, nil
}

// Hint is a short description of what the field takes, as shown in a
// prompt: "y/n", "whole number 1-10", "email".
func (f *Field) Hint() string {
	switch f.Kind {
	case Boolean:
		switch f.Default {
		case true:
			return "Y/n"
		case false:
			return "y/N"
		}
		return "y/n"
	case Number, Integer:
		h := "number"
		if f.Kind == Integer {
			h = "whole number"
		}
		switch {
		case f.Minimum != nil && f.Maximum != nil:
			h += " " + fmtNum(*f.Minimum) + "-" + fmtNum(*f.Maximum)
		case f.Minimum != nil:
			h += " ≥ " + fmtNum(*f.Minimum)
		case f.Maximum != nil:
			h += " ≤ " + fmtNum(*f.Maximum)
		}
		return h
	case Enum:
		return fmt.Sprintf("1-%d", len(f.Options))
	case MultiEnum:
		return fmt.Sprintf("1-%d, separated by commas", len(f.Options))
	}
	var hs []string
	if f.Format != "" {
		hs = append(hs, f.Format)
	}
	if f.MinLength != nil && f.MaxLength != nil {
		hs = append(hs, fmt.Sprintf("%d-%d characters", *f.MinLength, *f.MaxLength))
	} else if f.MinLength != nil && *f.MinLength > 0 {
		hs = append(hs, fmt.Sprintf("at least %d characters", *f.MinLength))
	} else if f.MaxLength != nil {
		hs = append(hs, fmt.Sprintf("at most %d characters", *f.MaxLength))
	}
	return strings.Join(hs, ", ")
}

// Placeholder is how the field's value is written in a usage line:
// "<boolean>", "<a|b|c>".
func (f *Field) Placeholder() string {
	switch f.Kind {
	case Enum, MultiEnum:
		var vs []string
		for _, o := range f.Options {
			vs = append(vs, o.Value)
		}
		return "<" + strings.Join(vs, "|") + ">"
	case String:
		if f.Format != "" {
			return "<" + f.Format + ">"
		}
	}
	return "<" + f.kindName() + ">"
}

// Prompt is the question line of the field:
// "overwrite [y/n]: ", "color (optional) [1-3, default 2]: ".
func (f *Field) Prompt() string {
	var b strings.Builder
	b.WriteString(cmpOr(f.Title, f.Name))
	if !f.Required {
		b.WriteString(" (optional)")
	}
	var br []string
	if h := f.Hint(); h != "" {
		br = append(br, h)
	}
	if f.Default != nil && f.Kind != Boolean {
		br = append(br, "default "+f.defaultText())
	}
	if len(br) > 0 {
		b.WriteString(" [" + strings.Join(br, ", ") + "]")
	}
	b.WriteString(": ")
	return b.String()
}

func (f *Field) defaultText() string {
	switch d := f.Default.(type) {
	case string:
		if f.Kind == Enum {
			for i, o := range f.Options {
				if o.Value == d {
					return fmt.Sprintf("%d (%s)", i+1, o.label())
				}
			}
		}
		return d
	case []any:
		var parts []string
		for _, v := range d {
			parts = append(parts, fmt.Sprint(v))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(f.Default)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
