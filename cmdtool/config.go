package cmdtool

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/mcpserver"
)

// Defaults and bounds of a tool's settings.
const (
	// DefaultOutputLimit is how many bytes of stdout a result keeps
	// unless output_limit says otherwise.
	DefaultOutputLimit = 64 << 10
	// MaxOutputLimit bounds output_limit: results are stored with the task.
	// The limit counts the command's bytes; in the stored JSON a control
	// character or an invalid UTF-8 byte takes up to 6.
	MaxOutputLimit = 16 << 20
	// DefaultGrace is how long a stopped command gets between SIGTERM and
	// SIGKILL unless grace says otherwise.
	DefaultGrace = 5 * time.Second
	// MaxGrace bounds grace: a stopped command's grace comes on top of the
	// server's drain at shutdown, which hosts bound (systemd's stop
	// timeout, Kubernetes' termination grace period).
	MaxGrace = time.Minute
	// StderrTail is how many trailing bytes of stderr a failed result shows.
	StderrTail = 4 << 10
)

// Config is a loaded and validated tools file.
type Config struct {
	// File is the path the configuration was loaded from, as given.
	File string
	// Tools are the command tools, in file order.
	Tools []*Tool
}

// Tool is one command tool as the file describes it. Its fields are for
// reading: a Tool must come from [Load], and [Register] runs the command
// line, dir, env and confirmation in the form Load compiled them to.
type Tool struct {
	// Name is the MCP tool name.
	Name string
	// Description is the tool's description ("Runs: " and the argv if
	// the file gives none).
	Description string
	// InputSchema is the JSON Schema of the arguments ({"type":"object"} if
	// the file gives none).
	InputSchema map[string]any
	// Argv is the command line as written, placeholders included.
	Argv []string
	// Dir is the working directory as written ("" for the directory of the
	// tools file).
	Dir string
	// Env are variables set for the command, values as written.
	Env map[string]string
	// EnvArgs passes every argument as MCPTASKS_ARG_<NAME>.
	EnvArgs bool
	// InheritEnv names further variables copied from the server's
	// environment, beyond PATH, HOME and LANG.
	InheritEnv []string
	// Timeout stops the command after this long (0: no limit).
	Timeout time.Duration
	// TTL and PollInterval are the task settings (0: the engine's
	// defaults; a negative TTL means no limit).
	TTL          time.Duration
	PollInterval time.Duration
	// Task is the tool's task mode (TaskRequired if the file gives none).
	Task mcpserver.TaskMode
	// Retry says what happens to a task whose worker was lost.
	Retry engine.RetryPolicy
	// Confirm is the confirmation question, placeholders included ("" for
	// none).
	Confirm string
	// Progress picks the output lines that become the status message (nil:
	// every line).
	Progress *regexp.Regexp
	// OutputLimit is how many bytes of stdout the result keeps.
	OutputLimit int
	// Grace is the time between SIGTERM and SIGKILL when a command is
	// stopped, for every process of its group.
	Grace time.Duration
	// Line is where the tool starts in the file.
	Line int

	c *compiled
}

// compiled is what Load derives from a Tool to run it.
type compiled struct {
	program string     // absolute path of argv[0]
	argv    []template // argv[1:]
	dir     *template  // nil: baseDir
	baseDir string     // directory of the tools file
	env     []envVar
	confirm *template
	schema  *jsonschema.Resolved
	// argVars maps each MCPTASKS_ARG_* variable of a property of the
	// schema to that property, with env_args: an argument of another name
	// may not fill it (see Tool.env).
	argVars map[string]string
}

type envVar struct {
	name  string
	value template
}

// Error is a problem with one field of a tools file.
type Error struct {
	File  string // the tools file, as given to Load
	Line  int    // 1-based
	Field string // e.g. tools[2].timeout; "" for a syntax error
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Msg)
}

// Load reads and validates the tools file at path. Every problem is
// reported, each as an [*Error] naming the file, line and field, joined
// with errors.Join. Relative paths in the file (argv[0] when it has a
// slash, dir) are relative to the file's directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is [Load] for a file already read: name is its path.
func Parse(name string, data []byte) (*Config, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	p := &parser{file: name, baseDir: filepath.Dir(abs)}
	cfg := p.config(data)
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Line < p.errs[j].Line })
		errs := make([]error, len(p.errs))
		for i, e := range p.errs {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

// Names of a tool's fields, in the order the docs give them.
var toolFields = []string{
	"name", "description", "input_schema", "argv", "dir", "env", "env_args", "inherit_env",
	"timeout", "ttl", "poll_interval", "task", "retry", "confirm", "progress", "output_limit", "grace",
}

var (
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

type parser struct {
	file    string
	baseDir string
	errs    []*Error
}

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	line := 1
	if n != nil && n.Line > 0 {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) config(data []byte) *Config {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		for _, msg := range strings.Split(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n"), "\n") {
			msg = strings.TrimSpace(msg)
			line := 1
			if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
				line, _ = strconv.Atoi(m[1])
				msg = m[2]
			}
			p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
		}
		return nil
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.errorf(nil, "tools", "missing: the file must hold a top-level \"tools:\" list")
		return nil
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "", "want a mapping with a \"tools:\" list at the top level")
		return nil
	}
	cfg := &Config{File: p.file}
	var list *yaml.Node
	p.mapping(root, "", []string{"tools"}, func(key string, _, v *yaml.Node) {
		list = v
	})
	if list == nil {
		p.errorf(root, "tools", "missing: the file must hold a top-level \"tools:\" list")
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		p.errorf(list, "tools", "want a list of tools")
		return nil
	}
	if len(list.Content) == 0 {
		p.errorf(list, "tools", "the list is empty; define at least one tool")
	}
	byName := map[string]int{}
	for i, n := range list.Content {
		t, nameNode := p.tool(i, deref(n))
		if t == nil {
			continue
		}
		if j, dup := byName[t.Name]; dup && t.Name != "" {
			p.errorf(nameNode, fmt.Sprintf("tools[%d].name", i), "%q is already the name of tools[%d] (line %d); tool names must be unique", t.Name, j, cfg.Tools[j].Line)
		} else if t.Name != "" {
			byName[t.Name] = len(cfg.Tools)
		}
		cfg.Tools = append(cfg.Tools, t)
	}
	return cfg
}

// deref follows an alias.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mapping calls f for each key of the mapping n, rejecting unknown and
// repeated keys.
func (p *parser) mapping(n *yaml.Node, field string, known []string, f func(key string, k, v *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		name := join(field, k.Value)
		switch {
		case k.Kind != yaml.ScalarNode:
			p.errorf(k, field, "keys must be plain names")
		case seen[k.Value]:
			p.errorf(k, name, "given twice")
		case !slices.Contains(known, k.Value):
			msg := "unknown field"
			if s := closest(k.Value, known); s != "" {
				msg += fmt.Sprintf("; did you mean %s?", s)
			} else {
				msg += "; known fields: " + strings.Join(known, ", ")
			}
			p.errorf(k, name, "%s", msg)
		default:
			seen[k.Value] = true
			f(k.Value, k, v)
		}
	}
}

func join(field, key string) string {
	switch {
	case field == "":
		return key
	case key == "":
		return field
	}
	return field + "." + key
}

// pendingTemplate is a template whose placeholders are checked once the
// input schema is known.
type pendingTemplate struct {
	t     template
	n     *yaml.Node
	field string
}

// toolParser parses one entry of the tools list.
type toolParser struct {
	*parser
	field   string // tools[i]
	t       *Tool
	c       *compiled
	keys    map[string]*yaml.Node // the key node of each field given
	vals    map[string]*yaml.Node // and its value node
	pending []pendingTemplate
}

// tool parses tools[i]. It returns nil if n is not a mapping, and the node
// of the tool's name if it has one.
func (p *parser) tool(i int, n *yaml.Node) (*Tool, *yaml.Node) {
	tp := &toolParser{
		parser: p,
		field:  fmt.Sprintf("tools[%d]", i),
		t:      &Tool{Line: n.Line, Task: mcpserver.TaskRequired, OutputLimit: DefaultOutputLimit, Grace: DefaultGrace},
		c:      &compiled{baseDir: p.baseDir},
		keys:   map[string]*yaml.Node{},
		vals:   map[string]*yaml.Node{},
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, tp.field, "want a mapping with at least name and argv")
		return nil, nil
	}
	p.mapping(n, tp.field, toolFields, func(key string, k, v *yaml.Node) {
		tp.keys[key], tp.vals[key] = k, v
		tp.set(key, v, tp.field+"."+key)
	})
	tp.finish(n)
	return tp.t, tp.vals["name"]
}

// set parses the value v of the field key; f names it in errors.
func (p *toolParser) set(key string, v *yaml.Node, f string) {
	t, c := p.t, p.c
	switch key {
	case "name":
		if s, ok := p.str(v, f); ok {
			t.Name = s
			if !toolNameRE.MatchString(s) {
				p.errorf(v, f, "%q is not a valid tool name (1 to 128 of A-Z a-z 0-9 _ - .)", s)
			}
		}
	case "description":
		t.Description, _ = p.str(v, f)
	case "input_schema":
		t.InputSchema, c.schema = p.schema(v, f)
	case "argv":
		p.argv(v, f)
	case "dir":
		if s, ok := p.str(v, f); ok {
			t.Dir = s
			c.dir = p.template(s, v, f)
		}
	case "env":
		p.env(v, f)
	case "env_args":
		t.EnvArgs, _ = p.bool(v, f)
	case "inherit_env":
		t.InheritEnv = p.names(v, f)
	case "timeout":
		t.Timeout, _ = p.duration(v, f, false)
	case "ttl":
		if v.Kind == yaml.ScalarNode && v.Value == "none" {
			t.TTL = -1
		} else {
			t.TTL, _ = p.duration(v, f, false)
		}
	case "poll_interval":
		if d, ok := p.duration(v, f, false); ok && d < time.Millisecond {
			p.errorf(v, f, "%s is too short; use at least 1ms", d)
		} else {
			t.PollInterval = d
		}
	case "task":
		t.Task = p.taskMode(v, f)
	case "retry":
		p.retry(v, f)
	case "confirm":
		if s, ok := p.str(v, f); ok {
			if strings.TrimSpace(s) == "" {
				p.errorf(v, f, "is empty; give the question to ask, or leave confirm out")
				return
			}
			t.Confirm = s
			c.confirm = p.template(s, v, f)
		}
	case "progress":
		t.Progress = p.pattern(v, f)
	case "output_limit":
		if n, ok := p.size(v, f); ok {
			t.OutputLimit = n
		}
	case "grace":
		if d, ok := p.duration(v, f, true); ok && d > MaxGrace {
			p.errorf(v, f, "%s is too long; use at most %s (it comes on top of the server's drain at shutdown)", d, MaxGrace)
		} else {
			t.Grace = d
		}
	}
}

// template parses s, to be checked against the input schema in finish.
func (p *toolParser) template(s string, n *yaml.Node, field string) *template {
	tp := parseTemplate(s)
	p.pending = append(p.pending, pendingTemplate{tp, n, field})
	return &tp
}

func (p *toolParser) argv(v *yaml.Node, f string) {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, f, "want a list of strings, e.g. [go, test, ./...]")
		return
	}
	if len(v.Content) == 0 {
		p.errorf(v, f, "is empty; give at least the program")
	}
	for j, e := range v.Content {
		ef := fmt.Sprintf("%s[%d]", f, j)
		s, ok := p.str(deref(e), ef)
		if !ok {
			continue
		}
		p.t.Argv = append(p.t.Argv, s)
		if j == 0 {
			p.c.program = p.program(s, e, ef)
			continue
		}
		p.c.argv = append(p.c.argv, *p.template(s, e, ef))
	}
}

func (p *toolParser) env(v *yaml.Node, f string) {
	if v.Kind != yaml.MappingNode {
		p.errorf(v, f, "want a mapping of NAME: value")
		return
	}
	p.t.Env = map[string]string{}
	for j := 0; j+1 < len(v.Content); j += 2 {
		kn, vn := v.Content[j], deref(v.Content[j+1])
		ef := f + "." + kn.Value
		if !envNameRE.MatchString(kn.Value) {
			p.errorf(kn, ef, "%q is not a valid variable name (letters, digits and _, not starting with a digit)", kn.Value)
			continue
		}
		if _, dup := p.t.Env[kn.Value]; dup {
			p.errorf(kn, ef, "given twice")
			continue
		}
		if s, ok := p.str(vn, ef); ok {
			p.t.Env[kn.Value] = s
			p.c.env = append(p.c.env, envVar{kn.Value, *p.template(s, vn, ef)})
		}
	}
}

// names parses a list of variable names.
func (p *toolParser) names(v *yaml.Node, f string) []string {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, f, "want a list of variable names, e.g. [GOFLAGS, GOPROXY]")
		return nil
	}
	var names []string
	for j, e := range v.Content {
		ef := fmt.Sprintf("%s[%d]", f, j)
		if s, ok := p.str(deref(e), ef); ok {
			if !envNameRE.MatchString(s) {
				p.errorf(e, ef, "%q is not a valid variable name", s)
				continue
			}
			names = append(names, s)
		}
	}
	return names
}

func (p *toolParser) taskMode(v *yaml.Node, f string) mcpserver.TaskMode {
	s, ok := p.str(v, f)
	switch {
	case !ok:
	case s == "never":
		return mcpserver.TaskNever
	case s == "optional":
		return mcpserver.TaskOptional
	case s == "required":
		return mcpserver.TaskRequired
	default:
		p.errorf(v, f, "%q is not a task mode; use never, optional or required", s)
	}
	return mcpserver.TaskRequired
}

func (p *toolParser) retry(v *yaml.Node, f string) {
	if v.Kind != yaml.MappingNode {
		p.errorf(v, f, "want a mapping, e.g. {rerun: true, max_attempts: 3}")
		return
	}
	p.mapping(v, f, []string{"rerun", "max_attempts"}, func(key string, k, v *yaml.Node) {
		p.keys["retry."+key], p.vals["retry."+key] = k, v
		switch key {
		case "rerun":
			p.t.Retry.Rerun, _ = p.bool(v, f+".rerun")
		case "max_attempts":
			if n, ok := p.int(v, f+".max_attempts"); ok {
				if n < 1 {
					p.errorf(v, f+".max_attempts", "must be at least 1, got %d", n)
				}
				p.t.Retry.MaxAttempts = n
			}
		}
	})
}

// finish runs the checks that span fields, once all are parsed; n is the
// tool's mapping.
func (p *toolParser) finish(n *yaml.Node) {
	t, c := p.t, p.c
	if p.vals["name"] == nil {
		p.errorf(n, p.field+".name", "missing; every tool needs a name")
	}
	if p.vals["argv"] == nil {
		p.errorf(n, p.field+".argv", "missing; give the command as a list, e.g. [go, test, ./...]")
	}
	if p.vals["input_schema"] == nil {
		t.InputSchema = map[string]any{"type": "object"}
		c.schema, _ = resolveSchema(t.InputSchema)
	}
	if c.schema != nil { // else the schema's own error is reported
		props := c.schema.Schema().Properties
		for _, pt := range p.pending {
			for _, arg := range pt.t.args() {
				if _, ok := props[arg]; !ok {
					p.errorf(pt.n, pt.field, "placeholder {%s} names no property of input_schema (%s); write {{ for a literal {", arg, describeProps(props))
				}
			}
		}
		if t.EnvArgs {
			c.argVars = map[string]string{}
			for _, name := range slices.Sorted(maps.Keys(props)) {
				v := ArgEnvName(name)
				if other, clash := c.argVars[v]; clash {
					p.errorf(p.keys["env_args"], p.field+".env_args", "properties %q and %q would both be passed in %s; rename one of them", other, name, v)
				}
				c.argVars[v] = name
			}
		}
	}
	if t.Task == mcpserver.TaskNever {
		for _, key := range []string{"ttl", "poll_interval", "retry"} {
			if k := p.keys[key]; k != nil {
				p.errorf(k, p.field+"."+key, "has no effect with task: never; remove it or use task: optional")
			}
		}
	}
	if v := p.vals["retry.max_attempts"]; v != nil && !t.Retry.Rerun {
		p.errorf(v, p.field+".retry.max_attempts", "only applies with rerun: true")
	}
	if t.Description == "" {
		t.Description = "Runs: " + strings.Join(t.Argv, " ")
	}
	t.c = c
}

func describeProps(props map[string]*jsonschema.Schema) string {
	if len(props) == 0 {
		return "it has no properties"
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return "it has: " + strings.Join(names, ", ")
}
