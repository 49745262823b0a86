package main

import (
	"strings"
	"testing"
)

// TestBenchArgs: the default --args are slow_compute's, for slow_compute
// alone; another --tool gets {}.
func TestBenchArgs(t *testing.T) {
	for tool, want := range map[string]string{
		"slow_compute": `{"seconds":0.001,"label":"bench"}`,
		"greet":        "{}",
		"":             "{}",
	} {
		if got := benchArgs(tool); got != want {
			t.Errorf("benchArgs(%q) = %s, want %s", tool, got, want)
		}
	}
}

// TestBench_Errors: a bench whose operations fail exits 3 with the first
// error, and the error is the tool's own (greet wants a name), not about
// slow_compute's arguments, which another --tool no longer gets; a get run
// whose tasks cannot be made exits 3 too (it exited 2, a usage error);
// a bad --mode is a usage error.
func TestBench_Errors(t *testing.T) {
	p := start(t, freeAddr(t), "--store", "memory:")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"Works", []string{"--mode", "call", "--tool", "greet", "--args", `{"name":"Ada"}`}, exitOK, ""},
		{"DefaultToolDefaultArgs", []string{"--mode", "create"}, exitOK, ""},
		{"OtherToolNoArgs", []string{"--mode", "call", "--tool", "greet"}, exitTransport, `20 of 20 operations failed; the first: JSON-RPC error -32602: invalid arguments for tool "greet": validating root: required: missing properties: ["name"]`},
		{"AllFailCreate", []string{"--mode", "create", "--tool", "greet", "--args", `{"bogus":1}`}, exitTransport, `20 of 20 operations failed; the first: JSON-RPC error -32602: invalid arguments for tool "greet"`},
		{"GetSetupFails", []string{"--mode", "get", "--tool", "greet", "--tasks", "3"}, exitTransport, "creating the tasks to poll: "},
		{"UnknownMode", []string{"--mode", "bogus"}, exitUsage, `unknown mode "bogus": use create, get, lifecycle, resume or call`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "-n", "20", "-c", "2", p.url}, tc.args...)
			out, errOut, code := cliRun(t, "", args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q\nstdout: %s", code, errOut, tc.code, tc.stderr, out)
			}
			if strings.Contains(errOut, `"seconds"`) {
				t.Errorf("--tool %v got slow_compute's arguments: %s", tc.args, errOut)
			}
		})
	}
}
