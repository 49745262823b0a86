package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestGCSettings: the processes that run tools collect at defaultGCPercent
// with a soft memory limit of 1.5 times the largest live heap of the
// memory formula, unless the environment sets GOGC or GOMEMLIMIT, which
// then stand.
func TestGCSettings(t *testing.T) {
	const cache, inflight = 64 << 20, 64 << 20
	const limit = 3 * (cache + 4*inflight) / 2
	for _, tt := range []struct {
		gogc, gomemlimit string
		percent          int
		limit            int64
	}{
		{"", "", defaultGCPercent, limit},
		{"100", "", -1, limit},
		{"off", "1GiB", -1, -1},
		{"", "512MiB", defaultGCPercent, -1},
	} {
		env := map[string]string{"GOGC": tt.gogc, "GOMEMLIMIT": tt.gomemlimit}
		p, l := gcSettings(func(k string) string { return env[k] }, cache, inflight)
		if p != tt.percent || l != tt.limit {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: gcSettings = %d, %d; want %d, %d", tt.gogc, tt.gomemlimit, p, l, tt.percent, tt.limit)
		}
	}
}

// TestStoreLabel: a --store value shows in logs and errors without its
// password, wherever the URL carries it.
func TestStoreLabel(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"sqlite:mcptasks.db", "sqlite:mcptasks.db"},
		{"memory:", "memory:"},
		{"postgres://app@db/tasks", "postgres://app@db/tasks"},
		{"postgres://app:s3cret@db:5432/tasks?sslmode=disable", "postgres://app:xxxxx@db:5432/tasks?sslmode=disable"},
		{"postgres://db/tasks?user=app&password=s3cret", "postgres://db/tasks?user=app&password=xxxxx"},
		{"postgres://app@db/tasks?sslpassword=s3cret&sslmode=verify-full", "postgres://app@db/tasks?sslpassword=xxxxx&sslmode=verify-full"},
		{"postgres:///db?host=/run/pg&password=sec%ret", "postgres:///db?host=/run/pg&password=xxxxx"},
	} {
		if got := storeLabel(c.spec); got != c.want {
			t.Errorf("storeLabel(%q) = %q, want %q", c.spec, got, c.want)
		}
	}
}

// TestBuildVersion: --version prints the main module's version the
// toolchain recorded (a tag or a pseudo-version), and the version of
// serverInfo when there is none ("go run", a build outside a module).
func TestBuildVersion(t *testing.T) {
	for _, tt := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"NoBuildInfo", nil, false, version},
		{"Devel", &debug.BuildInfo{Main: debug.Module{Path: "github.com/mcptasks/mcptasks", Version: "(devel)"}}, true, version},
		{"Empty", &debug.BuildInfo{}, true, version},
		{"Tag", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, true, "v0.3.0"},
		{"PseudoVersion", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261204234419-d4457a4c0ffe+dirty"}}, true, "v0.0.0-20261204234419-d4457a4c0ffe+dirty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := buildVersion(tt.info, tt.ok); got != tt.want {
				t.Errorf("buildVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseLogLevel: an unknown --log-level is a usage error that names
// the flag, the value and the levels there are.
func TestParseLogLevel(t *testing.T) {
	for _, s := range []string{"debug", "info", "warn", "error", "INFO", "debug-4"} {
		if _, err := parseLogLevel(s); err != nil {
			t.Errorf("parseLogLevel(%q): %v", s, err)
		}
	}
	_, err := parseLogLevel("verbose")
	if want := `--log-level "verbose": want debug, info, warn or error`; err == nil || err.Error() != want || exitCodeOf(err) != exitUsage {
		t.Errorf("parseLogLevel(verbose) = %v (exit %d), want %q (exit %d)", err, exitCodeOf(err), want, exitUsage)
	}
}

// TestOpenStore_Kind: a --store value without a kind that looks like a
// file's path gets the sqlite: value to use instead; other unknown values
// list the kinds. All are usage errors.
func TestOpenStore_Kind(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"/tmp/x.db", `--store "/tmp/x.db": no kind; for a SQLite file, use --store sqlite:/tmp/x.db (or postgres://… or memory:)`},
		{"tasks.db", "use --store sqlite:tasks.db "},
		{"my tasks.db", "use --store 'sqlite:my tasks.db' "},
		{"./data/a:b.db", "use --store sqlite:./data/a:b.db "},
		{"memroy:", `unknown kind "memroy"; use sqlite:PATH, postgres://… or memory: (with its colon)`},
		{"", `unknown kind ""`},
		{"mysql://db/tasks", `unknown kind "mysql"`},
		{"sqlite:", "want sqlite:PATH"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			st, err := openStore(t.Context(), tt.spec, nil)
			if err == nil {
				st.Close()
				t.Fatalf("opened %q", tt.spec)
			}
			if !strings.Contains(err.Error(), tt.want) || exitCodeOf(err) != exitUsage {
				t.Errorf("openStore(%q): %v (exit %d); want %q (exit %d)", tt.spec, err, exitCodeOf(err), tt.want, exitUsage)
			}
		})
	}
}
