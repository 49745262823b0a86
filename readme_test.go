package mcptasks_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// goBlock matches a fenced Go block of a Markdown file.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestReadmeGoCompiles builds every Go block of README.md: each is a
// complete program, so that what the README shows is what compiles.
func TestReadmeGoCompiles(t *testing.T) {
	md, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(md, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block")
	}
	// Inside the module, so that its packages resolve; the leading dot
	// keeps the directory out of ./... patterns.
	dir, err := os.MkdirTemp(".", ".readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for i, b := range blocks {
		pkg := filepath.Join(dir, string(rune('a'+i)))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), b[1], 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("go", "vet", "./"+pkg).CombinedOutput(); err != nil {
			t.Errorf("README.md Go block %d does not build: %v\n%s", i+1, err, out)
		}
	}
}
