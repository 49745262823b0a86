package cmdtool

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The check of an input_schema as JSON Schema (draft 2020-12), on the YAML
// nodes, so that a mistake is reported at its own line and field: each
// keyword's value must have the shape the draft gives it. jsonschema-go's
// Resolve, which runs after, checks what it compiles (patterns, $refs,
// defaults) but takes "type: stringy" without a word; every call would then
// fail. Keywords the draft does not define are annotations and pass, but
// for near misses of a keyword that checks something (patern, maxLenght):
// they would drop the check without a word (see nearKeyword).

// schemaTypes are the values of "type".
var schemaTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// Keywords by the shape of their value.
var (
	schemaKeywords      = []string{"additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	schemaListKeywords  = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMapKeywords   = []string{"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
	countKeywords       = []string{"maxContains", "maxItems", "maxLength", "maxProperties", "minContains", "minItems", "minLength", "minProperties"}
	numberKeywords      = []string{"exclusiveMaximum", "exclusiveMinimum", "maximum", "minimum", "multipleOf"}
	boolKeywords        = []string{"deprecated", "readOnly", "uniqueItems", "writeOnly"}
	stringKeywords      = []string{"$anchor", "$comment", "$dynamicAnchor", "$dynamicRef", "$id", "$ref", "$schema", "contentEncoding", "contentMediaType", "description", "format", "pattern", "title"}
	stringListKeywords  = []string{"required"}
	arrayKeywords       = []string{"enum", "examples"}
	stringListsKeywords = []string{"dependentRequired"}
	// anyKeywords take any value.
	anyKeywords = []string{"const", "default"}
	// annotationKeywords only describe: a key that comes near one of them
	// (example, comment) may be an annotation of its own, and passes.
	annotationKeywords = []string{"$comment", "deprecated", "description", "examples", "readOnly", "title", "writeOnly"}
)

// checkedKeywords are the keywords whose misspelling nearKeyword refuses:
// those that constrain the arguments or that the loader uses, every
// keyword above but the annotations.
var checkedKeywords = func() []string {
	var all []string
	for _, l := range [][]string{{"type"}, schemaKeywords, schemaListKeywords, schemaMapKeywords, countKeywords,
		numberKeywords, boolKeywords, stringKeywords, stringListKeywords, arrayKeywords, stringListsKeywords, anyKeywords} {
		for _, k := range l {
			if !slices.Contains(annotationKeywords, k) {
				all = append(all, k)
			}
		}
	}
	return all
}()

// nearKeyword returns the checked keyword that k, a key JSON Schema does
// not define, looks like a misspelling of, or "". A key starting with
// "x-" never does. Short keywords admit fewer typos, so that an annotation
// of one's own (note, unit, id) is not taken for not or $id: none up to 3
// characters, 1 up to 6, else 2, a swap of neighbours counting as one.
func nearKeyword(k string) string {
	if strings.HasPrefix(k, "x-") {
		return ""
	}
	lk := strings.ToLower(k)
	best, bestD := "", 3
	for _, kw := range checkedKeywords {
		typos := 2
		switch {
		case len(kw) <= 3:
			typos = 0
		case len(kw) <= 6:
			typos = 1
		}
		if d := editDistance(lk, strings.ToLower(kw)); d <= typos && d < bestD {
			best, bestD = kw, d
		}
	}
	return best
}

// checkSchema reports each keyword of the schema n (at field) whose value
// has the wrong shape, at its line, and descends into subschemas. It
// reports whether n is well-formed.
func (p *parser) checkSchema(n *yaml.Node, field string) bool {
	before := len(p.errs)
	p.walkSchema(n, field)
	return len(p.errs) == before
}

func (p *parser) walkSchema(n *yaml.Node, field string) {
	if isBool(n) { // true and false are schemas too
		return
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, field, "%s is not a schema: want a mapping of JSON Schema keywords, or true or false", describe(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		f := field + "." + k
		switch {
		case k == "type":
			p.checkType(v, f)
		case slices.Contains(schemaKeywords, k):
			p.walkSchema(v, f)
		case slices.Contains(schemaListKeywords, k):
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				p.errorf(v, f, "%s: want a non-empty list of schemas", describe(v))
				continue
			}
			for j, s := range v.Content {
				p.walkSchema(s, fmt.Sprintf("%s[%d]", f, j))
			}
		case slices.Contains(schemaMapKeywords, k):
			p.eachValue(v, f, "a mapping of names to schemas", p.walkSchema)
		case slices.Contains(countKeywords, k):
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || strings.HasPrefix(v.Value, "-") {
				p.errorf(v, f, "%s: want a whole number, 0 or more", describe(v))
			}
		case slices.Contains(numberKeywords, k):
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" && v.ShortTag() != "!!float" {
				p.errorf(v, f, "%s: want a number", describe(v))
			}
		case slices.Contains(boolKeywords, k):
			if !isBool(v) {
				p.errorf(v, f, "%s: want true or false", describe(v))
			}
		case slices.Contains(stringKeywords, k):
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				p.errorf(v, f, "%s: want a string", describe(v))
			}
		case slices.Contains(stringListKeywords, k):
			p.checkStrings(v, f)
		case slices.Contains(arrayKeywords, k):
			if v.Kind != yaml.SequenceNode {
				p.errorf(v, f, "%s: want a list", describe(v))
			}
		case slices.Contains(stringListsKeywords, k):
			p.eachValue(v, f, "a mapping of property names to lists of names", p.checkStrings)
		case slices.Contains(anyKeywords, k): // any value is one
		default:
			if kw := nearKeyword(k); kw != "" {
				p.errorf(n.Content[i], f, "unknown JSON Schema keyword; did you mean %s? "+
					"(an unknown keyword checks nothing; start an annotation of your own with x-)", kw)
			}
		}
	}
}

// eachValue checks each value of the mapping v (at field) with check, or
// reports that v is not a mapping, what is wanted.
func (p *parser) eachValue(v *yaml.Node, field, want string, check func(*yaml.Node, string)) {
	if v.Kind != yaml.MappingNode {
		p.errorf(v, field, "%s: want %s", describe(v), want)
		return
	}
	for j := 0; j+1 < len(v.Content); j += 2 {
		check(v.Content[j+1], field+"."+v.Content[j].Value)
	}
}

// checkType checks the value of "type": one type name or a list of them.
func (p *parser) checkType(v *yaml.Node, field string) {
	names := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode && len(v.Content) > 0 {
		names = v.Content
	}
	for _, n := range names {
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || !slices.Contains(schemaTypes, n.Value) {
			p.errorf(n, field, "%s is not a JSON Schema type (%s)", describe(n), strings.Join(schemaTypes, ", "))
		}
	}
}

// checkStrings checks a list of strings, such as required.
func (p *parser) checkStrings(v *yaml.Node, field string) {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, field, "%s: want a list of property names", describe(v))
		return
	}
	for j, s := range v.Content {
		if s.Kind != yaml.ScalarNode || s.ShortTag() != "!!str" {
			p.errorf(s, fmt.Sprintf("%s[%d]", field, j), "%s: want a property name", describe(s))
		}
	}
}

func isBool(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" }
