package main

// The history checker: issue 12's kill-and-restart experiment as a test.
// Two serve replicas and a worker share a Postgres schema; clients run task
// lifecycles against them (create with an idempotency key, poll, answer
// questions, cancel some) while a nemesis kills processes with SIGKILL and
// restarts them, holds a lock on the tasks table, and terminates the
// store's connections. Every observation the clients make is recorded;
// at the end the history is checked, Jepsen-style: every acknowledged task
// exists and is terminal within a bound, never changes after it was seen
// terminal, is never asked an answered question again, has the right
// result, and no create made two tasks.
//
// It runs for MCPTASKS_HISTORY_DURATION (default 60s) of faults, with
// MCPTASKS_HISTORY_TEST=1 (.ci/run sets it).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcptasks/mcptasks/internal/pgtest"
	"github.com/mcptasks/mcptasks/task"
)

// Settings of the history checker.
const (
	histLease   = 2 * time.Second
	histClients = 8 // lifecycles at once
	// histSettle bounds the time every acknowledged task takes to end once
	// the faults stop: a lease for a lost run to be reclaimed, three runs
	// of the slowest tool, and the slack of a loaded machine.
	histSettle = 45 * time.Second
)

func TestHistory(t *testing.T) {
	if os.Getenv("MCPTASKS_HISTORY_TEST") != "1" {
		t.Skip("set MCPTASKS_HISTORY_TEST=1 to run the history checker (.ci/run does)")
	}
	faults := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("MCPTASKS_HISTORY_DURATION")); err == nil && d > 0 {
		faults = d
	}
	base := pgtest.DSN(t)
	app := "mcptasks-history-" + randomHex(4)
	dsn := pgtest.WithParam(base, "application_name", app)
	args := []string{"--store", dsn, "--lease", histLease.String(), "--demo-step", "150ms", "--workers", "4"}

	n := &nemesis{t: t, dsn: base, app: app}
	n.serve("A", args)
	n.serve("B", args)
	n.worker("W", args)
	h := &history{tasks: map[string]*histTask{}}
	clients := []*repClient{newRepClient(n.procs["A"].url), newRepClient(n.procs["B"].url)}

	faultsEnd := time.Now().Add(faults)
	settled := faultsEnd.Add(histSettle)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range histClients {
		wg.Go(func() {
			for time.Now().Before(faultsEnd) {
				h.lifecycle(clients, int(next.Add(1)), settled)
			}
		})
	}
	n.run(faultsEnd)
	n.healAll()
	wg.Wait()

	// Every acknowledged task, read through both replicas twice, once the
	// clients are done: there, terminal, and the same every time.
	lost := 0
	for _, ht := range h.acknowledged() {
		var first *histObs
		ok := true
		for range 2 {
			for _, c := range clients {
				o, err := h.observe(c, ht, time.Now().Add(10*time.Second))
				if err != nil {
					h.violation("task %s (%s): final read: %v", ht.id, ht.tool, err)
					ok = false
					continue
				}
				if !task.Status(o.status).Terminal() {
					h.violation("task %s (%s): %s at the end, %s after the faults stopped", ht.id, ht.tool, o.status, histSettle)
					ok = false
				}
				if first == nil {
					first = o
				} else if !first.same(o) {
					h.violation("task %s (%s): final reads differ: %v and %v", ht.id, ht.tool, first, o)
				}
			}
		}
		if !ok {
			lost++
		}
	}
	h.check()
	dup := h.checkStore(t, base)
	// A run that did nothing, or from which the cluster never recovered,
	// must not pass for want of violations.
	if len(h.acknowledged()) == 0 || h.outcomes()["completed"] == 0 {
		h.violation("no task was acknowledged and completed: outcomes %v", h.outcomes())
	}
	if n.kills() == 0 {
		h.violation("the nemesis killed no process in %s of faults", faults)
	}
	if u := h.unacked.Load(); u > 0 {
		h.violation("%d creates were never acknowledged, retried until %s after the faults stopped", u, histSettle)
	}

	t.Logf("history: %s of faults: %d SIGKILLs (%s), %d table locks, %d connection terminations; %d lifecycles, %d tasks acknowledged (%d after a retried create), %d creates never acknowledged; outcomes %v; lost %d of %d, duplicated %d, violations %d",
		faults, n.kills(), n.killSummary(), n.locks, n.terminations, next.Load(), len(h.acknowledged()), h.retried.Load(), h.unacked.Load(),
		h.outcomes(), lost, len(h.acknowledged()), dup, len(h.violations))
	for _, v := range h.violations {
		t.Error(v)
	}
}

// nemesis breaks the cluster: it kills and restarts processes, and stalls
// the database, always within the test's own schema and connections.
type nemesis struct {
	t     *testing.T
	dsn   string // the test's schema, for its own connections
	app   string // application_name of the processes' store connections
	procs map[string]*repProc
	args  map[string][]string
	addrs map[string]string

	killed       map[string]int
	locks        int
	terminations int
}

func (n *nemesis) serve(name string, args []string) {
	if n.procs == nil {
		n.procs, n.args, n.addrs, n.killed = map[string]*repProc{}, map[string][]string{}, map[string]string{}, map[string]int{}
	}
	if n.addrs[name] == "" {
		n.addrs[name] = freeAddr(n.t)
	}
	n.args[name] = args
	n.procs[name] = repServeAt(n.t, binary, name, n.addrs[name], args...)
}

func (n *nemesis) worker(name string, args []string) {
	n.args[name] = args
	n.procs[name] = repWorker(n.t, name, args...)
}

// restart starts a killed process again, where it was.
func (n *nemesis) restart(name string) {
	if n.addrs[name] != "" {
		n.serve(name, n.args[name])
	} else {
		n.worker(name, n.args[name])
	}
}

// run breaks something every 0.5–2 s until end.
func (n *nemesis) run(end time.Time) {
	names := []string{"A", "B", "W"}
	for time.Now().Before(end) {
		switch r := mrand.IntN(10); {
		case r < 6: // a SIGKILL, and a restart 0.2–1.5 s later
			name := names[mrand.IntN(len(names))]
			n.procs[name].kill(n.t)
			n.killed[name]++
			sleepRandom(200*time.Millisecond, 1500*time.Millisecond)
			n.restart(name)
		case r < 8: // the tasks table locked for 1–4 s
			n.lockTable(time.Duration(1000+mrand.IntN(3000)) * time.Millisecond)
		default: // every store connection cut
			n.terminate()
		}
		sleepRandom(500*time.Millisecond, 2*time.Second)
	}
}

// healAll restarts whatever is down.
func (n *nemesis) healAll() {
	for name, p := range n.procs {
		if !p.alive() {
			n.restart(name)
		}
	}
}

// lockTable holds an exclusive lock on the test schema's tasks table for
// d: every store call waits, as in a vacuum or a migration gone long.
func (n *nemesis) lockTable(d time.Duration) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.dsn)
	if err != nil {
		n.t.Fatalf("nemesis: connect: %v", err)
	}
	defer conn.Close(context.Background())
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE mcptasks_tasks IN ACCESS EXCLUSIVE MODE`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_sleep($1)`, d.Seconds())
		return err
	})
	if err != nil {
		n.t.Fatalf("nemesis: lock the tasks table: %v", err)
	}
	n.locks++
}

// terminate ends every connection of the processes' stores (those with
// the test's application_name), as a failover or a proxy restart would.
func (n *nemesis) terminate() {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.dsn)
	if err != nil {
		n.t.Fatalf("nemesis: connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, n.app); err != nil {
		n.t.Fatalf("nemesis: terminate the store's connections: %v", err)
	}
	n.terminations++
}

func (n *nemesis) kills() int {
	sum := 0
	for _, k := range n.killed {
		sum += k
	}
	return sum
}

func (n *nemesis) killSummary() string {
	return fmt.Sprintf("A %d, B %d, worker %d", n.killed["A"], n.killed["B"], n.killed["W"])
}

// history is what the clients saw.
type history struct {
	mu         sync.Mutex
	tasks      map[string]*histTask // by task id
	keys       map[string]string    // task id by idempotency key, of the acknowledged creates
	violations []string

	retried atomic.Int64 // acknowledged creates that needed more than one request
	unacked atomic.Int64 // creates given up, never acknowledged
}

// histTask is one acknowledged task and what was seen of it.
type histTask struct {
	id, tool, key string
	args          map[string]any
	cancel        bool           // a tasks/cancel was sent (acknowledged or not)
	answers       map[string]any // the answer content sent, by input key
	answeredAt    map[string]time.Time
	obs           []*histObs
}

// histObs is one tasks/get answer.
type histObs struct {
	sent, recv time.Time
	status     string
	message    string
	updated    string
	result     string // the text of a completed task's first content block
	isError    bool
	errMsg     string // a failed task's error message
	inputKeys  []string
}

func (o *histObs) same(p *histObs) bool {
	return o.status == p.status && o.message == p.message && o.updated == p.updated && o.result == p.result &&
		o.isError == p.isError && o.errMsg == p.errMsg && slices.Equal(o.inputKeys, p.inputKeys)
}

func (o *histObs) String() string {
	return fmt.Sprintf("{%s %q updated %s result %q isError %v error %q inputs %v}", o.status, o.message, o.updated, o.result, o.isError, o.errMsg, o.inputKeys)
}

func (h *history) violation(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.violations = append(h.violations, fmt.Sprintf(format, args...))
}

// lifecycle runs the n-th lifecycle: a create, polls until the end,
// answers and maybe a cancel, until deadline.
func (h *history) lifecycle(cs []*repClient, n int, deadline time.Time) {
	tool, args := histCall(n)
	ht := h.create(cs, tool, args, deadline)
	if ht == nil {
		return
	}
	var cancelAt time.Time
	if mrand.IntN(5) == 0 {
		cancelAt = time.Now().Add(time.Duration(mrand.IntN(1500)) * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		c := cs[mrand.IntN(len(cs))]
		o, err := h.observe(c, ht, deadline)
		if err != nil {
			time.Sleep(100 * time.Millisecond) // a replica down or a stall: poll again
			continue
		}
		if task.Status(o.status).Terminal() {
			return
		}
		for _, key := range o.inputKeys {
			h.answer(c, ht, key)
		}
		if !cancelAt.IsZero() && time.Now().After(cancelAt) && !ht.cancelSent() {
			h.cancel(c, ht)
		}
		time.Sleep(50 * time.Millisecond) // the clients' poll interval
	}
}

// histCall returns the tool and arguments of the n-th lifecycle; the
// arguments name the lifecycle, so that its result can be checked.
func histCall(n int) (string, map[string]any) {
	switch n % 4 {
	case 0:
		return "slow_compute", map[string]any{"seconds": 0.2 + float64(n%5)/10, "label": fmt.Sprintf("h%d", n)}
	case 1:
		return "confirm_delete", map[string]any{"filename": fmt.Sprintf("h%d.txt", n)}
	case 2:
		return "export_report", map[string]any{"rows": n}
	default:
		return "failing_job", map[string]any{}
	}
}

// create calls the tool with a new idempotency key, again with the same
// key on any replica while the outcome is unknown, until deadline.
func (h *history) create(cs []*repClient, tool string, args map[string]any, deadline time.Time) *histTask {
	key := randomHex(16)
	for try := 0; time.Now().Before(deadline); try++ {
		c := cs[mrand.IntN(len(cs))]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, rerr, err := c.do(ctx, "tools/call", map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{task.MetaIdempotencyKey: key}})
		cancel()
		if err == nil && rerr == nil {
			id, _ := res["taskId"].(string)
			if res["resultType"] != "task" || id == "" {
				h.violation("tools/call %s: want a task, got %v", tool, res)
				return nil
			}
			if try > 0 {
				h.retried.Add(1)
			}
			return h.acked(id, tool, key, args)
		}
		if rerr != nil && rerr.Code != -32603 {
			h.violation("tools/call %s: error %d %s", tool, rerr.Code, rerr.Message)
			return nil
		}
		time.Sleep(time.Duration(100+mrand.IntN(200)) * time.Millisecond)
	}
	h.unacked.Add(1)
	return nil
}

// acked records an acknowledged create. A retried create must get the
// task of the key's first acknowledgement, never another.
func (h *history) acked(id, tool, key string, args map[string]any) *histTask {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.keys == nil {
		h.keys = map[string]string{}
	}
	if prev, ok := h.keys[key]; ok && prev != id {
		h.violations = append(h.violations, fmt.Sprintf("idempotency key %s: task %s, then task %s", key, prev, id))
	}
	h.keys[key] = id
	if ht := h.tasks[id]; ht != nil {
		return ht
	}
	ht := &histTask{id: id, tool: tool, key: key, args: args, answers: map[string]any{}, answeredAt: map[string]time.Time{}}
	h.tasks[id] = ht
	return ht
}

func (h *history) acknowledged() []*histTask {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*histTask
	for _, ht := range h.tasks {
		out = append(out, ht)
	}
	return out
}

// observe reads the task through c and records what it saw.
func (h *history) observe(c *repClient, ht *histTask, deadline time.Time) (*histObs, error) {
	if d := time.Now().Add(10 * time.Second); d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	o := &histObs{sent: time.Now()}
	res, rerr, err := c.do(ctx, "tasks/get", map[string]any{"taskId": ht.id})
	o.recv = time.Now()
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		if rerr.Code != -32603 { // a stall: anything else is wrong
			h.violation("task %s (%s): tasks/get: error %d %s", ht.id, ht.tool, rerr.Code, rerr.Message)
		}
		return nil, fmt.Errorf("tasks/get: %d %s", rerr.Code, rerr.Message)
	}
	o.status, _ = res["status"].(string)
	o.message, _ = res["statusMessage"].(string)
	o.updated, _ = res["lastUpdatedAt"].(string)
	if r, ok := res["result"].(map[string]any); ok {
		o.result = repResultText(res)
		o.isError, _ = r["isError"].(bool)
	}
	if e, ok := res["error"].(map[string]any); ok {
		o.errMsg, _ = e["message"].(string)
	}
	if reqs, ok := res["inputRequests"].(map[string]any); ok {
		for k := range reqs {
			o.inputKeys = append(o.inputKeys, k)
		}
		slices.Sort(o.inputKeys)
	}
	h.mu.Lock()
	ht.obs = append(ht.obs, o)
	h.mu.Unlock()
	return o, nil
}

// answer answers the task's question key once: confirm_delete at random,
// export_report always yes.
func (h *history) answer(c *repClient, ht *histTask, key string) {
	h.mu.Lock()
	_, done := ht.answeredAt[key]
	content, chosen := ht.answers[key]
	if !chosen {
		switch key {
		case "confirm-delete":
			content = map[string]any{"confirm": mrand.IntN(2) == 0}
		case "confirm-overwrite":
			content = map[string]any{"overwrite": true}
		default:
			h.violations = append(h.violations, fmt.Sprintf("task %s (%s) asked an unknown key %q", ht.id, ht.tool, key))
			h.mu.Unlock()
			return
		}
		ht.answers[key] = content
	}
	h.mu.Unlock()
	if done {
		return // its acknowledgement is recorded; check() judges a re-ask
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, rerr, err := c.do(ctx, "tasks/update", map[string]any{"taskId": ht.id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": content},
	}})
	if err != nil || rerr != nil {
		return // not acknowledged: asked again at the next poll
	}
	h.mu.Lock()
	ht.answeredAt[key] = time.Now()
	h.mu.Unlock()
}

func (ht *histTask) cancelSent() bool { return ht.cancel }

func (h *history) cancel(c *repClient, ht *histTask) {
	h.mu.Lock()
	ht.cancel = true
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, _ = c.do(ctx, "tasks/cancel", map[string]any{"taskId": ht.id})
}

// check judges every task's history.
func (h *history) check() {
	for _, ht := range h.acknowledged() {
		h.mu.Lock()
		obs := slices.Clone(ht.obs)
		answeredAt := ht.answeredAt
		h.mu.Unlock()
		slices.SortFunc(obs, func(a, b *histObs) int { return a.sent.Compare(b.sent) })
		var final *histObs
		for _, o := range obs {
			// Never changes after terminal: a read sent after a terminal
			// answer arrived sees the same.
			if final != nil && o.sent.After(final.recv) && !o.same(final) {
				h.violation("task %s (%s) changed after it was seen terminal: %v, then %v", ht.id, ht.tool, final, o)
			}
			if final == nil && task.Status(o.status).Terminal() {
				final = o
			}
			// An answered key is never asked again.
			for _, k := range o.inputKeys {
				if at, ok := answeredAt[k]; ok && o.sent.After(at) {
					h.violation("task %s (%s) asked %q again after its answer was acknowledged: %v", ht.id, ht.tool, k, o)
				}
			}
		}
		if final == nil {
			h.violation("task %s (%s) never seen terminal", ht.id, ht.tool)
			continue
		}
		if msg := ht.wrongResult(final); msg != "" {
			h.violation("task %s (%s %v): %s: %v", ht.id, ht.tool, ht.args, msg, final)
		}
	}
}

// wrongResult says what is wrong with the task's end, or "".
func (ht *histTask) wrongResult(o *histObs) string {
	rerun := ht.tool != "failing_job"
	switch o.status {
	case "cancelled":
		if !ht.cancel {
			return "cancelled without a tasks/cancel"
		}
		return ""
	case "failed":
		switch {
		case rerun && strings.HasPrefix(o.errMsg, "The worker running this task was lost ") && strings.HasSuffix(o.errMsg, " times; giving up"):
		case !rerun && strings.HasPrefix(o.errMsg, "The worker running this task was lost (attempt "):
		default:
			return "failed with an unexpected error"
		}
		return ""
	}
	var want string
	isError := false
	switch ht.tool {
	case "slow_compute":
		s, _ := ht.args["seconds"].(float64)
		want = fmt.Sprintf("Computed %q in %s", ht.args["label"], time.Duration(s*float64(time.Second)))
	case "confirm_delete":
		c, _ := ht.answers["confirm-delete"].(map[string]any)
		if c == nil {
			return "completed without an answer"
		}
		want = map[bool]string{true: "Deleted ", false: "Kept "}[c["confirm"] == true] + ht.args["filename"].(string)
	case "export_report":
		want = fmt.Sprintf("Wrote %d rows to report.csv", ht.args["rows"])
	case "failing_job":
		want, isError = "the job failed, as it always does", true
	}
	if o.result != want || o.isError != isError {
		return fmt.Sprintf("result %q (isError %v), want %q (isError %v)", o.result, o.isError, want, isError)
	}
	return ""
}

func (h *history) outcomes() map[string]int {
	out := map[string]int{}
	for _, ht := range h.acknowledged() {
		h.mu.Lock()
		if len(ht.obs) > 0 {
			out[ht.obs[len(ht.obs)-1].status]++
		}
		h.mu.Unlock()
	}
	return out
}

// checkStore reads the tasks table: every row was made with an
// idempotency key (a create that ignored its key would have made one
// without), and every acknowledged key names the task acknowledged. It
// returns the number of duplicated tasks.
func (h *history) checkStore(t *testing.T, dsn string) int {
	t.Helper()
	db := repDB(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.Query(ctx, `SELECT id, coalesce(idempotency_key, '') FROM mcptasks_tasks`)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]string{}
	dup := 0
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			t.Fatal(err)
		}
		if key == "" {
			dup++
			h.violation("task %s was stored without its idempotency key", id)
		}
		byKey[key] = id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, id := range h.keys {
		if byKey[key] != id {
			dup++
			h.violations = append(h.violations, fmt.Sprintf("idempotency key %s: acknowledged task %s, stored %q", key, id, byKey[key]))
		}
	}
	return dup
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sleepRandom(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(mrand.Int64N(int64(hi-lo))))
}
