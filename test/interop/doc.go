// Package interop runs clients and servers that nobody here wrote against
// mcptasks: the TypeScript SDK v1 client and its example task server
// (pinned in package.json, installed with npm ci), and mcp-go's client
// (pinned in go.mod, a module of its own so that the main module does not
// depend on it). Every test builds and runs the real mcptasks binary.
//
// Run with: (cd test/interop && npm ci && go test ./...).
package interop
