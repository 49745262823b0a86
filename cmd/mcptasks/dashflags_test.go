package main

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagsAfterDash: every client command takes its flags after "--", the
// separator that protects task ids starting with a dash, and leaves
// everything else there an argument.
func TestFlagsAfterDash(t *testing.T) {
	root := newRootCmd()
	find := func(name string) *cobra.Command {
		for _, c := range root.Commands() {
			if c.Name() == name {
				return c
			}
		}
		t.Fatalf("no command %s", name)
		return nil
	}
	for _, tc := range []struct {
		cmd   string
		args  []string
		want  []string
		flags map[string]string
	}{
		{"cancel", []string{"--", "-Xf3", "--json"}, []string{"-Xf3"}, map[string]string{"json": "true"}},
		{"cancel", []string{"--json", "--", "-Xf3"}, []string{"-Xf3"}, map[string]string{"json": "true"}},
		{"get", []string{"--", "-Xf3", "--url", "http://h/mcp", "--json"}, []string{"-Xf3"}, map[string]string{"json": "true", "url": "http://h/mcp"}},
		{"wait", []string{"--", "--Xf3", "--url=http://h/mcp"}, []string{"--Xf3"}, map[string]string{"url": "http://h/mcp", "json": "false"}},
		{"answer", []string{"--", "-Xf3", "confirm", "ok=y", "--decline", "--journal", "/tmp/j"}, []string{"-Xf3", "confirm", "ok=y"}, map[string]string{"decline": "true", "journal": "/tmp/j"}},
		{"call", []string{"--", "http://h/mcp", "render", "--detach", "frames=2", "--bogus"}, []string{"http://h/mcp", "render", "frames=2", "--bogus"}, map[string]string{"detach": "true"}},
		{"tasks", []string{"--", "--json"}, []string{}, map[string]string{"json": "true"}},
	} {
		c := find(tc.cmd)
		c.Flags().VisitAll(func(f *pflag.Flag) { _ = f.Value.Set(f.DefValue); f.Changed = false })
		if err := c.Flags().Parse(tc.args); err != nil {
			t.Fatalf("%s %v: parse: %v", tc.cmd, tc.args, err)
		}
		got, err := flagsAfterDash(c, c.Flags().Args())
		if err != nil {
			t.Errorf("%s %v: %v", tc.cmd, tc.args, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: arguments %q, want %q", tc.cmd, tc.args, got, tc.want)
		}
		for name, want := range tc.flags {
			if v := c.Flags().Lookup(name).Value.String(); v != want {
				t.Errorf("%s %v: --%s = %q, want %q", tc.cmd, tc.args, name, v, want)
			}
		}
	}
	c := find("get")
	_ = c.Flags().Parse([]string{"--", "id", "--url"})
	if _, err := flagsAfterDash(c, c.Flags().Args()); err == nil || err.Error() != "flag needs an argument: --url" {
		t.Errorf("get -- id --url: %v, want an error naming --url", err)
	}
}
