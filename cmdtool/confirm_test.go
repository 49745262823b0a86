package cmdtool

import (
	"encoding/json"
	"testing"
)

// TestConfirmState checks what a confirmation's requestState binds: the
// tool and the arguments as the command gets them, not their spelling.
func TestConfirmState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := Parse(dir+"/tools.yaml", []byte(`tools:
  - name: head
    input_schema:
      type: object
      properties:
        n: {type: integer, minimum: 0, default: 10}
        file: {type: string}
    argv: [head, -n, "{n}", --, "{file}"]
    confirm: Show {n} lines of {file}?
  - name: tail
    input_schema:
      type: object
      properties:
        n: {type: integer, minimum: 0, default: 10}
        file: {type: string}
    argv: [tail, -n, "{n}", --, "{file}"]
    confirm: Show {n} lines of {file}?
`))
	if err != nil {
		t.Fatal(err)
	}
	head, tail := cfg.Tools[0], cfg.Tools[1]
	state := func(tool *Tool, raw string) string {
		args, err := tool.args(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return tool.confirmState(args)
	}
	base := state(head, `{"n":3,"file":"a"}`)
	for _, c := range []struct {
		name string
		tool *Tool
		args string
		same bool
	}{
		{"keys reordered", head, `{"file":"a","n":3}`, true},
		{"3.0", head, `{"n":3.0,"file":"a"}`, true},
		{"0.3e1", head, `{"n":0.3e1,"file":"a"}`, true},
		{"another file", head, `{"n":3,"file":"b"}`, false},
		{"another count", head, `{"n":4,"file":"a"}`, false},
		{"the default left out", head, `{"file":"a"}`, false},
		{"another tool", tail, `{"n":3,"file":"a"}`, false},
	} {
		if got := state(c.tool, c.args) == base; got != c.same {
			t.Errorf("%s: same state as {n:3, file:a} = %v, want %v", c.name, got, c.same)
		}
	}
	if state(head, `{"file":"a"}`) != state(head, `{"file":"a","n":10}`) {
		t.Error("the default left out and given: different states")
	}
	if state(head, `{"n":-0,"file":"a"}`) != state(head, `{"n":0,"file":"a"}`) {
		t.Error("-0 and 0: different states")
	}
}
