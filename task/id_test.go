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

func TestIDTimeRange(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, time.July, 28, 10, 30, 0, 123_000_000, time.UTC)
	id := NewIDAt(at)
	for n := 1; n <= len(id); n++ {
		from, to, ok := IDTimeRange(id[:n])
		if !ok {
			t.Fatalf("IDTimeRange(%q) = not ok", id[:n])
		}
		if at.Before(from) || !at.Before(to) {
			t.Errorf("IDTimeRange(%q) = [%v, %v), which leaves out %v", id[:n], from, to, at)
		}
		if n >= 8 && to.Sub(from) != time.Millisecond {
			t.Errorf("IDTimeRange(%q) spans %v, want one millisecond", id[:n], to.Sub(from))
		}
		if n < 8 {
			if want := time.Duration(1<<(48-6*n)) * time.Millisecond; to.Sub(from) != want {
				t.Errorf("IDTimeRange(%q) spans %v, want %v", id[:n], to.Sub(from), want)
			}
		}
	}
	other := NewIDAt(at.Add(time.Millisecond))
	if from, _, _ := IDTimeRange(other); !from.Equal(at.Add(time.Millisecond)) {
		t.Errorf("IDTimeRange of an id made a millisecond later starts at %v", from)
	}
	for _, bad := range []string{"", "AZ+", "AZ="} {
		if _, _, ok := IDTimeRange(bad); ok {
			t.Errorf("IDTimeRange(%q) = ok, want not", bad)
		}
	}
}
