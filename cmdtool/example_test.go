package cmdtool_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcptasks/mcptasks/cmdtool"
)

// Load reads and checks a tools file; a mistake names the file, line and
// field. Register then adds its tools to an mcpserver.Server.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "cmdtool-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tools.yaml")
	good := `tools:
  - name: disk_usage
    description: Disk usage of a directory.
    input_schema:
      type: object
      properties:
        path: {type: string}
      required: [path]
    argv: [du, --summarize, --, "{path}"]
    task: optional
`
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		panic(err)
	}
	cfg, err := cmdtool.Load(path)
	if err != nil {
		panic(err)
	}
	for _, t := range cfg.Tools {
		fmt.Println(t.Name, t.Task, t.Argv)
	}

	if err := os.WriteFile(path, []byte("tools:\n  - name: late\n    argv: [sleep, 1]\n    timeout: 30 minutes\n"), 0o644); err != nil {
		panic(err)
	}
	_, err = cmdtool.Load(path)
	fmt.Println(strings.TrimPrefix(err.Error(), dir+"/"))
	// Output:
	// disk_usage optional [du --summarize -- {path}]
	// tools.yaml:4: tools[0].timeout: "30 minutes" is not a duration (use e.g. 5m)
}
