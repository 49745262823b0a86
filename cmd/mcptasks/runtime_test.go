package main

import "testing"

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
