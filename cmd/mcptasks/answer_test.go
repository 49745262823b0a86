package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/term"
)

func TestFormContent(t *testing.T) {
	t.Parallel()
	form, err := term.ParseSchema(json.RawMessage(`{"type":"object","properties":{
		"overwrite":{"type":"boolean"},
		"rows":{"type":"integer","default":10},
		"name":{"type":"string"}},"required":["overwrite"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		pairs []string
		want  map[string]any
		err   string
	}{
		{name: "Boolean", pairs: []string{"overwrite=y"}, want: map[string]any{"overwrite": true, "rows": int64(10)}},
		{name: "AllFields", pairs: []string{"overwrite=false", "rows=3", "name=123"}, want: map[string]any{"overwrite": false, "rows": int64(3), "name": "123"}},
		{name: "MissingRequired", pairs: []string{"rows=3"}, err: "missing required field overwrite"},
		{name: "UnknownField", pairs: []string{"overwrite=y", "color=red"}, err: `no field "color"; the form has: overwrite, rows, name`},
		{name: "BadValue", pairs: []string{"overwrite=perhaps"}, err: "answer y or n"},
		{name: "NotAPair", pairs: []string{"overwrite"}, err: "want field=value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := formContent(form, tc.pairs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("formContent = %v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("formContent = %#v, %v; want %#v", got, err, tc.want)
			}
		})
	}
}

// TestExplainTaskError: -32602 for a task id is explained as an unknown
// task; a -32602 about the answers of a tasks/update keeps the server's
// own words, which name the field to fix.
func TestExplainTaskError(t *testing.T) {
	t.Parallel()
	const unknown = "is unknown to the server"
	for _, tc := range []struct {
		err     error
		explain bool
	}{
		{&client.Error{Code: client.CodeInvalidParams, Message: "Invalid params: task not found"}, true},
		{&client.Error{Code: client.CodeInvalidParams, Message: `params.inputResponses["age"]: type: want "integer"; the input is still waiting for a valid answer`}, false},
		{&client.Error{Code: client.CodeInternalError, Message: "Internal error"}, false},
	} {
		got := explainTaskError("T1", tc.err).Error()
		if strings.Contains(got, unknown) != tc.explain {
			t.Errorf("explainTaskError(%v) = %q; explained as unknown: %v, want %v", tc.err, got, !tc.explain, tc.explain)
		}
	}
}
