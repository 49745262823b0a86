package cmdtool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyExamples copies examples/ (tools.yaml, render.sh, data/) into the
// directory examples of a fresh one, which stands for the module, with an
// empty exports/, so running the examples leaves the source tree alone. It
// returns the loaded tools by name and the copy's directory.
func copyExamples(t *testing.T) (map[string]*Tool, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "examples")
	for _, name := range []string{"tools.yaml", "render.sh", "data/orders.csv"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "exports"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(filepath.Join(dir, "tools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*Tool{}
	for _, tool := range cfg.Tools {
		tools[tool.Name] = tool
	}
	return tools, dir
}

func TestExamples_Render(t *testing.T) {
	t.Parallel()
	tools, _ := copyExamples(t)
	render := tools["render"]
	// Run the script through sh: it was written just now (see writeScript).
	render.c.program, render.Argv[0] = "/bin/sh", "sh"
	render.c.argv = append([]template{parseTemplate("render.sh")}, render.c.argv...)
	res, err := callInline(t.Context(), t, render, map[string]any{"frames": 2, "scene": "intro"})
	if err != nil || res.IsError {
		t.Fatalf("render: %v %v", err, texts(res))
	}
	out := texts(res)[0]
	for _, want := range []string{"rendering intro: 2 frames", "progress: 50% (frame 1/2)", "progress: 100% (frame 2/2)", "rendered 2 frames of intro"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if m := render.Progress.FindStringSubmatch("progress: 50% (frame 1/2)"); m == nil || m[1] != "50% (frame 1/2)" {
		t.Errorf("progress pattern gives %q", m)
	}
}

func TestExamples_ExportTable(t *testing.T) {
	t.Parallel()
	tools, dir := copyExamples(t)
	res, err := callInline(t.Context(), t, tools["export_table"], map[string]any{"table": "orders", "column": 3, "name": "by-customer"})
	if err != nil || res.IsError {
		t.Fatalf("export_table: %v %v", err, texts(res))
	}
	b, err := os.ReadFile(filepath.Join(dir, "exports", "by-customer.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var customers []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		customers = append(customers, strings.Split(line, ",")[2])
	}
	if got := strings.Join(customers, ","); got != "ACME Corp,Globex,Hooli,Initech,Umbrella" {
		t.Errorf("export sorted by customer: %s", got)
	}
}

// TestExamples_RunTests runs the run_tests example on a tiny module with
// one passing and one failing test, in a directory of the module the
// examples belong to (the parent of the copy's examples directory).
func TestExamples_RunTests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go test binary")
	}
	t.Parallel()
	tools, examples := copyExamples(t)
	mod := filepath.Join(filepath.Dir(examples), "sub", "tiny")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"go.mod":       "module example.com/tiny\n\ngo 1.26\n",
		"tiny_test.go": "package tiny\n\nimport \"testing\"\n\nfunc TestPass(t *testing.T) {}\n\nfunc TestFail(t *testing.T) { t.Fatal(\"boom\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := callInline(t.Context(), t, tools["run_tests"], map[string]any{"dir": "sub/tiny", "run": "TestPass"})
	if err != nil || res.IsError || !strings.Contains(texts(res)[0], "ok  \texample.com/tiny") {
		t.Errorf("passing run: %v %v", err, texts(res))
	}
	res, err = callInline(t.Context(), t, tools["run_tests"], map[string]any{"dir": "sub/tiny"})
	if err != nil || !res.IsError || !strings.Contains(strings.Join(texts(res), "\n"), "--- FAIL: TestFail") {
		t.Errorf("failing run: %v %v", err, texts(res))
	}
}

// TestExamples_RunTestsDir checks that run_tests refuses every dir that
// leaves the module the examples belong to, before anything runs.
func TestExamples_RunTestsDir(t *testing.T) {
	t.Parallel()
	tools, examples := copyExamples(t)
	for _, args := range []map[string]any{
		{"dir": examples}, // absolute
		{"dir": "/tmp"},
		{"dir": ".."},
		{"dir": "../x"},
		{"dir": "sub/../.."},
		{"dir": "sub/.."},
		{"dir": "./sub"},
		{"dir": "sub/"},
		{"dir": ".hidden"},
		{"dir": ""},
		{"dir": "sub//x"},
		{"dir": "sub\nx"},
		{"packages": "./../x/..."},
		{"packages": "./sub/../../..."},
	} {
		res, err := callInline(t.Context(), t, tools["run_tests"], args)
		if err == nil || !strings.Contains(err.Error(), "invalid arguments") {
			t.Errorf("%v: %v %v, want the arguments refused", args, err, res)
		}
	}
}
