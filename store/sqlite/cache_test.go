package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/storetest"
	"github.com/mcptasks/mcptasks/task"
)

func TestStore_NoCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "tasks.db"), &Options{CacheSize: -1})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func (c *cache) hitCount() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// TestCache_Hits checks that a second Get of an unchanged task is a hit,
// that a write of this process is seen at once, and that the cache holds
// no more than its size.
func TestCache_Hits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "tasks.db"), &Options{CacheSize: 2, CacheMaxStale: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Create(ctx, newTask(id)); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string) *task.Record {
		t.Helper()
		r, err := s.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		return r
	}
	get("a")
	if n := s.cache.hitCount(); n != 0 {
		t.Fatalf("hits after the first Get = %d, want 0", n)
	}
	r := get("a")
	if n := s.cache.hitCount(); n != 1 {
		t.Fatalf("hits after the second Get = %d, want 1", n)
	}
	r.StatusMessage = "changed by the caller" // must not reach the cache
	if got := get("a"); got.StatusMessage != "" {
		t.Errorf("a caller's change to a returned record reached the cache: %q", got.StatusMessage)
	}

	if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "a", Principal: "alice", Now: t0}); err != nil {
		t.Fatal(err)
	}
	if got := get("a"); got.Status != task.Cancelled {
		t.Errorf("after RequestCancel, Get = %s, want cancelled", got.Status)
	}

	get("b")
	get("c")
	s.cache.mu.Lock()
	n := s.cache.recs.Len()
	s.cache.mu.Unlock()
	if n > 2 {
		t.Errorf("cache holds %d tasks, want at most CacheSize 2", n)
	}
}

// TestCache_Bytes checks the byte bound: however many tasks are read, the
// cache holds at most CacheBytes of them, its count of bytes stays exact,
// and a task larger than a sixteenth of the bound is never cached.
func TestCache_Bytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const budget = 64 << 10
	s, err := Open(ctx, filepath.Join(t.TempDir(), "tasks.db"), &Options{CacheBytes: budget, CacheMaxStale: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	withArgs := func(id string, argBytes int) *task.Record {
		r := newTask(id)
		r.Args = json.RawMessage(`{"label":"` + strings.Repeat("x", argBytes) + `"}`)
		return r
	}
	const small = 1 << 10 // 64 of them would need about 96 KiB with the overhead
	for i := range 64 {
		id := fmt.Sprintf("s%02d", i)
		if err := s.Create(ctx, withArgs(id, small)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatal(err)
		}
		s.cache.mu.Lock()
		var sum int64
		s.cache.recs.Each(func(r *task.Record) { sum += r.Size() })
		n, counted := s.cache.recs.Len(), s.cache.recs.Bytes()
		s.cache.mu.Unlock()
		if counted != sum || counted > budget {
			t.Fatalf("after %d reads: %d tasks, counted %d bytes, they hold %d; want equal and at most %d", i+1, n, counted, sum, budget)
		}
	}
	if err := s.Create(ctx, withArgs("big", budget/16)); err != nil {
		t.Fatal(err)
	}
	before := s.cache.hitCount()
	for range 2 {
		if _, err := s.Get(ctx, "big"); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.cache.hitCount(); n != before {
		t.Errorf("a task larger than a sixteenth of CacheBytes was served from the cache (%d hits)", n-before)
	}
}

// TestCache_OtherPrincipal checks that another principal's GetFor of a
// cached task is not answered from the cache: it reads the file, as an
// unknown id does, so that its timing does not tell that the task exists.
func TestCache_OtherPrincipal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "tasks.db"), &Options{CacheMaxStale: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, newTask("a")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first fills the cache, the second hits
		if _, err := s.GetFor(ctx, "a", "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.cache.hitCount(); n != 1 {
		t.Fatalf("hits after alice's two reads = %d, want 1", n)
	}
	for _, id := range []string{"a", "unknown"} {
		if _, err := s.GetFor(ctx, id, "bob"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("bob's GetFor(%s) = %v, want ErrNotFound", id, err)
		}
	}
	if n := s.cache.hitCount(); n != 1 {
		t.Errorf("hits after bob's reads = %d, want still 1: another principal's task was served from the cache", n)
	}
}

// TestCache_ReadsFollowWrites checks, with readers racing a writer, that a
// Get that begins after a write returned never sees an older record.
func TestCache_ReadsFollowWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	defer s.Close()
	if err := s.Create(ctx, newTask("t")); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Claim(ctx, store.ClaimParams{Owner: "w", Now: t0, LeaseExpiresAt: t0.Add(time.Hour)})
	if err != nil || len(cs) != 1 {
		t.Fatalf("Claim = %d, %v", len(cs), err)
	}
	const writes = 200
	var written atomic.Int64 // the last message whose write returned
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for written.Load() < writes {
				before := written.Load()
				r, err := s.Get(ctx, "t")
				if err != nil {
					t.Error(err)
					return
				}
				got, _ := strconv.ParseInt(r.StatusMessage, 10, 64)
				if got < before {
					t.Errorf("Get returned message %d after write %d had returned", got, before)
					return
				}
			}
		})
	}
	for i := int64(1); i <= writes; i++ {
		err := s.SetStatusMessage(ctx, store.StatusMessageParams{
			FenceParams: store.FenceParams{ID: "t", Attempt: 1, Now: t0}, StatusMessage: strconv.FormatInt(i, 10),
		})
		if err != nil {
			t.Fatal(err)
		}
		written.Store(i)
	}
	wg.Wait()
	if s.cache.hitCount() == 0 {
		t.Error("no Get was served by the cache")
	}
}

// TestCache_OtherProcess checks how a write made through another handle on
// the same file (as by another process) is seen: possibly late within
// CacheMaxStale of the last check, and at once after it.
func TestCache_OtherProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	a, err := Open(ctx, path, &Options{CacheMaxStale: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	var now atomic.Int64 // a's clock, in nanoseconds since start
	start := time.Now()
	a.cache.mu.Lock()
	a.cache.now = func() time.Time { return start.Add(time.Duration(now.Load())) }
	a.cache.checkedAt = start
	a.cache.mu.Unlock()

	if err := a.Create(ctx, newTask("t")); err != nil {
		t.Fatal(err)
	}
	status := func() task.Status {
		t.Helper()
		r, err := a.Get(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	status() // cached
	if _, err := b.RequestCancel(ctx, store.CancelParams{ID: "t", Principal: "alice", Now: t0}); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != task.Working {
		t.Errorf("within CacheMaxStale of the last check: %s, want the cached working", got)
	}
	now.Add(int64(2 * time.Minute))
	for range 3 { // the first read goes to the file; the check follows
		if got := status(); got != task.Cancelled {
			t.Fatalf("after CacheMaxStale: %s, want cancelled", got)
		}
	}
}

// TestListen_OtherProcess checks that a write made through another handle
// on the same file (as by a worker process beside serve) reaches a
// listener as a resync, with the cache on and off; the listener's own
// writes come one by one.
func TestListen_OtherProcess(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, -1} {
		t.Run(fmt.Sprintf("CacheSize=%d", size), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			path := filepath.Join(t.TempDir(), "tasks.db")
			a, err := Open(ctx, path, &Options{CacheSize: size})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			events, err := a.Listen(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := func(kind store.EventKind, id string) {
				t.Helper()
				timeout := time.After(10 * time.Second)
				for {
					select {
					case ev := <-events:
						if ev.Kind == kind && ev.TaskID == id {
							return
						}
					case <-timeout:
						t.Fatalf("no %s event for %q within 10 s", kind, id)
					}
				}
			}
			if err := a.Create(ctx, newTask("own")); err != nil {
				t.Fatal(err)
			}
			want(store.EventCreated, "own")
			if err := b.Create(ctx, newTask("other")); err != nil {
				t.Fatal(err)
			}
			want(store.EventResync, "")
		})
	}
}

// TestCache_OverlappingReads plays Gets of one task whose reads overlap a
// write of another process, which no write window of this one shows, step
// by step: "begin X" is a Get X that misses and reads the file, "end X"
// its fill, "write" the other process's cancel. Whatever order the reads
// end in, a Get that follows returns the newest record that a Get
// returned (the cancelled task); reads that agree keep the task cached.
func TestCache_OverlappingReads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps []string
		want  task.Status
		hit   bool // the Get that follows must be answered from the cache
	}{
		{"OlderEndsLast", []string{"begin A", "write", "begin B", "end B", "end A"}, task.Cancelled, false},
		{"OlderEndsFirst", []string{"begin A", "write", "begin B", "end A", "end B"}, task.Cancelled, false},
		{"TwoOlderEndLast", []string{"begin A", "begin C", "write", "begin B", "end B", "end A", "end C"}, task.Cancelled, false},
		{"Same", []string{"begin A", "begin B", "end B", "end A"}, task.Working, true},
		{"OneAfterTheOther", []string{"begin A", "end A", "write"}, task.Working, true}, // stale within CacheMaxStale
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "tasks.db")
			// No check for the other's writes within the test: only the
			// fills decide what is cached.
			a, err := Open(ctx, path, &Options{CacheMaxStale: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := Open(ctx, path, &Options{CacheSize: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := a.Create(ctx, newTask("t")); err != nil {
				t.Fatal(err)
			}
			type read struct {
				t ticket
				r *task.Record
			}
			reads := map[string]read{}
			for _, step := range tt.steps {
				switch verb, name, _ := strings.Cut(step, " "); verb {
				case "begin": // the first half of Store.read
					r, tk := a.cache.get("t", nil)
					if r != nil {
						t.Fatalf("%s: a hit, want a miss", step)
					}
					r, err := scanRecord(a.get.QueryRowContext(ctx, "t"))
					if err != nil {
						t.Fatalf("%s: %v", step, err)
					}
					reads[name] = read{tk, r}
				case "end":
					a.cache.fill(reads[name].t, "t", reads[name].r)
				case "write":
					if _, err := b.RequestCancel(ctx, store.CancelParams{ID: "t", Principal: "alice", Now: t0}); err != nil {
						t.Fatal(err)
					}
				default:
					t.Fatalf("unknown step %q", step)
				}
			}
			hits := a.cache.hitCount()
			r, err := a.Get(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tt.want {
				t.Errorf("after %q, Get = %s, want %s", tt.steps, r.Status, tt.want)
			}
			if tt.hit && a.cache.hitCount() == hits {
				t.Errorf("after %q, Get missed the cache, want a hit", tt.steps)
			}
			a.cache.mu.Lock()
			defer a.cache.mu.Unlock()
			if n := len(a.cache.reading); n != 0 {
				t.Errorf("%d tasks still being read, want 0", n)
			}
		})
	}
}
