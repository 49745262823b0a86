package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testExpiry checks TTL expiry and DeleteExpired.
func testExpiry(t *testing.T, f factory) {
	t.Run("DeleteExpired", func(t *testing.T) { testDeleteExpired(t, f) })

	t.Run("DeleteExpiredLimit", func(t *testing.T) {
		tests := []struct {
			name   string
			limits []int
			want   []int
		}{
			{"ByTwo", []int{2, 2, 2, 2}, []int{2, 2, 1, 0}},
			{"Exact", []int{5, 5}, []int{5, 0}},
			{"Larger", []int{100}, []int{5}},
			{"ZeroMeansNoLimit", []int{0, 0}, []int{5, 0}},
			{"NegativeMeansNoLimit", []int{-1}, []int{5}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				s := f.open(t)
				for i := range 5 {
					r := newTask(fmt.Sprintf("x%d", i))
					r.TTL = time.Duration(i+1) * time.Second
					create(t, s, r)
				}
				keep := newTask("keep")
				create(t, s, keep)
				for i, limit := range tt.limits {
					n, err := s.DeleteExpired(context.Background(), at(time.Minute), limit)
					if err != nil {
						t.Fatalf("DeleteExpired: %v", err)
					}
					if n != tt.want[i] {
						t.Errorf("DeleteExpired #%d (limit %d) = %d, want %d", i, limit, n, tt.want[i])
					}
				}
				wantStored(t, s, keep)
			})
		}
	})

	t.Run("GetBeforeSweep", func(t *testing.T) {
		// Get ignores the TTL: the engine decides what an expired task
		// looks like until the sweep removes it.
		t.Parallel()
		s := f.open(t)
		r := newTask("t1")
		r.TTL = time.Second
		create(t, s, r)
		wantStored(t, s, r)
	})

	t.Run("TTLZeroNeverExpires", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		ctx := context.Background()
		create(t, s, newTask("t1"))
		later := t0.AddDate(100, 0, 0)
		if n, err := s.DeleteExpired(ctx, later, 0); err != nil || n != 0 {
			t.Fatalf("DeleteExpired = %d, %v; want 0, nil", n, err)
		}
		c := claim(t, s, "w1", later)
		requestInput(t, s, c, later, raws("a", reqA))
		answer(t, s, "t1", later, raws("a", respA))
		if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: alice, Now: later}); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		err := s.Finish(ctx, store.FinishParams{FenceParams: fence(c, later), Status: task.Cancelled})
		if err != nil {
			t.Fatalf("Finish: %v", err)
		}
	})
}

// testDeleteExpired checks which tasks a sweep deletes.
func testDeleteExpired(t *testing.T, f factory) {
	now := at(time.Hour)
	tests := []struct {
		name    string
		ttl     time.Duration
		status  task.Status
		leased  bool
		deleted bool
	}{
		{name: "NoTTL", ttl: 0, deleted: false},
		{name: "NotYet", ttl: time.Hour + time.Millisecond, deleted: false},
		{name: "ExactlyNow", ttl: time.Hour, deleted: true},
		{name: "Past", ttl: time.Minute, deleted: true},
		{name: "PastCompleted", ttl: time.Minute, status: task.Completed, deleted: true},
		{name: "PastLeased", ttl: time.Minute, leased: true, deleted: true},
		{name: "PastInputRequired", ttl: time.Minute, status: task.InputRequired, deleted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			r := newTask("t1")
			r.TTL = tt.ttl
			if tt.status != "" {
				r.Status = tt.status
			}
			if tt.status == task.InputRequired {
				r.InputRequests = raws("a", reqA)
			}
			if tt.leased {
				r.Attempt, r.LeaseOwner, r.LeaseExpiresAt = 1, "w1", now.Add(lease)
			}
			r.Result = json.RawMessage(`{}`)
			create(t, s, r)
			// A neighbour without TTL is never touched.
			other := newTask("t2")
			create(t, s, other)

			n, err := s.DeleteExpired(context.Background(), now, 10)
			if err != nil {
				t.Fatalf("DeleteExpired: %v", err)
			}
			wantN := 0
			if tt.deleted {
				wantN = 1
			}
			if n != wantN {
				t.Errorf("DeleteExpired = %d, want %d", n, wantN)
			}
			if tt.deleted {
				_, err := s.Get(context.Background(), "t1")
				wantErr(t, "Get(deleted)", err, store.ErrNotFound)
			} else {
				wantStored(t, s, r)
			}
			wantStored(t, s, other)

			// A deleted id is free again.
			if tt.deleted {
				create(t, s, newTask("t1"))
			}
			ids := claimIDs(t, s, store.ClaimParams{Owner: "w9", Now: now, LeaseExpiresAt: now.Add(lease)})
			if !slices.Contains(ids, "t2") {
				t.Errorf("claim after sweep = %q, want t2 among them", ids)
			}
		})
	}
}
