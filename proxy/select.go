package proxy

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/mcpserver"
)

// Select returns an [Options.Mode] that gives mode to the tools whose name
// matches one of globs and [mcpserver.TaskNever] to the others. In a glob,
// "*" matches any run of characters ("/" and "." included), "?" any one
// character, and every other character itself. No globs: no tool is a
// task.
func Select(globs []string, mode mcpserver.TaskMode) (func(*mcp.Tool) mcpserver.TaskMode, error) {
	for _, g := range globs {
		if g == "" {
			return nil, fmt.Errorf("proxy: empty tool glob")
		}
	}
	globs = append([]string(nil), globs...)
	return func(t *mcp.Tool) mcpserver.TaskMode {
		if Matches(globs, t.Name) {
			return mode
		}
		return mcpserver.TaskNever
	}, nil
}

// Matches reports whether name matches one of globs (see [Select]).
func Matches(globs []string, name string) bool {
	for _, g := range globs {
		if match(g, name) {
			return true
		}
	}
	return false
}

// match reports whether s matches the glob g.
func match(g, s string) bool {
	// Greedy matching with backtracking to the last star: linear in
	// practice, and never exponential.
	star, next := -1, 0 // position after the last star in g, and where in s it resumes
	i, j := 0, 0
	for j < len(s) {
		switch {
		case i < len(g) && g[i] == '*':
			star, next = i+1, j
			i++
		case i < len(g) && (g[i] == '?' || g[i] == s[j]):
			i++
			j++
		case star >= 0:
			next++
			i, j = star, next
		default:
			return false
		}
	}
	return strings.Trim(g[i:], "*") == ""
}
