package main

// Several replicas on one Postgres schema, with real mcptasks processes:
// requests served by one replica reach handlers running on another, crashed
// and paused workers lose their tasks to live ones without a late write
// getting through, a thousand tasks with racing cancels each end exactly
// once, and a Postgres outage makes requests fail fast and cleanly.
//
// Each test gets a fresh schema (pgtest.DSN): they skip without Postgres
// unless MCPTASKS_REQUIRE_SERVICES=1. TestPostgresOutage stops the shared
// server and runs only with MCPTASKS_OUTAGE_TEST=1.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/postgres"
	"github.com/mcptasks/mcptasks/task"
)

// TestReplicasCrossReplica runs tasks created through a replica without
// workers (B) on another one (A), and answers and cancels them through B:
// A's handlers see the answer and the cancel within one heartbeat (in
// practice at once, through NOTIFY).
func TestReplicasCrossReplica(t *testing.T) {
	dsn := pgtest.DSN(t)
	const lease = 3 * time.Second
	heartbeat := lease / 3
	a := repServe(t, "A", "--store", dsn, "--workers", "4", "--lease", lease.String())
	b := repServe(t, "B", "--store", dsn, "--workers", "0", "--lease", lease.String())
	cb := newRepClient(b.url)
	bound := heartbeat + time.Second // one heartbeat plus the slack of polling and of a loaded machine

	// Answers: 20 tasks wait for a confirmation, parked on A without
	// holding its 4 worker slots.
	const samples = 20
	ids := make([]string, samples)
	for i := range ids {
		ids[i] = cb.mustCreate(t, "confirm_delete", map[string]any{"filename": fmt.Sprintf("f%d.txt", i)})
	}
	waiting := make([]map[string]any, samples)
	for i, id := range ids {
		waiting[i] = cb.waitStatus(t, id, "input_required", 15*time.Second)
	}
	var answerLat []time.Duration
	for i, id := range ids {
		key := repOnlyKey(t, waiting[i])
		cb.must(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}},
		}})
		acked := time.Now()
		got := cb.waitFor(t, id, bound+5*time.Second, 10*time.Millisecond, "completed", func(m map[string]any) bool { return repTerminal(m["status"]) })
		lat := time.Since(acked)
		answerLat = append(answerLat, lat)
		if got["status"] != "completed" || repResultText(got) != fmt.Sprintf("Deleted f%d.txt", i) {
			t.Errorf("task %s after the answer: %v", id, got)
		}
		if lat > bound {
			t.Errorf("task %s: the handler on A took %s to see an answer given on B; want within one heartbeat (%s) + slack = %s", id, lat, heartbeat, bound)
		}
	}

	// Cancels: one 60 s computation at a time, cancelled through B once
	// its handler runs on A.
	var cancelLat []time.Duration
	var cancelIDs []string
	for i := range samples {
		id := cb.mustCreate(t, "slow_compute", map[string]any{"seconds": 60, "label": fmt.Sprintf("c%d", i)})
		cancelIDs = append(cancelIDs, id)
		cb.waitFor(t, id, 15*time.Second, 10*time.Millisecond, "running", func(m map[string]any) bool {
			msg, _ := m["statusMessage"].(string)
			return strings.HasPrefix(msg, "Computing")
		})
		cb.must(t, "tasks/cancel", map[string]any{"taskId": id})
		acked := time.Now()
		got := cb.waitFor(t, id, bound+5*time.Second, 10*time.Millisecond, "terminal", func(m map[string]any) bool { return repTerminal(m["status"]) })
		lat := time.Since(acked)
		cancelLat = append(cancelLat, lat)
		if got["status"] != "cancelled" {
			t.Errorf("task %s after tasks/cancel: %v", id, got)
		}
		if lat > bound {
			t.Errorf("task %s: the handler on A took %s to see a cancel sent to B; want within one heartbeat (%s) + slack = %s", id, lat, heartbeat, bound)
		}
	}

	// Every task ran on A, and ended there: B runs no handler. A logs a
	// task's end after its write, which B may show first: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for _, id := range append(ids, cancelIDs...) {
		for !strings.Contains(a.logs.String(), `msg="task finished" task=`+id) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(a.logs.String(), `msg="task finished" task=`+id) {
			t.Errorf("task %s: A's log has no \"task finished\" line for it", id)
		}
		if regexp.MustCompile(`task=` + regexp.QuoteMeta(id) + ` tool=\S+ attempt=`).MatchString(b.logs.String()) {
			t.Errorf("task %s: B ran it", id)
		}
	}
	med, maxd := repStats(answerLat)
	t.Logf("answer on B -> handler on A -> completed seen on B: median %s, max %s over %d samples (heartbeat %s)", med, maxd, len(answerLat), heartbeat)
	med, maxd = repStats(cancelLat)
	t.Logf("cancel on B -> handler on A -> cancelled seen on B: median %s, max %s over %d samples (heartbeat %s)", med, maxd, len(cancelLat), heartbeat)
}

// TestReplicasKillRecovery kills a replica with SIGKILL while it runs a
// re-runnable task that already got its answer, and a task that may not be
// re-run. A worker process reclaims both once their leases expire: the
// first completes without asking again, the second fails saying its worker
// was lost.
func TestReplicasKillRecovery(t *testing.T) {
	dsn := pgtest.DSN(t)
	db := repDB(t, dsn)
	// A works slowly (export_report: 3 s querying, a question, 3 s
	// writing; failing_job: 2 s); the worker that takes over works fast.
	a := repServe(t, "A", "--store", dsn, "--workers", "4", "--lease", "1s", "--demo-step", "2s")
	r := repServe(t, "R", "--store", dsn, "--workers", "0", "--lease", "1s") // reads, runs nothing
	ca, cr := newRepClient(a.url), newRepClient(r.url)

	export := ca.mustCreate(t, "export_report", map[string]any{"rows": 42})
	asked := cr.waitStatus(t, export, "input_required", 20*time.Second)
	key := repOnlyKey(t, asked)
	if key != "confirm-overwrite" {
		t.Fatalf("export_report asked %q", key)
	}
	cr.must(t, "tasks/update", map[string]any{"taskId": export, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"overwrite": true}},
	}})
	lost := ca.mustCreate(t, "failing_job", map[string]any{})
	cr.waitFor(t, export, 10*time.Second, 20*time.Millisecond, "writing", func(m map[string]any) bool { return m["statusMessage"] == "Writing rows" })
	deadline := time.Now().Add(10 * time.Second)
	for l := repLeaseOf(t, db, lost); l.Attempt != 1 || l.Owner == ""; l = repLeaseOf(t, db, lost) {
		if time.Now().After(deadline) {
			t.Fatalf("failing_job was not claimed by A: %+v", l)
		}
		time.Sleep(20 * time.Millisecond)
	}

	a.kill(t)
	killed := time.Now()
	// Watch the export from the kill on: it must never ask again.
	var (
		seen     []string
		stopSeen = make(chan struct{})
		watchErr atomic.Value
		watched  sync.WaitGroup
	)
	watched.Add(1)
	go func() {
		defer watched.Done()
		for {
			m, err := cr.get(export)
			if err != nil {
				watchErr.Store(err)
				return
			}
			s, _ := m["status"].(string)
			if len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
			if repTerminal(s) {
				return
			}
			select {
			case <-stopSeen:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	w := repWorker(t, "W", "--store", dsn, "--workers", "4", "--lease", "1s", "--demo-step", "100ms")

	got := cr.waitFor(t, export, 20*time.Second, 20*time.Millisecond, "terminal", func(m map[string]any) bool { return repTerminal(m["status"]) })
	recovered := time.Since(killed)
	close(stopSeen)
	watched.Wait()
	if err := watchErr.Load(); err != nil {
		t.Fatalf("watching the export: %v", err)
	}
	if got["status"] != "completed" || repResultText(got) != "Wrote 42 rows to report.csv" {
		t.Errorf("export_report after the crash: %v", got)
	}
	if res, _ := got["result"].(map[string]any); res["isError"] == true {
		t.Errorf("export_report ended with a tool error: %v", got)
	}
	for _, s := range seen {
		if s == "input_required" {
			t.Errorf("export_report asked again after the crash: statuses seen %v", seen)
		}
	}
	if l := repLeaseOf(t, db, export); l.Attempt != 2 {
		t.Errorf("export_report: attempt %d, want 2 (re-run once)", l.Attempt)
	}
	failed := cr.waitStatus(t, lost, "failed", 20*time.Second)
	errObj, _ := failed["error"].(map[string]any)
	if msg, _ := errObj["message"].(string); !regexp.MustCompile(`worker .*lost`).MatchString(msg) {
		t.Errorf("failing_job after the crash: error %v, want a \"worker … lost\" message", failed["error"])
	}
	if n := repLiveTasks(t, db); n != 0 {
		t.Errorf("%d tasks are still working or input_required", n)
	}
	if !strings.Contains(w.logs.String(), "re-running task after a lost worker") {
		t.Errorf("the worker did not log the re-run")
	}
	t.Logf("export_report re-run and completed %s after SIGKILL (lease 1s); statuses seen after the kill: %v; failing_job: %q",
		recovered.Round(time.Millisecond), seen, errObj["message"])
}

// TestReplicasStopFencing pauses a replica with SIGSTOP past its lease
// while it runs tasks. Another replica reclaims and completes them; when the
// first one resumes, its late writes are fenced off: the results stay the
// second replica's.
func TestReplicasStopFencing(t *testing.T) {
	dsn := pgtest.DSN(t)
	db := repDB(t, dsn)
	a := repServe(t, "A", "--store", dsn, "--workers", "4", "--lease", "1s")
	ca := newRepClient(a.url)

	const n = 4
	ids := make([]string, n)
	for i := range ids {
		ids[i] = ca.mustCreate(t, "slow_compute", map[string]any{"seconds": 3, "label": fmt.Sprintf("s%d", i)})
	}
	for _, id := range ids {
		ca.waitFor(t, id, 10*time.Second, 20*time.Millisecond, "running", func(m map[string]any) bool {
			msg, _ := m["statusMessage"].(string)
			return strings.HasPrefix(msg, "Computing")
		})
	}
	time.Sleep(300 * time.Millisecond)
	a.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGCONT) })

	// B starts once A holds every task, so that it only reclaims.
	b := repServe(t, "B", "--store", dsn, "--workers", "4", "--lease", "1s")
	cb := newRepClient(b.url)
	final := make([]map[string]any, n)
	for i, id := range ids {
		final[i] = cb.waitStatus(t, id, "completed", 20*time.Second)
		if want := fmt.Sprintf("Computed %q in 3s", fmt.Sprintf("s%d", i)); repResultText(final[i]) != want {
			t.Errorf("task %s: result %q, want %q", id, repResultText(final[i]), want)
		}
		if l := repLeaseOf(t, db, id); l.Attempt != 2 {
			t.Errorf("task %s: attempt %d, want 2 (reclaimed once)", id, l.Attempt)
		}
	}
	pausedFor := time.Since(stopped)
	a.signal(t, syscall.SIGCONT)

	// A's handlers have all finished their 3 s while it was stopped. Each
	// either tries to finish and is fenced, or its heartbeat finds the lease
	// gone first and drops the task; neither writes.
	var fenced, dropped int
	for _, id := range ids {
		re := regexp.MustCompile(`msg="finish task" task=` + regexp.QuoteMeta(id) + `.*lease lost|msg="task left to another worker" task=` + regexp.QuoteMeta(id))
		line := repWaitLog(t, a, re, 15*time.Second)
		if strings.Contains(line, "finish task") {
			fenced++
		} else {
			dropped++
		}
		if strings.Contains(a.logs.String(), `msg="task finished" task=`+id) {
			t.Errorf("task %s: A logged a successful finish after resuming", id)
		}
	}
	a.kill(t) // A writes nothing more: what follows reads all it wrote

	// The engine's own lease clock usually stops A before it writes. The
	// store's fence is the second line: the writes A would make, with its
	// attempt, are refused on the very rows B completed.
	st, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range ids {
		now := time.Now().UTC().Truncate(time.Millisecond)
		late := store.FenceParams{ID: id, Attempt: 1, Now: now}
		if err := st.Finish(context.Background(), store.FinishParams{FenceParams: late, Status: task.Completed, Result: []byte(`{"content":[]}`)}); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("task %s: a late Finish at attempt 1: %v, want store.ErrLeaseLost", id, err)
		}
		sts, err := st.HeartbeatMany(context.Background(), store.HeartbeatManyParams{
			Leases: []store.Lease{{ID: id, Attempt: 1}}, Now: now, LeaseExpiresAt: now.Add(time.Second)})
		if err != nil || len(sts) != 1 || !sts[0].Lost {
			t.Errorf("task %s: a late heartbeat at attempt 1: %v, %v, want the lease lost", id, sts, err)
		}
		if err := st.SetStatusMessage(context.Background(), store.StatusMessageParams{FenceParams: late, StatusMessage: "late"}); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("task %s: a late SetStatusMessage at attempt 1: %v, want store.ErrLeaseLost", id, err)
		}
	}
	for i, id := range ids {
		for _, c := range []*repClient{cb} {
			got := c.mustGet(t, id)
			if got["status"] != "completed" || !jsonEqual(got["result"], final[i]["result"]) || got["lastUpdatedAt"] != final[i]["lastUpdatedAt"] {
				t.Errorf("task %s changed after A resumed: %v, was %v", id, got, final[i])
			}
		}
	}
	t.Logf("A paused %s; after SIGCONT %d late finish(es) were fenced by the store (\"finish task … lease lost\") and %d handler(s) were stopped first by A's heartbeat (the lease had expired on A's own clock); direct late writes at attempt 1 were all refused",
		pausedFor.Round(time.Millisecond), fenced, dropped)
}

// TestReplicasThousandTasks runs 1,000 short tasks on two replicas with
// workers while cancels for a random half race their completions: every
// task ends in exactly one terminal state, which never changes after.
func TestReplicasThousandTasks(t *testing.T) {
	dsn := pgtest.DSN(t)
	db := repDB(t, dsn)
	args := []string{"--store", dsn, "--workers", "16", "--lease", "3s", "--log-level", "info"}
	a := repServe(t, "A", args...)
	b := repServe(t, "B", args...)
	clients := []*repClient{newRepClient(a.url), newRepClient(b.url)}

	const total = 1000
	type tk struct {
		id     string
		label  string
		cancel bool // a cancel is sent
		final  map[string]any
	}
	tasks := make([]*tk, total)
	for i := range tasks {
		tasks[i] = &tk{label: fmt.Sprintf("t%d", i), cancel: i%2 == 0}
	}
	rand.Shuffle(total, func(i, j int) { tasks[i].cancel, tasks[j].cancel = tasks[j].cancel, tasks[i].cancel })

	var (
		errMu sync.Mutex
		errs  []string
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	start := time.Now()
	var cancels sync.WaitGroup
	next := atomic.Int64{}
	var creators sync.WaitGroup
	for g := range 8 {
		creators.Add(1)
		go func() {
			defer creators.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				x := tasks[i]
				c := clients[(i+g)%2]
				id, err := c.create("slow_compute", map[string]any{"seconds": 0.05 + 0.15*rand.Float64(), "label": x.label})
				if err != nil {
					fail("create %s: %v", x.label, err)
					continue
				}
				x.id = id
				if x.cancel {
					cancels.Add(1)
					delay := time.Duration(rand.Int64N(int64(300 * time.Millisecond)))
					time.AfterFunc(delay, func() {
						defer cancels.Done()
						if _, err := clients[rand.IntN(2)].call("tasks/cancel", map[string]any{"taskId": id}); err != nil {
							fail("cancel %s: %v", id, err)
						}
					})
				}
			}
		}()
	}
	creators.Wait()
	created := time.Since(start)
	cancels.Wait()

	// Poll every unfinished task, through either replica, until all are
	// terminal.
	pending := map[*tk]bool{}
	for _, x := range tasks {
		if x.id != "" {
			pending[x] = true
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		var mu sync.Mutex
		work := make(chan *tk)
		var pollers sync.WaitGroup
		for g := range 8 {
			pollers.Add(1)
			go func() {
				defer pollers.Done()
				for x := range work {
					m, err := clients[g%2].get(x.id)
					if err != nil {
						fail("get %s: %v", x.id, err)
						continue
					}
					if repTerminal(m["status"]) {
						mu.Lock()
						x.final = m
						delete(pending, x)
						mu.Unlock()
					}
				}
			}()
		}
		mu.Lock()
		list := make([]*tk, 0, len(pending))
		for x := range pending {
			list = append(list, x)
		}
		mu.Unlock()
		for _, x := range list {
			work <- x
		}
		close(work)
		pollers.Wait()
		if len(pending) > 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	allDone := time.Since(start)
	for _, e := range errs {
		t.Error(e)
	}
	if len(pending) > 0 {
		t.Fatalf("%d tasks not terminal after 90s", len(pending))
	}

	counts := map[string]int{}
	cancelledOfCancelled := 0
	for _, x := range tasks {
		if x.id == "" {
			continue
		}
		s := x.final["status"].(string)
		counts[s]++
		switch {
		case s == "completed":
			if want := fmt.Sprintf("Computed %q in", x.label); !strings.HasPrefix(repResultText(x.final), want) {
				t.Errorf("task %s completed with %v", x.id, x.final["result"])
			}
		case s == "cancelled" && x.cancel:
			cancelledOfCancelled++
			if x.final["result"] != nil {
				t.Errorf("cancelled task %s has a result: %v", x.id, x.final)
			}
		default:
			t.Errorf("task %s (cancel sent: %v) ended %s: %v", x.id, x.cancel, s, x.final)
		}
	}
	// Terminal is final: two more reads, through each replica, find the
	// same status, result and lastUpdatedAt. The replicas stop their
	// workers first (SIGTERM drains), so that no write can come after the
	// reads: a late write shows, whenever it came.
	for _, p := range []*repProc{a, b} {
		p.signal(t, syscall.SIGTERM)
		<-p.done
	}
	a, b = repServe(t, "A2", "--store", dsn, "--workers", "0"), repServe(t, "B2", "--store", dsn, "--workers", "0")
	clients = []*repClient{newRepClient(a.url), newRepClient(b.url)}
	for round := range 2 {
		var wg sync.WaitGroup
		work := make(chan *tk)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for x := range work {
					m, err := clients[(g+round)%2].get(x.id)
					if err != nil {
						fail("re-read %s: %v", x.id, err)
						continue
					}
					if m["status"] != x.final["status"] || !jsonEqual(m["result"], x.final["result"]) || m["lastUpdatedAt"] != x.final["lastUpdatedAt"] {
						fail("task %s changed after it was terminal: %v, was %v", x.id, m, x.final)
					}
				}
			}()
		}
		for _, x := range tasks {
			if x.id != "" {
				work <- x
			}
		}
		close(work)
		wg.Wait()
	}
	errMu.Lock()
	for _, e := range errs {
		t.Error(e)
	}
	errMu.Unlock()
	// Exactly one terminal write per task: no task finished on both
	// replicas (or twice on one).
	finishes := map[string]int{}
	re := regexp.MustCompile(`msg="task finished" task=(\S+)`)
	for _, p := range []*repProc{a, b} {
		for _, m := range re.FindAllStringSubmatch(p.logs.String(), -1) {
			finishes[m[1]]++
		}
	}
	for id, k := range finishes {
		if k > 1 {
			t.Errorf("task %s finished %d times", id, k)
		}
	}
	if n := repLiveTasks(t, db); n != 0 {
		t.Errorf("%d tasks are still live", n)
	}
	t.Logf("%d tasks created in %s, all terminal %s after the first create; %v; %d of %d cancels won (%d tasks finished by a handler, the rest cancelled before a claim)",
		total, created.Round(time.Millisecond), allDone.Round(time.Millisecond), counts, cancelledOfCancelled, total/2, len(finishes))
}

// pgVersion returns the version of the local Postgres cluster.
func pgVersion(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(entries) != 1 {
		t.Fatalf("find the Postgres cluster under /etc/postgresql: %v %v", entries, err)
	}
	return entries[0].Name()
}

func pgctl(t *testing.T, args ...string) error {
	t.Helper()
	out, err := exec.Command("pg_ctlcluster", append([]string{"--skip-systemctl-redirect", pgVersion(t), "main"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctlcluster %v: %v: %s", args, err, out)
	}
	return nil
}

// TestPostgresOutage stops the shared Postgres for a few seconds under load:
// requests fail fast with a clean JSON-RPC error, /readyz says 503, and once
// the server is back both replicas serve again, without a restart, and
// every task whose creation was acknowledged is still there.
//
// It stops the server every other test uses, so it runs only when asked:
// MCPTASKS_OUTAGE_TEST=1 go test -run TestPostgresOutage ./cmd/mcptasks/
func TestPostgresOutage(t *testing.T) {
	if os.Getenv("MCPTASKS_OUTAGE_TEST") != "1" {
		t.Skip("stops the shared Postgres server; set MCPTASKS_OUTAGE_TEST=1 to run it on its own")
	}
	dsn := pgtest.DSN(t)
	t.Cleanup(func() {
		if err := pgctl(t, "status"); err != nil {
			if err := pgctl(t, "start"); err != nil {
				t.Errorf("restart Postgres: %v", err)
			}
		}
	})
	args := []string{"--store", dsn, "--workers", "4", "--lease", "2s", "--log-level", "info"}
	a := repServe(t, "A", args...)
	b := repServe(t, "B", args...)
	procs := []*repProc{a, b}
	clients := []*repClient{newRepClient(a.url), newRepClient(b.url)}

	// The phase of the outage: 0 before, 1 stopping, 2 down, 3 starting,
	// 4 back.
	var phase atomic.Int32
	type sample struct {
		phaseStart, phaseEnd int32
		method               string
		took                 time.Duration
		code                 int64 // 0: success
		message              string
		err                  error // transport error
	}
	var (
		mu      sync.Mutex
		samples []sample
		acked   []string // tasks whose CreateTaskResult reached us
	)
	record := func(s sample) {
		mu.Lock()
		samples = append(samples, s)
		mu.Unlock()
	}
	stop := make(chan struct{})
	var load sync.WaitGroup
	for g := range 4 {
		load.Add(1)
		go func() {
			defer load.Done()
			c := clients[g%2]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				method := "tools/call"
				params := map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0.3, "label": fmt.Sprintf("g%d-%d", g, i)}}
				mu.Lock()
				if i%2 == 1 && len(acked) > 0 {
					method, params = "tasks/get", map[string]any{"taskId": acked[rand.IntN(len(acked))]}
				}
				mu.Unlock()
				p0, t0 := phase.Load(), time.Now()
				res, rerr, err := c.do(context.Background(), method, params)
				s := sample{phaseStart: p0, phaseEnd: phase.Load(), method: method, took: time.Since(t0), err: err}
				if rerr != nil {
					s.code, s.message = rerr.Code, rerr.Message
				}
				record(s)
				if err == nil && rerr == nil && method == "tools/call" {
					mu.Lock()
					acked = append(acked, res["taskId"].(string))
					mu.Unlock()
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	// /readyz, watched from its own goroutine.
	type ready struct {
		phaseStart, phaseEnd int32
		replica              string
		status, health       int
		took                 time.Duration
	}
	var readies []ready
	load.Add(1)
	go func() {
		defer load.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			for _, p := range procs {
				p0 := phase.Load()
				st, took := p.readyz()
				health := 0
				if resp, err := http.Get(p.base + "/healthz"); err == nil {
					health = resp.StatusCode
					resp.Body.Close()
				}
				mu.Lock()
				readies = append(readies, ready{p0, phase.Load(), p.name, st, health, took})
				mu.Unlock()
			}
		}
	}()

	time.Sleep(2 * time.Second)
	phase.Store(1)
	t0 := time.Now()
	if err := pgctl(t, "stop", "-m", "fast"); err != nil {
		close(stop)
		load.Wait()
		t.Fatal(err)
	}
	stopTook := time.Since(t0)
	phase.Store(2)
	time.Sleep(4 * time.Second)
	phase.Store(3)
	t1 := time.Now()
	if err := pgctl(t, "start"); err != nil {
		close(stop)
		load.Wait()
		t.Fatal(err)
	}
	startTook := time.Since(t1)
	phase.Store(4)
	back := time.Now()

	// Both replicas become ready again on their own.
	var readyAfter [2]time.Duration
	for i, p := range procs {
		for {
			if st, _ := p.readyz(); st == 200 {
				readyAfter[i] = time.Since(back)
				break
			}
			if time.Since(back) > 20*time.Second {
				t.Fatalf("%s: /readyz not 200 20s after Postgres restarted", p.name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(2 * time.Second) // more load on the recovered replicas
	close(stop)
	load.Wait()

	for _, p := range procs {
		if !p.alive() {
			t.Errorf("%s exited during the outage", p.name)
		}
	}
	// While Postgres was down, every request failed fast with -32603.
	var down, downFailed, afterOK, afterFailed int
	downMessages := map[string]int{}
	var downMax time.Duration
	for _, s := range samples {
		if s.err != nil {
			t.Errorf("%s in phase %d-%d: transport error after %s: %v", s.method, s.phaseStart, s.phaseEnd, s.took, s.err)
			continue
		}
		if s.took > 6*time.Second {
			t.Errorf("%s in phase %d-%d took %s", s.method, s.phaseStart, s.phaseEnd, s.took)
		}
		if s.code != 0 && s.code != -32603 {
			t.Errorf("%s in phase %d-%d: error code %d, want -32603", s.method, s.phaseStart, s.phaseEnd, s.code)
		}
		if s.phaseStart == 2 && s.phaseEnd == 2 {
			down++
			downMax = max(downMax, s.took)
			if s.code != 0 {
				downFailed++
				downMessages[s.method+": "+s.message]++
			} else {
				t.Errorf("%s succeeded while Postgres was down", s.method)
			}
		}
		if s.phaseStart == 4 {
			if s.code == 0 {
				afterOK++
			} else {
				afterFailed++
			}
		}
	}
	if down == 0 {
		t.Errorf("no request was made while Postgres was down")
	}
	var ready503, readyDown int
	var readyMax time.Duration
	for _, r := range readies {
		if r.phaseStart == 2 && r.phaseEnd == 2 {
			readyDown++
			readyMax = max(readyMax, r.took)
			if r.status == 503 {
				ready503++
			} else {
				t.Errorf("%s /readyz while Postgres was down: %d", r.replica, r.status)
			}
			if r.health != 200 {
				t.Errorf("%s /healthz while Postgres was down: %d", r.replica, r.health)
			}
		}
	}
	if readyDown == 0 {
		t.Errorf("/readyz was not probed while Postgres was down")
	}

	// New creates work on both replicas without a restart.
	for i, c := range clients {
		if _, err := c.create("slow_compute", map[string]any{"seconds": 0.1, "label": fmt.Sprintf("after-%d", i)}); err != nil {
			t.Errorf("%s: create after the outage: %v", procs[i].name, err)
		}
	}
	// Every acknowledged task is still there, and ends.
	mu.Lock()
	ids := append([]string(nil), acked...)
	mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	statuses := map[string]int{}
	for _, id := range ids {
		for {
			m, err := clients[rand.IntN(2)].get(id)
			if err != nil {
				t.Errorf("task %s, acknowledged before or during the outage, cannot be read: %v", id, err)
				break
			}
			if repTerminal(m["status"]) {
				statuses[m["status"].(string)]++
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("task %s, acknowledged before or during the outage, is still %v 30 s after it", id, m["status"])
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var reruns, droppedRuns, failedFinishes int
	for _, p := range procs {
		logs := p.logs.String()
		reruns += strings.Count(logs, "re-running task after a lost worker")
		droppedRuns += strings.Count(logs, `msg="task left to another worker"`)
		failedFinishes += strings.Count(logs, `msg="finish task"`)
	}
	t.Logf("errors while down: %v", downMessages)
	t.Logf("handlers stopped by the outage: %d; finishes that failed: %d; tasks re-run after their lease expired: %d", droppedRuns, failedFinishes, reruns)
	t.Logf("Postgres stop took %s, down ~4s, start took %s; %d requests while down, %d failed with -32603 (slowest %s); "+
		"/readyz while down: %d/%d were 503 (slowest %s); ready again after %s (A) and %s (B); after restart %d requests ok, %d failed; "+
		"%d acknowledged tasks all retrievable: %v",
		stopTook.Round(time.Millisecond), startTook.Round(time.Millisecond), down, downFailed, downMax.Round(time.Millisecond),
		ready503, readyDown, readyMax.Round(time.Millisecond), readyAfter[0].Round(time.Millisecond), readyAfter[1].Round(time.Millisecond),
		afterOK, afterFailed, len(ids), statuses)
}
