package cmdtool

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse checks that any tools.yaml either loads or fails with errors
// that name the file and a line, never panicking.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../examples/tools.yaml"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"", "tools: []", "tools:\n  - name: x\n    argv: [true]\n",
		"tools:\n  - name: x\n    argv: [echo, '{a}']\n    input_schema: {type: object, properties: {a: {type: string}}}\n",
		"tools:\n  - name: x\n    timeout: 5 minutes\n", "tools: {a: b}", "&a [*a]", "tools:\n  - !!binary x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("tools.yaml", data)
		if err == nil {
			if cfg == nil {
				t.Fatal("Parse returned neither a config nor an error")
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error is not a *cmdtool.Error: %v", err)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "tools.yaml:") {
				t.Fatalf("error line does not name the file and line: %q", line)
			}
		}
	})
}
