package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcptasks/mcptasks/internal/pgtest"
)

// TestSweepOneLeader: while one replica sweeps a schema (holds the sweep
// lock), another replica's DeleteExpired deletes nothing; once the first
// is done, the other sweeps.
func TestSweepOneLeader(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s := open(t, dsn, nil)
	for _, id := range []string{"t1", "t2"} {
		if err := s.Create(ctx, newTask(id)); err != nil { // TTL 1h from t0
			t.Fatal(err)
		}
	}
	later := t0.Add(2 * time.Hour)

	conn, err := pgx.Connect(ctx, dsn) // another replica, in the middle of its sweep
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var leader bool
	if err := tx.QueryRow(ctx, sweepLeaderSQL).Scan(&leader); err != nil || !leader {
		t.Fatalf("taking the sweep lock: %v, %v", leader, err)
	}
	if n, err := s.DeleteExpired(ctx, later, 10); err != nil || n != 0 {
		t.Errorf("DeleteExpired during another sweep = %d, %v; want 0, nil", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteExpired(ctx, later, 10); err != nil || n != 2 {
		t.Errorf("DeleteExpired after it = %d, %v; want 2, nil", n, err)
	}
}
