package cmdtool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/mcpserver"
)

func TestParse_AllFields(t *testing.T) {
	t.Parallel()
	const src = `
tools:
  - name: run_tests
    description: Run the tests.
    input_schema:
      type: object
      properties:
        dir: {type: string}
        run: {type: string}
        count: {type: integer, default: 1}
      required: [dir]
    argv: [go, test, "-count={count}", "-run={run}", ./...]
    dir: "{dir}"
    env: {GOFLAGS: "-mod=mod", LABEL: "tests of {dir}"}
    env_args: true
    inherit_env: [GOPROXY]
    timeout: 30m
    ttl: 24h
    poll_interval: 2s
    task: optional
    retry: {rerun: true, max_attempts: 5}
    confirm: Run the tests in {dir}?
    progress: '^(?:ok|FAIL)\s'
    output_limit: 1MiB
    grace: 0s
  - name: minimal
    argv: [printf, hello]
    ttl: none
`
	cfg, err := Parse("tools.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tools) != 2 {
		t.Fatalf("got %d tools, want 2", len(cfg.Tools))
	}
	a, b := cfg.Tools[0], cfg.Tools[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", a.Name, "run_tests"},
		{"line", a.Line, 3},
		{"argv", strings.Join(a.Argv, " "), "go test -count={count} -run={run} ./..."},
		{"dir", a.Dir, "{dir}"},
		{"env", a.Env["LABEL"], "tests of {dir}"},
		{"env_args", a.EnvArgs, true},
		{"inherit_env", strings.Join(a.InheritEnv, ","), "GOPROXY"},
		{"timeout", a.Timeout, 30 * time.Minute},
		{"ttl", a.TTL, 24 * time.Hour},
		{"poll_interval", a.PollInterval, 2 * time.Second},
		{"task", a.Task, mcpserver.TaskOptional},
		{"rerun", a.Retry.Rerun, true},
		{"max_attempts", a.Retry.MaxAttempts, 5},
		{"confirm", a.Confirm, "Run the tests in {dir}?"},
		{"progress", a.Progress.String(), `^(?:ok|FAIL)\s`},
		{"output_limit", a.OutputLimit, 1 << 20},
		{"grace", a.Grace, time.Duration(0)},
		{"default task", b.Task, mcpserver.TaskRequired},
		{"default output_limit", b.OutputLimit, DefaultOutputLimit},
		{"default grace", b.Grace, DefaultGrace},
		{"ttl none", b.TTL < 0, true},
		{"default schema", b.InputSchema["type"], "object"},
		{"default description", b.Description, "Runs: printf hello"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if !filepath.IsAbs(a.c.program) || filepath.Base(a.c.program) != "go" {
		t.Errorf("program resolved to %q, want an absolute path to go", a.c.program)
	}
}

// TestParse_Errors checks that each bad field is reported with the file,
// the line and the field.
func TestParse_Errors(t *testing.T) {
	t.Parallel()
	// Each case is one tool appended to a valid first tool (lines 2-3),
	// so the bad tool starts at line 4.
	const prefix = "tools:\n  - name: ok\n    argv: [printf, ok]\n"
	cases := []struct {
		name string
		tool string // the YAML of tools[1], from line 4
		want string // the start of one error
		msg  string // a part of its message
	}{
		{"timeout not a duration", "  - name: x\n    argv: [printf]\n    timeout: 5 minutes\n",
			"tools.yaml:6: tools[1].timeout: ", `"5 minutes" is not a duration (use e.g. 5m)`},
		{"timeout a bare number", "  - name: x\n    argv: [printf]\n    timeout: 300\n",
			"tools.yaml:6: tools[1].timeout: ", `"300" is not a duration`},
		{"negative grace", "  - name: x\n    argv: [printf]\n    grace: -1s\n",
			"tools.yaml:6: tools[1].grace: ", "-1s: must not be negative (0 is allowed)"},
		{"grace too long", "  - name: x\n    argv: [printf]\n    grace: 2m\n",
			"tools.yaml:6: tools[1].grace: ", "2m0s is too long; use at most 1m0s"},
		{"zero timeout", "  - name: x\n    argv: [printf]\n    timeout: 0s\n",
			"tools.yaml:6: tools[1].timeout: ", "0s: must be positive (leave tools[1].timeout out for its default)"},
		{"env_args clash", "  - name: x\n    input_schema: {type: object, properties: {a-b: {type: string}, a_b: {type: string}}}\n    argv: [printf]\n    env_args: true\n",
			"tools.yaml:7: tools[1].env_args: ", `properties "a-b" and "a_b" would both be passed in MCPTASKS_ARG_A_B`},
		{"unknown field", "  - name: x\n    argv: [printf]\n    timout: 5m\n",
			"tools.yaml:6: tools[1].timout: ", "unknown field; did you mean timeout?"},
		{"field twice", "  - name: x\n    argv: [printf]\n    name: y\n",
			"tools.yaml:6: tools[1].name: ", "given twice"},
		{"bad regexp", "  - name: x\n    argv: [printf]\n    progress: '(unclosed'\n",
			"tools.yaml:6: tools[1].progress: ", "not a valid regular expression"},
		{"unknown placeholder", "  - name: x\n    argv: [printf, '%s', '{nope}']\n",
			"tools.yaml:5: tools[1].argv[2]: ", "placeholder {nope} names no property of input_schema"},
		{"unknown placeholder in dir", "  - name: x\n    input_schema: {type: object, properties: {a: {type: string}}}\n    argv: [printf]\n    dir: '{b}'\n",
			"tools.yaml:7: tools[1].dir: ", "placeholder {b} names no property of input_schema (it has: a)"},
		{"unknown placeholder in env", "  - name: x\n    argv: [printf]\n    env:\n      A: '{b}'\n",
			"tools.yaml:7: tools[1].env.A: ", "placeholder {b}"},
		{"unknown placeholder in confirm", "  - name: x\n    argv: [printf]\n    confirm: 'Sure about {b}?'\n",
			"tools.yaml:6: tools[1].confirm: ", "placeholder {b}"},
		{"duplicate name", "  - name: ok\n    argv: [printf]\n",
			"tools.yaml:4: tools[1].name: ", `"ok" is already the name of tools[0] (line 2)`},
		{"invalid name", "  - name: bad name\n    argv: [printf]\n",
			"tools.yaml:4: tools[1].name: ", "not a valid tool name"},
		{"missing name", "  - argv: [printf]\n",
			"tools.yaml:4: tools[1].name: ", "missing"},
		{"missing argv", "  - name: x\n",
			"tools.yaml:4: tools[1].argv: ", "missing"},
		{"empty argv", "  - name: x\n    argv: []\n",
			"tools.yaml:5: tools[1].argv: ", "is empty"},
		{"argv not a list", "  - name: x\n    argv: printf hello\n",
			"tools.yaml:5: tools[1].argv: ", "want a list of strings"},
		{"argv entry a mapping", "  - name: x\n    argv: [printf, {a: b}]\n",
			"tools.yaml:5: tools[1].argv[1]: ", "want a string"},
		{"program from an argument", "  - name: x\n    input_schema: {type: object, properties: {p: {type: string}}}\n    argv: ['{p}']\n",
			"tools.yaml:6: tools[1].argv[0]: ", "cannot come from an argument"},
		{"program not in PATH", "  - name: x\n    argv: [no-such-program-mcptasks]\n",
			"tools.yaml:5: tools[1].argv[0]: ", `"no-such-program-mcptasks" not found in PATH`},
		{"program path missing", "  - name: x\n    argv: [./no-such-script.sh]\n",
			"tools.yaml:5: tools[1].argv[0]: ", "no such file"},
		{"bad task mode", "  - name: x\n    argv: [printf]\n    task: sometimes\n",
			"tools.yaml:6: tools[1].task: ", `"sometimes" is not a task mode; use never, optional or required`},
		{"schema not an object type", "  - name: x\n    input_schema: {type: array}\n    argv: [printf]\n",
			"tools.yaml:5: tools[1].input_schema.type: ", `must be "object"`},
		{"schema invalid", "  - name: x\n    input_schema: {type: object, properties: {a: {type: string, pattern: '('}}}\n    argv: [printf]\n",
			"tools.yaml:5: tools[1].input_schema: ", "invalid JSON Schema"},
		{"schema default invalid", "  - name: x\n    input_schema: {type: object, properties: {a: {type: integer, default: two}}}\n    argv: [printf]\n",
			"tools.yaml:5: tools[1].input_schema: ", "invalid JSON Schema"},
		{"schema unknown type", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        mode: {type: stringy}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.mode.type: ", `"stringy" is not a JSON Schema type (array, boolean, integer, null, number, object, string)`},
		{"schema unknown type in a list", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        n:\n          type: [integer, nul]\n    argv: [printf]\n",
			"tools.yaml:9: tools[1].input_schema.properties.n.type: ", `"nul" is not a JSON Schema type`},
		{"schema required not a list", "  - name: x\n    input_schema: {type: object, required: a}\n    argv: [printf]\n",
			"tools.yaml:5: tools[1].input_schema.required: ", `"a": want a list of property names`},
		{"schema items not a schema", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        l: {type: array, items: [1]}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.l.items: ", "a list is not a schema"},
		{"schema minLength negative", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        s: {type: string, minLength: -1}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.s.minLength: ", `"-1": want a whole number, 0 or more`},
		{"schema in allOf", "  - name: x\n    input_schema:\n      type: object\n      allOf:\n        - {properties: {a: {type: text}}}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.allOf[0].properties.a.type: ", `"text" is not a JSON Schema type`},
		{"max_attempts zero", "  - name: x\n    argv: [printf]\n    retry: {rerun: true, max_attempts: 0}\n",
			"tools.yaml:6: tools[1].retry.max_attempts: ", "must be at least 1"},
		{"max_attempts without rerun", "  - name: x\n    argv: [printf]\n    retry:\n      max_attempts: 2\n",
			"tools.yaml:7: tools[1].retry.max_attempts: ", "only applies with rerun: true"},
		{"retry unknown key", "  - name: x\n    argv: [printf]\n    retry:\n      rerun: true\n      attempts: 2\n",
			"tools.yaml:8: tools[1].retry.attempts: ", "unknown field; did you mean max_attempts?"},
		{"rerun not a bool", "  - name: x\n    argv: [printf]\n    retry: {rerun: sure}\n",
			"tools.yaml:6: tools[1].retry.rerun: ", `want true or false, got "sure"`},
		{"ttl with task never", "  - name: x\n    argv: [printf]\n    task: never\n    ttl: 1h\n",
			"tools.yaml:7: tools[1].ttl: ", "has no effect with task: never"},
		{"poll_interval too short", "  - name: x\n    argv: [printf]\n    poll_interval: 10us\n",
			"tools.yaml:6: tools[1].poll_interval: ", "too short"},
		{"output_limit not a size", "  - name: x\n    argv: [printf]\n    output_limit: lots\n",
			"tools.yaml:6: tools[1].output_limit: ", `"lots" is not a size`},
		{"output_limit too big", "  - name: x\n    argv: [printf]\n    output_limit: 1000MiB\n",
			"tools.yaml:6: tools[1].output_limit: ", "1000MiB is out of range: the allowed range is 1 byte to 16MiB"},
		{"output_limit in GiB", "  - name: x\n    argv: [printf]\n    output_limit: 1GiB\n",
			"tools.yaml:6: tools[1].output_limit: ", "1GiB is out of range: the allowed range is 1 byte to 16MiB"},
		{"output_limit unknown unit", "  - name: x\n    argv: [printf]\n    output_limit: 1PB\n",
			"tools.yaml:6: tools[1].output_limit: ", `1PB: unknown unit "PB" (use B, KB, KiB, MB, MiB, GB or GiB)`},
		{"output_limit fraction", "  - name: x\n    argv: [printf]\n    output_limit: 1.5MiB\n",
			"tools.yaml:6: tools[1].output_limit: ", `"1.5MiB" is not a size`},
		{"env bad name", "  - name: x\n    argv: [printf]\n    env: {1X: a}\n",
			"tools.yaml:6: tools[1].env.1X: ", "not a valid variable name"},
		{"env not a mapping", "  - name: x\n    argv: [printf]\n    env: [A=b]\n",
			"tools.yaml:6: tools[1].env: ", "want a mapping"},
		{"env_args not a bool", "  - name: x\n    argv: [printf]\n    env_args: yes please\n",
			"tools.yaml:6: tools[1].env_args: ", "want true or false"},
		{"inherit_env bad name", "  - name: x\n    argv: [printf]\n    inherit_env: [GO-FLAGS]\n",
			"tools.yaml:6: tools[1].inherit_env[0]: ", "not a valid variable name"},
		{"empty confirm", "  - name: x\n    argv: [printf]\n    confirm: ' '\n",
			"tools.yaml:6: tools[1].confirm: ", "is empty"},
		{"tool not a mapping", "  - just a string\n",
			"tools.yaml:4: tools[1]: ", "want a mapping"},
		// A misspelt keyword would be an annotation, and drop its check.
		{"schema pattern misspelt", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        name: {type: string, patern: '^[a-z]+$'}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.name.patern: ", "unknown JSON Schema keyword; did you mean pattern?"},
		{"schema maxLength misspelt", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        name:\n          type: string\n          maxLenght: 8\n    argv: [printf]\n",
			"tools.yaml:10: tools[1].input_schema.properties.name.maxLenght: ", "did you mean maxLength?"},
		{"schema type swapped", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        n: {tpye: integer}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.n.tpye: ", "did you mean type?"},
		{"schema required misspelt", "  - name: x\n    input_schema:\n      type: object\n      requird: [a]\n    argv: [printf]\n",
			"tools.yaml:7: tools[1].input_schema.requird: ", "did you mean required?"},
		{"schema enum plural", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        t: {type: string, enums: [a, b]}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.t.enums: ", "did you mean enum?"},
		{"schema keyword capitalised", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        n: {type: integer, Minimum: 0}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.n.Minimum: ", "did you mean minimum?"},
		{"schema ref without $", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        n: {ref: '#/$defs/n'}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.n.ref: ", "did you mean $ref?"},
		{"schema misspelt in items", "  - name: x\n    input_schema:\n      type: object\n      properties:\n        l: {type: array, items: {type: string, patterm: '^a$'}}\n    argv: [printf]\n",
			"tools.yaml:8: tools[1].input_schema.properties.l.items.patterm: ", "did you mean pattern?"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("tools.yaml", []byte(prefix+c.tool))
			if err == nil {
				t.Fatalf("no error, want %s%s", c.want, c.msg)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(line, c.want) && strings.Contains(line, c.msg) {
					return
				}
			}
			t.Errorf("error:\n%v\nwant a line starting %q containing %q", err, c.want, c.msg)
		})
	}
}

// TestParse_SchemaAnnotations checks that keys JSON Schema does not define
// still pass when they are not a near miss of a keyword that checks
// something: annotations, of the draft's or one's own.
func TestParse_SchemaAnnotations(t *testing.T) {
	t.Parallel()
	for _, kv := range []string{
		"title: Name", "description: The name.", "examples: [ann]", "$comment: why", "deprecated: true", "readOnly: false", "writeOnly: false",
		"x-patern: '^a$'", "x-ui: {widget: text}", "example: ann", "comment: why", "descripton: The name.",
		"note: one word", "unit: bytes", "id: name", "kind: label", "widget: text", "nullable: true",
	} {
		t.Run(kv, func(t *testing.T) {
			t.Parallel()
			src := "tools:\n  - name: x\n    input_schema:\n      type: object\n      properties:\n        a:\n          type: string\n          " +
				kv + "\n    argv: [printf, '{a}']\n"
			if _, err := Parse("tools.yaml", []byte(src)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestParse_FileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src, want string
	}{
		{"empty file", "", "tools.yaml:1: tools: missing"},
		{"no tools key", "tool:\n  - name: x\n", "tools.yaml:1: tool: unknown field; did you mean tools?"},
		{"tools not a list", "tools: {name: x}\n", "tools.yaml:1: tools: want a list of tools"},
		{"empty list", "tools: []\n", "tools.yaml:1: tools: the list is empty"},
		{"top level a list", "- name: x\n", "tools.yaml:1: want a mapping"},
		{"syntax error", "tools:\n  - name: x\n    argv: [printf\n", "tools.yaml:"},
		{"tab indentation", "tools:\n\t- name: x\n", "tools.yaml:2: invalid YAML: found character that cannot start any token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("tools.yaml", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestParse_AllErrors checks that every problem is reported, in line order,
// each as an *Error.
func TestParse_AllErrors(t *testing.T) {
	t.Parallel()
	src := "tools:\n" +
		"  - name: a\n" +
		"    argv: [printf]\n" +
		"    grace: soon\n" +
		"  - name: b\n" +
		"    argv: [printf]\n" +
		"    timeout: 5 minutes\n"
	_, err := Parse("dir/tools.yaml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "dir/tools.yaml:4: tools[0].grace:") || !strings.HasPrefix(lines[1], "dir/tools.yaml:7: tools[1].timeout:") {
		t.Errorf("errors:\n%v", err)
	}
	var fe *Error
	if !errors.As(err, &fe) || fe.Line != 4 || fe.Field != "tools[0].grace" {
		t.Errorf("errors.As: %+v", fe)
	}
}

// TestParse_BriefExample reproduces the error of the package's own
// example: tools[2].timeout on line 14.
func TestParse_BriefExample(t *testing.T) {
	t.Parallel()
	src := `tools:
  - name: a
    argv: [printf, a]
    task: optional
  - name: b
    argv: [printf, b]
    task: never
  - name: c
    description: the third tool
    argv: [printf, c]
    task: required
    retry:
      rerun: true
    timeout: 5 minutes
`
	_, err := Parse("tools.yaml", []byte(src))
	want := `tools.yaml:14: tools[2].timeout: "5 minutes" is not a duration (use e.g. 5m)`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestLoad_RelativePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := writeScript(t, dir, "hello.sh", "echo hello\n")
	path := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(path, []byte("tools:\n  - name: hello\n    argv: [./hello.sh]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Tools[0].c.program; got != script {
		t.Errorf("program %q, want %q", got, script)
	}
	if got := cfg.Tools[0].c.baseDir; got != dir {
		t.Errorf("base dir %q, want %q", got, dir)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// TestLoad_Examples keeps examples/tools.yaml valid.
func TestLoad_Examples(t *testing.T) {
	t.Parallel()
	cfg, err := Load("../examples/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tools) < 3 {
		t.Errorf("examples define %d tools, want at least 3", len(cfg.Tools))
	}
}
