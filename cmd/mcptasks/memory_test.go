package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/internal/pgtest"
)

// memoryBudget is what a serve process stays under, besides what its
// running handlers hold, with the given --cache-bytes and
// --max-inflight-bytes: the formula of the README's "Memory" section. A
// process of the binary starts at about 30 MiB; the read cache holds at
// most cacheBytes; each byte of the in-flight budget costs up to four while
// a body is decoded or a reply encoded; and the heap may be twice what is
// live (the memory limit of gcSettings keeps it so).
func memoryBudget(cacheBytes, inflightBytes int64) int64 {
	return 30<<20 + 2*(cacheBytes+4*inflightBytes)
}

// TestMemoryBudget is the large-record soak: a real serve process (built
// without the race detector, whose shadow memory would be measured too),
// on SQLite and on Postgres, with a read cache and an in-flight budget of
// 16 MiB each, gets soakTasks tasks with 256 KiB labels (records of about
// 770 KiB: the label is in the arguments, the status message and the
// result), 8 at a time; once all have ended, each is read twice. Its peak
// resident memory (VmHWM of /proc/PID/status) must stay under
// memoryBudget. Before the SQLite cache was bounded in bytes, every record
// read stayed in memory: 269 MiB at the end of this soak, and 3.1 GB with
// issue 12's 3.9 MB labels.
func TestMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const cacheBytes, inflightBytes = 16 << 20, 16 << 20
	budget := memoryBudget(cacheBytes, inflightBytes)
	bin := buildPlain(t)
	stores := []struct{ name, spec string }{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")},
		{"postgres", pgtest.DSN(t)},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			p := repServeBin(t, bin, st.name, "--store", st.spec, "--log-level", "warn",
				"--cache-bytes", strconv.Itoa(cacheBytes), "--max-inflight-bytes", strconv.Itoa(inflightBytes))
			c := newRepClient(p.url)
			pid := p.cmd.Process.Pid
			start := procMemory(t, pid, "VmRSS")
			began := time.Now()
			runSoak(t, c, soakTasks, soakLabel)
			rss, hwm := procMemory(t, pid, "VmRSS"), procMemory(t, pid, "VmHWM")
			t.Logf("%s: %d tasks of %d KiB labels in %s: RSS %d MiB at start, %d MiB at the end, peak %d MiB (budget %d MiB)",
				st.name, soakTasks, soakLabel>>10, time.Since(began).Round(time.Millisecond), start>>20, rss>>20, hwm>>20, budget>>20)
			if hwm > budget {
				t.Errorf("peak RSS %d MiB, over the budget of %d MiB", hwm>>20, budget>>20)
			}
		})
	}
}

// The soak's load: enough records that keeping them all would be several
// times the budget.
const (
	soakTasks       = 200
	soakLabel       = 256 << 10
	soakConcurrency = 8
)

// runSoak creates n slow_compute tasks with labels of label bytes,
// soakConcurrency at a time, waits for each to end, then, once all have
// ended (so that no write keeps a read from being cached), reads each
// twice more.
func runSoak(t *testing.T, c *repClient, n, label int) {
	t.Helper()
	ids := make([]string, n)
	parallel(t, n, func(i int) error {
		id, err := c.create("slow_compute", map[string]any{"seconds": 0.01, "label": fmt.Sprintf("%04d", i) + strings.Repeat("x", label-4)})
		if err != nil {
			return err
		}
		ids[i] = id
		deadline := time.Now().Add(time.Minute)
		for {
			got, err := c.get(id)
			switch {
			case err != nil:
				return err
			case got["status"] == "completed":
				return nil
			case repTerminal(got["status"]):
				return fmt.Errorf("task %s: %v", id, got["status"])
			case time.Now().After(deadline):
				return fmt.Errorf("task %s: still %v after a minute", id, got["status"])
			}
			time.Sleep(20 * time.Millisecond) // the soak's poll interval
		}
	})
	for range 2 {
		parallel(t, n, func(i int) error {
			_, err := c.get(ids[i])
			return err
		})
	}
}

// parallel runs f(0) … f(n-1), soakConcurrency at a time, and fails t
// with their errors.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range soakConcurrency {
		wg.Go(func() {
			for i := range work {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// procMemory returns a memory field of /proc/PID/status (VmRSS, VmHWM), in
// bytes.
func procMemory(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/status %s: %v", pid, field, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// buildPlain builds mcptasks without the race detector, for measuring its
// memory.
func buildPlain(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcptasks-plain")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build mcptasks: %v\n%s", err, out)
	}
	return bin
}
