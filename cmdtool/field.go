package cmdtool

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// This file parses the values of single fields; config.go walks the file.

// str returns a scalar's text. Numbers and booleans count as text, so
// argv: [head, -n, 10] works; null and collections do not.
func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		p.errorf(n, field, "want a string")
		return "", false
	}
	return n.Value, true
}

func (p *parser) bool(n *yaml.Node, field string) (bool, bool) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		if b, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			return b, true
		}
	}
	p.errorf(n, field, "want true or false, got %s", describe(n))
	return false, false
}

func (p *parser) int(n *yaml.Node, field string) (int, bool) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		if i, err := strconv.ParseInt(n.Value, 0, 32); err == nil {
			return int(i), true
		}
	}
	p.errorf(n, field, "want a whole number, got %s", describe(n))
	return 0, false
}

// duration parses a Go duration such as 90s or 5m. Zero is allowed only
// if zeroOK; negative never.
func (p *parser) duration(n *yaml.Node, field string, zeroOK bool) (time.Duration, bool) {
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, field, "want a duration such as 30s or 5m")
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	switch {
	case err != nil:
		p.errorf(n, field, "%q is not a duration (use e.g. 5m)", n.Value)
	case d < 0 && zeroOK:
		p.errorf(n, field, "%s: must not be negative (0 is allowed)", n.Value)
	case d <= 0 && !zeroOK:
		p.errorf(n, field, "%s: must be positive (leave %s out for its default)", n.Value, field)
	default:
		return d, true
	}
	return 0, false
}

// pattern compiles a progress pattern.
func (p *parser) pattern(n *yaml.Node, field string) *regexp.Regexp {
	s, ok := p.str(n, field)
	if !ok {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		p.errorf(n, field, "%q is not a valid regular expression: %v", s, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		return nil
	}
	return re
}

var sizeRE = regexp.MustCompile(`^(\d+)\s*([A-Za-z]*)$`)

// sizeUnits are the units a size may have, by how many bytes each is.
var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"KB": 1000, "MB": 1000 * 1000, "GB": 1000 * 1000 * 1000, "TB": 1000 * 1000 * 1000 * 1000,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

// size parses a byte count, 1 byte to MaxOutputLimit: a whole number or
// one with a unit, e.g. 65536, 64KiB, 1MiB, 100KB.
func (p *parser) size(n *yaml.Node, field string) (int, bool) {
	m := sizeRE.FindStringSubmatch(n.Value)
	if n.Kind != yaml.ScalarNode || m == nil {
		p.errorf(n, field, "%s is not a size (use bytes, or a whole number with a unit, e.g. 64KiB, 1MiB)", describe(n))
		return 0, false
	}
	mult, ok := sizeUnits[m[2]]
	if !ok {
		p.errorf(n, field, "%s: unknown unit %q (use B, KB, KiB, MB, MiB, GB or GiB)", n.Value, m[2])
		return 0, false
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || v <= 0 || v > MaxOutputLimit/mult {
		p.errorf(n, field, "%s is out of range: the allowed range is 1 byte to %dMiB", n.Value, MaxOutputLimit>>20)
		return 0, false
	}
	return int(v * mult), true
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "nothing"
}

// schema decodes and resolves an input_schema.
func (p *parser) schema(n *yaml.Node, field string) (map[string]any, *jsonschema.Resolved) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, field, "want a JSON Schema object, e.g. {type: object, properties: {...}}")
		return nil, nil
	}
	if !p.checkSchema(n, field) {
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		p.errorf(n, field, "%v", err)
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		p.errorf(n, field, "cannot be written as JSON (are all keys strings?): %v", err)
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		p.errorf(n, field, "%v", err)
		return nil, nil
	}
	if typ, ok := m["type"]; !ok || typ != "object" {
		p.errorf(n, field+".type", "must be \"object\": tool arguments are an object")
		return nil, nil
	}
	rs, err := resolveSchema(m)
	if err != nil {
		p.errorf(n, field, "invalid JSON Schema: %v", err)
		return nil, nil
	}
	return m, rs
}

func resolveSchema(m map[string]any) (*jsonschema.Resolved, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
}

// program resolves argv[0] once, at load: a name without a slash through
// PATH, a path relative to the tools file's directory. It never depends on
// the call's arguments.
func (p *parser) program(name string, n *yaml.Node, field string) string {
	if len(parseTemplate(name).args()) > 0 {
		p.errorf(n, field, "the program cannot come from an argument; name it, and pass arguments after it")
		return ""
	}
	if name == "" {
		p.errorf(n, field, "is empty; name the program to run")
		return ""
	}
	if !strings.Contains(name, "/") {
		path, err := exec.LookPath(name)
		if err == nil {
			path, err = filepath.Abs(path)
		}
		if err != nil {
			p.errorf(n, field, "%q not found in PATH", name)
			return ""
		}
		return path
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.baseDir, path)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		p.errorf(n, field, "%s: no such file (a relative path is relative to the tools file's directory)", name)
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		p.errorf(n, field, "%s is not an executable file", name)
	default:
		return path
	}
	return ""
}

// closest returns the known name within an edit distance of 2 of s, or
// the one that contains s (or s contains), if any.
func closest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(s, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" && len(s) >= 3 {
		for _, k := range known {
			if strings.Contains(k, s) || strings.Contains(s, k) {
				return k
			}
		}
	}
	return best
}

// editDistance is the number of single-character insertions, deletions,
// substitutions and swaps of adjacent characters that turn a into b (the
// optimal string alignment distance).
func editDistance(a, b string) int {
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		pp, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		rows[0], rows[1], rows[2] = prev, cur, pp
	}
	return rows[1][len(b)]
}
