package main

import (
	"bytes"
	"runtime/debug"
	"testing"
)

// TestRoot_Version: "mcptasks --version" prints the build's version and
// exits 0.
func TestRoot_Version(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "mcptasks " + buildVersion(debug.ReadBuildInfo()) + "\n"; out.String() != want {
		t.Errorf("--version printed %q, want %q", out.String(), want)
	}
}
