package mcpserver

import (
	"fmt"

	segjson "github.com/segmentio/encoding/json"
)

// Limits on the work one request may cause, past the bound on its body
// (Options.MaxBodyBytes). Decoding JSON into generic values and validating
// them against a schema take time that grows faster than the input when it
// nests deeply (a 195 KiB body of 100,000 nested arrays took minutes of
// CPU), so a cheap scan refuses such bodies before anything decodes them.
const (
	// DefaultMaxJSONDepth bounds how deeply a request body's JSON may nest
	// (Options.MaxJSONDepth): objects and arrays within each other,
	// counting the request itself. MCP requests nest a few levels; tool
	// arguments rarely more than ten.
	DefaultMaxJSONDepth = 64
	// DefaultMaxArgumentsBytes bounds the arguments of a tools/call
	// (Options.MaxArgumentsBytes), which are decoded and validated against
	// the tool's input schema.
	DefaultMaxArgumentsBytes = 1 << 20
)

// limits are the bounds of one server, defaults applied.
type limits struct {
	depth int   // Options.MaxJSONDepth
	args  int64 // Options.MaxArgumentsBytes
}

// checkDepth returns a -32602 error if the JSON text b nests deeper than
// the limit, after a scan that stops at the first level too deep and never
// decodes anything. what names the text in the message.
func (l limits) checkDepth(what string, b []byte) error {
	if jsonDepthOver(b, l.depth) {
		return invalidParams("%s nests JSON objects and arrays more than %d levels deep; the limit is %d levels (MaxJSONDepth)", what, l.depth, l.depth)
	}
	return nil
}

// checkArguments returns a -32602 error if tool arguments are larger than
// the limit or nest deeper than it.
func (l limits) checkArguments(tool string, args []byte) error {
	if int64(len(args)) > l.args {
		return invalidParams("the arguments for tool %q are %d bytes; the limit is %d (MaxArgumentsBytes)", tool, len(args), l.args)
	}
	return l.checkDepth(fmt.Sprintf("the arguments for tool %q", tool), args)
}

// maxInputResponses bounds the members of a tasks/update's
// params.inputResponses: a task asks a few questions at a time, and every
// member costs a decode and a look-up.
const maxInputResponses = 1024

// jsonMembersOver reports whether the JSON array or object b holds more
// than max (at least 1) elements or members, after a scan of its top level
// that stops at the first one too many and decodes nothing: so that a body
// of a million tiny members is refused before it is decoded into a million
// allocations.
func jsonMembersOver(b []byte, max int) bool {
	var tok segjson.Tokenizer
	tok.Reset(b)
	commas := 0
	for tok.Next() {
		if tok.Delim == ',' && tok.Depth == 1 {
			if commas++; commas >= max {
				return true // max+1 elements at least
			}
		}
	}
	return false
}

// jsonDepthOver reports whether the JSON text b nests objects and arrays
// more than max levels deep. It looks only at brackets outside strings, so
// it costs one pass over b whatever b holds; b need not be valid JSON.
func jsonDepthOver(b []byte, max int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}
