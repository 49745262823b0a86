package postgres

import (
	"context"
	"testing"
)

// TestPing checks that Ping reports a reachable database, and fails on a
// closed store and a done ctx instead of hanging.
func TestPing(t *testing.T) {
	s := openTemp(t)
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Ping(ctx); err == nil {
		t.Errorf("Ping with a cancelled ctx: nil error")
	}
	s.Close()
	if err := s.Ping(context.Background()); err == nil {
		t.Errorf("Ping on a closed store: nil error")
	}
}
