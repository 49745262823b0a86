package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// parseArguments builds a tool's arguments: the JSON object base (the
// --args flag; "" for none), with key=value pairs set over it in order.
// A value that parses as JSON is taken as that JSON (numbers, true,
// false, null, "quoted strings", objects, arrays); anything else is a
// string. So rows=5 is the number 5, name=Ada the string "Ada", and
// id='"5"' the string "5".
func parseArguments(base string, pairs []string) (map[string]any, error) {
	args := map[string]any{}
	if strings.TrimSpace(base) != "" {
		v, err := decodeJSON(base)
		if err != nil {
			return nil, fmt.Errorf("--args: %w", err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("--args: want a JSON object, got %s", base)
		}
		args = m
	}
	for _, p := range pairs {
		key, value, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("argument %q: want key=value", p)
		}
		if key == "" {
			return nil, fmt.Errorf("argument %q: empty key", p)
		}
		if v, err := decodeJSON(value); err == nil {
			args[key] = v
		} else {
			args[key] = value
		}
	}
	return args, nil
}

// decodeJSON decodes one JSON value, keeping numbers as written.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() || dec.InputOffset() != int64(len(bytes.TrimRight([]byte(s), " \t\r\n"))) {
		return nil, fmt.Errorf("%q: trailing data after the JSON value", s)
	}
	return v, nil
}
