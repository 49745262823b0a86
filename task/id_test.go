package task

import (
	"encoding/base64"
	"testing"
	"time"
)

func TestNewID(t *testing.T) {
	before := time.Now().UnixMilli()
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !ValidID(id) {
			t.Fatalf("ValidID(%q) = false for a NewID", id)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
	}
	after := time.Now().UnixMilli()

	b, err := base64.RawURLEncoding.DecodeString(NewID())
	if err != nil {
		t.Fatal(err)
	}
	var ms int64
	for _, c := range b[:idTimeBytes] {
		ms = ms<<8 | int64(c)
	}
	if ms < before || ms > time.Now().UnixMilli() {
		t.Errorf("time prefix %d ms, want between %d and %d", ms, before, after)
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA", true},
		{"AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAA", false},   // one short
		{"AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAAA", false}, // one long
		{"AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAA=", false},  // padding
		{"AZrPm3kAAAAAAAAAAAAAAAAAAAAAAA+/", false},  // std alphabet
		{"", false},
	}
	for _, tt := range tests {
		if got := ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}
