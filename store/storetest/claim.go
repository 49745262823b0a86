package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

func testClaim(t *testing.T, f factory) {
	t.Run("Claimable", func(t *testing.T) { testClaimable(t, f) })
	t.Run("Tools", func(t *testing.T) { testClaimTools(t, f) })
	t.Run("LimitAndOrder", func(t *testing.T) { testClaimLimitAndOrder(t, f) })

	t.Run("LiveLeaseThenExpiry", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))

		c1 := claim(t, s, "w1", at(0))
		if c1.Attempt != 1 || c1.Lost || c1.LeaseOwner != "w1" || !c1.LeaseExpiresAt.Equal(at(lease)) {
			t.Fatalf("first claim = attempt %d lost %v owner %q lease %v, want 1 false w1 %v",
				c1.Attempt, c1.Lost, c1.LeaseOwner, c1.LeaseExpiresAt, at(lease))
		}

		// Held by a live lease: nobody else may claim it.
		ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(lease - time.Millisecond), LeaseExpiresAt: at(time.Hour)})
		if len(ids) != 0 {
			t.Fatalf("claim under a live lease returned %q", ids)
		}

		// Once the lease has expired, the next claim takes it and reports it lost.
		c2 := claim(t, s, "w2", at(lease))
		if c2.Attempt != 2 || !c2.Lost || c2.LeaseOwner != "w2" {
			t.Fatalf("claim after expiry = attempt %d lost %v owner %q, want 2 true w2", c2.Attempt, c2.Lost, c2.LeaseOwner)
		}
		want := newTask("t1")
		want.Attempt, want.Losses, want.LeaseOwner, want.LeaseExpiresAt = 2, 1, "w2", at(2*lease)
		wantRecord(t, "Claimed", c2.Record, want)
		wantStored(t, s, want)

		// A released task is claimed again at once, and is not lost.
		if err := s.Release(context.Background(), fence(c2, at(lease+time.Second))); err != nil {
			t.Fatalf("Release: %v", err)
		}
		c3 := claim(t, s, "w3", at(lease+time.Second))
		if c3.Attempt != 3 || c3.Lost {
			t.Fatalf("claim after release = attempt %d lost %v, want 3 false", c3.Attempt, c3.Lost)
		}
	})

	t.Run("ReturnsCopies", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		want := c.Record.Clone()
		c.LeaseOwner = "changed"
		c.Args[0] = '['
		wantStored(t, s, want)
	})

	t.Run("Concurrent", func(t *testing.T) {
		// Long leases: every task is claimed exactly once.
		t.Run("LongLeases", func(t *testing.T) { testClaimConcurrent(t, f, time.Hour, 1) })
		// Leases that end as they start: tasks are claimed again and again,
		// and each attempt of a task goes to one owner only.
		t.Run("ExpiringLeases", func(t *testing.T) { testClaimConcurrent(t, f, 0, 10) })
	})
}

// testClaimable checks which task states a claim takes.
func testClaimable(t *testing.T, f factory) {
	now := at(time.Minute)
	leased := func(owner string, until time.Time) func(r *task.Record) {
		return func(r *task.Record) {
			r.Attempt, r.LeaseOwner, r.LeaseExpiresAt = 1, owner, until
		}
	}
	tests := []struct {
		name  string
		setup func(r *task.Record)
		want  bool // claimable
		lost  bool
	}{
		{"Queued", func(*task.Record) {}, true, false},
		// Suspended: waiting for its answers, not for a worker.
		{"InputRequiredUnleased", func(r *task.Record) {
			r.Status, r.InputRequests, r.Attempt = task.InputRequired, raws("a", reqA), 1
		}, false, false},
		{"InputRequiredLeaseExpired", func(r *task.Record) {
			leased("w0", now.Add(-time.Millisecond))(r)
			r.Status, r.InputRequests = task.InputRequired, raws("a", reqA)
		}, true, true},
		{"Completed", func(r *task.Record) { r.Status = task.Completed }, false, false},
		{"Failed", func(r *task.Record) { r.Status = task.Failed }, false, false},
		{"Cancelled", func(r *task.Record) { r.Status = task.Cancelled }, false, false},
		{"LiveLease", leased("w0", now.Add(time.Millisecond)), false, false},
		{"LeaseExpiresNow", leased("w0", now), true, true},
		{"LeaseExpired", leased("w0", now.Add(-time.Millisecond)), true, true},
		{"Released", func(r *task.Record) { r.Attempt = 1 }, true, false},
		{"CancelRequestedLeaseExpired", func(r *task.Record) {
			leased("w0", now.Add(-time.Second))(r)
			r.CancelRequested = true
		}, true, true},
		{"TTLNotElapsed", func(r *task.Record) { r.TTL = time.Minute + time.Millisecond }, true, false},
		{"TTLElapsesNow", func(r *task.Record) { r.TTL = time.Minute }, false, false},
		{"TTLElapsed", func(r *task.Record) { r.TTL = time.Second }, false, false},
		{"TTLElapsedLeaseExpired", func(r *task.Record) {
			leased("w0", now.Add(-time.Second))(r)
			r.TTL = time.Second
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			r := newTask("t1")
			tt.setup(r)
			create(t, s, r)

			cs, err := s.Claim(context.Background(), store.ClaimParams{Owner: "w1", Now: now, LeaseExpiresAt: now.Add(lease)})
			if err != nil {
				t.Fatalf("Claim: %v", err)
			}
			if !tt.want {
				if len(cs) != 0 {
					t.Fatalf("Claim returned %d tasks, want none", len(cs))
				}
				wantStored(t, s, r)
				return
			}
			if len(cs) != 1 {
				t.Fatalf("Claim returned %d tasks, want 1", len(cs))
			}
			if cs[0].Lost != tt.lost {
				t.Errorf("Lost = %v, want %v", cs[0].Lost, tt.lost)
			}
			want := r.Clone()
			want.Attempt++
			if tt.lost {
				want.Losses++
			}
			want.LeaseOwner = "w1"
			want.LeaseExpiresAt = now.Add(lease)
			wantRecord(t, "Claimed", cs[0].Record, want)
			wantStored(t, s, want)
		})
	}
}

// testClaimTools checks the Tools filter.
func testClaimTools(t *testing.T, f factory) {
	tests := []struct {
		name  string
		tools []string
		want  []string
	}{
		{"Nil", nil, []string{"a1", "b1", "c1"}},
		{"One", []string{"a"}, []string{"a1"}},
		{"Two", []string{"c", "a"}, []string{"a1", "c1"}},
		{"Unknown", []string{"x"}, nil},
		{"EmptyMatchesNone", []string{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			for i, tool := range []string{"a", "b", "c"} {
				r := newTask(tool + "1")
				r.Tool = tool
				r.CreatedAt = at(time.Duration(i) * time.Second)
				create(t, s, r)
			}
			got := claimIDs(t, s, store.ClaimParams{Owner: "w1", Tools: tt.tools, Now: at(time.Minute), LeaseExpiresAt: at(time.Hour)})
			wantKeys(t, "claimed", got, tt.want...)
		})
	}
}

// testClaimLimitAndOrder checks that claims take the oldest tasks first,
// ties broken by id, up to the limit.
func testClaimLimitAndOrder(t *testing.T, f factory) {
	// Oldest first: e (1s), then a and d (2s, by id), b (3s), c (5s).
	created := map[string]time.Duration{"a": 2 * time.Second, "b": 3 * time.Second, "c": 5 * time.Second, "d": 2 * time.Second, "e": time.Second}
	tests := []struct {
		name   string
		limits []int
		want   [][]string
	}{
		{"NoLimit", []int{0}, [][]string{{"e", "a", "d", "b", "c"}}},
		{"NegativeMeansNoLimit", []int{-1}, [][]string{{"e", "a", "d", "b", "c"}}},
		{"ByTwo", []int{2, 2, 2, 2}, [][]string{{"e", "a"}, {"d", "b"}, {"c"}, {}}},
		{"OneThenRest", []int{1, 10}, [][]string{{"e"}, {"a", "d", "b", "c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			// Create in an order unrelated to age.
			for _, id := range []string{"c", "a", "e", "b", "d"} {
				r := newTask(id)
				r.CreatedAt = at(created[id])
				r.UpdatedAt = r.CreatedAt
				create(t, s, r)
			}
			for i, limit := range tt.limits {
				got := claimIDs(t, s, store.ClaimParams{Owner: "w1", Now: at(time.Minute), LeaseExpiresAt: at(time.Hour), Limit: limit})
				if !slices.Equal(got, tt.want[i]) {
					t.Errorf("claim %d (limit %d) = %q, want %q", i, limit, got, tt.want[i])
				}
			}
		})
	}
}

// testClaimConcurrent runs 8 workers that claim from 50 tasks at once, each
// rounds times, with leases of leaseFor, and checks that no attempt of a
// task went to two owners and that the attempts of each task are 1..n.
func testClaimConcurrent(t *testing.T, f factory, leaseFor time.Duration, rounds int) {
	t.Parallel()
	const workers, tasks, limit = 8, 50, 3
	s := f.open(t)
	for i := range tasks {
		r := newTask(fmt.Sprintf("t%02d", i))
		r.CreatedAt = at(time.Duration(i%7) * time.Millisecond)
		create(t, s, r)
	}
	now := at(time.Minute)

	type claimKey struct {
		id      string
		attempt int
	}
	var (
		mu     sync.Mutex
		owners = map[claimKey]string{}
		wg     sync.WaitGroup
	)
	for w := range workers {
		owner := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for range rounds {
				for {
					cs, err := s.Claim(context.Background(), store.ClaimParams{Owner: owner, Now: now, LeaseExpiresAt: now.Add(leaseFor), Limit: limit})
					if err != nil {
						t.Errorf("%s: Claim: %v", owner, err)
						return
					}
					mu.Lock()
					for _, c := range cs {
						k := claimKey{c.ID, c.Attempt}
						if prev, ok := owners[k]; ok {
							t.Errorf("%s attempt %d claimed by %s and %s", c.ID, c.Attempt, prev, owner)
						}
						owners[k] = owner
					}
					mu.Unlock()
					// With long leases, claim until nothing is left; with
					// expiring ones, one claim per round.
					if len(cs) == 0 || leaseFor == 0 {
						break
					}
				}
			}
		})
	}
	wg.Wait()

	for i := range tasks {
		id := fmt.Sprintf("t%02d", i)
		r := get(t, s, id)
		if leaseFor > 0 && r.Attempt != 1 {
			t.Errorf("%s: Attempt = %d, want 1", id, r.Attempt)
		}
		for a := 1; a <= r.Attempt; a++ {
			if _, ok := owners[claimKey{id, a}]; !ok {
				t.Errorf("%s: attempt %d of %d was never handed out", id, a, r.Attempt)
			}
		}
		if _, ok := owners[claimKey{id, r.Attempt + 1}]; ok {
			t.Errorf("%s: attempt %d handed out but the task is at %d", id, r.Attempt+1, r.Attempt)
		}
		if r.Attempt > 0 && r.LeaseOwner != owners[claimKey{id, r.Attempt}] {
			t.Errorf("%s: LeaseOwner = %q, want %q, the owner of attempt %d", id, r.LeaseOwner, owners[claimKey{id, r.Attempt}], r.Attempt)
		}
	}
	if leaseFor > 0 && len(owners) != tasks {
		t.Errorf("%d claims, want %d", len(owners), tasks)
	}
	// Expiring leases: every task stays claimable, so every claim takes
	// as many as its limit (more tasks than all workers hold at once).
	if leaseFor == 0 && len(owners) != workers*rounds*limit {
		t.Errorf("%d claims, want %d: every claim of %d of %d claimable tasks", len(owners), workers*rounds*limit, limit, tasks)
	}
}
