package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// The engine tests run inside testing/synctest bubbles: time is fake, so
// 30 s leases and heartbeats elapse at once, and synctest.Wait returns when
// every goroutine of the engine is blocked. No test sleeps for real.

const (
	testLease = DefaultLease // 30 s of fake time
	principal = "alice"
)

var bg = context.Background()

// bubble runs f in a synctest bubble. When f and its cleanups (which shut
// the engines down) are done, it checks that no engine goroutine is left;
// synctest itself then fails the test if any goroutine of the bubble is
// still blocked.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		t.Cleanup(func() {
			synctest.Wait()
			checkNoEngineGoroutines(t)
		})
		f(t)
	})
}

// TestMain fails the package if an engine goroutine outlives the tests,
// including the examples, which run outside any bubble. Goroutines that a
// finished Shutdown leaves are on their way out: the check gives them a
// moment, and only a real leak makes it wait the full second.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		var leaked []string
		for deadline := time.Now().Add(time.Second); ; {
			if leaked = engineGoroutines(); len(leaked) == 0 || time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
			time.Sleep(time.Millisecond)
		}
		for _, g := range leaked {
			fmt.Fprintf(os.Stderr, "goroutine leaked past the tests:\n%s\n\n", g)
			code = 1
		}
	}
	os.Exit(code)
}

// engineFrames name the functions of the engine's own goroutines.
var engineFrames = []string{
	"engine.(*Engine).claimLoop",
	"engine.(*Engine).sweepLoop",
	"engine.(*Engine).listenLoop",
	"engine.(*Engine).execute",
	"engine.(*Engine).heartbeat",
	"engine.(*Engine).Shutdown",
	"engine.callHandler",
}

// checkNoEngineGoroutines fails t if a goroutine is still running engine
// code. Call it after synctest.Wait, when every goroutine of the bubble has
// either exited or is blocked.
func checkNoEngineGoroutines(t *testing.T) {
	t.Helper()
	for _, g := range engineGoroutines() {
		t.Errorf("goroutine leaked past Shutdown:\n%s", g)
	}
}

// engineGoroutines returns the stacks of the goroutines running engine code.
func engineGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		for _, f := range engineFrames {
			if strings.Contains(g, f) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// newEngine returns an engine on st that is not started. A cleanup shuts it
// down (every test shuts down every engine it makes) with an hour's drain
// deadline; handlers still running then are cancelled, which is how tests
// end handlers that block until cancelled. The owner defaults to "a".
func newEngine(t *testing.T, st store.Store, tools []*Tool, opts Options) *Engine {
	t.Helper()
	if opts.Owner == "" {
		opts.Owner = "a"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})).With("engine", opts.Owner)
	}
	e, err := New(st, tools, &opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(bg, time.Hour)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown(%s) at cleanup: %v", opts.Owner, err)
		}
	})
	return e
}

// startEngine is newEngine followed by Start.
func startEngine(t *testing.T, st store.Store, tools []*Tool, opts Options) *Engine {
	t.Helper()
	e := newEngine(t, st, tools, opts)
	e.Start(bg)
	return e
}

// count returns how many tasks st holds.
func count(t *testing.T, st store.Counter) int {
	t.Helper()
	c, err := st.CountActive(bg, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c.Working + c.InputRequired
}

// create creates a task of the tool for principal and fails t on error.
func create(t *testing.T, e *Engine, tool string) *task.Record {
	t.Helper()
	r, err := e.Create(bg, CreateParams{Tool: tool, Args: json.RawMessage(`{}`), Principal: principal})
	if err != nil {
		t.Fatalf("Create(%s): %v", tool, err)
	}
	return r
}

// get reads a task straight from the store, as any replica would.
func get(t *testing.T, st store.Store, id string) *task.Record {
	t.Helper()
	r, err := st.Get(bg, id)
	if err != nil {
		t.Fatalf("store.Get(%s): %v", id, err)
	}
	return r
}

// wantStatus fails t unless the stored task has the status.
func wantStatus(t *testing.T, st store.Store, id string, want task.Status) *task.Record {
	t.Helper()
	r := get(t, st, id)
	if r.Status != want {
		t.Fatalf("status = %s (message %q, error %v), want %s", r.Status, r.StatusMessage, r.Error, want)
	}
	return r
}

// update delivers answers and fails t on error.
func update(t *testing.T, e *Engine, id string, answers map[string]string) []string {
	t.Helper()
	m := make(map[string]json.RawMessage, len(answers))
	for k, v := range answers {
		m[k] = json.RawMessage(v)
	}
	acc, err := e.Update(bg, principal, id, m, nil)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return acc
}

// elicit is an InputRequest asking one question.
func elicit(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"method": "elicitation/create",
		"params": map[string]any{"message": msg, "requestedSchema": map[string]any{"type": "object"}},
	})
	return b
}

// accept is an elicitation answer.
func accept(v string) string {
	b, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"v": v}})
	return string(b)
}

// asks returns a map of one elicitation per key.
func asks(keys ...string) map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		m[k] = elicit("What is " + k + "?")
	}
	return m
}

// blockUntilCancelled is a handler that runs until its ctx is done.
func blockUntilCancelled(ctx context.Context, _ *Run) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// returns is a handler that completes with the JSON at once.
func returns(result string) Handler {
	return func(context.Context, *Run) (json.RawMessage, error) { return json.RawMessage(result), nil }
}

// errStoreDown is what a faultStore answers once its process is "gone".
var errStoreDown = errors.New("test: store unreachable")

// faultStore wraps a Store to simulate the failures of the process that
// uses it: a crash (every call fails), hung or falsely acknowledged
// heartbeats, a failed release or input re-read, or a slow claim (Claim
// waits at a gate). The zero value of each knob changes nothing.
type faultStore struct {
	store.Store

	down        atomic.Bool  // every call fails with errStoreDown
	stallHB     atomic.Bool  // Heartbeat blocks until its ctx is done
	failRelease atomic.Bool  // Release fails with errStoreDown
	fakeHB      atomic.Bool  // Heartbeat says "held" without extending the lease
	blipInput   atomic.Int32 // so many next RequestInput calls fail
	cutInput    atomic.Int32 // so many next RequestInput calls commit, then wait for ctx to end and fail with its error
	ctxCreate   atomic.Bool  // Create fails without writing once ctx has ended, as a write the SQLite store has not queued yet
	blipStep    atomic.Int32 // so many next SaveStep calls fail
	blipStatus  atomic.Int32 // so many next SetStatusMessage calls fail
	blipFinish  atomic.Int32 // so many next Finish calls fail
	slowFinish  atomic.Int64 // each Finish takes this long (a time.Duration), or fails once its ctx ends first
	loseCreate  atomic.Int32 // so many next Create calls commit, then fail as if the reply was lost
	failCreate  atomic.Int32 // so many next Create calls fail without writing
	blipGet     atomic.Int32 // so many next Get calls fail
	hbCalls     atomic.Int32 // HeartbeatMany calls

	mu        sync.Mutex
	claimGate chan struct{} // when non-nil, Claim waits for it to close
	finishes  []error       // the result of every Finish
}

func (f *faultStore) check() error {
	if f.down.Load() {
		return errStoreDown
	}
	return nil
}

// gateClaims makes the next Claims wait until the returned func is called.
func (f *faultStore) gateClaims() (open func()) {
	g := make(chan struct{})
	f.mu.Lock()
	f.claimGate = g
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.claimGate = nil
		f.mu.Unlock()
		close(g)
	}
}

func (f *faultStore) finishResults() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.finishes...)
}

func (f *faultStore) Create(ctx context.Context, r *task.Record) error {
	if err := f.check(); err != nil {
		return err
	}
	if f.failCreate.Add(-1) >= 0 {
		return errStoreDown
	}
	if f.ctxCreate.Load() && ctx.Err() != nil {
		return ctx.Err()
	}
	err := f.Store.Create(ctx, r)
	if err == nil && f.loseCreate.Add(-1) >= 0 {
		return errStoreDown // committed, but the caller cannot know
	}
	return err
}

func (f *faultStore) Get(ctx context.Context, id string) (*task.Record, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.blipGet.Add(-1) >= 0 {
		return nil, errStoreDown
	}
	return f.Store.Get(ctx, id)
}

func (f *faultStore) GetFor(ctx context.Context, id, principal string) (*task.Record, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	return f.Store.GetFor(ctx, id, principal)
}

func (f *faultStore) Claim(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	f.mu.Lock()
	g := f.claimGate
	f.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f.Store.Claim(ctx, p)
}

func (f *faultStore) HeartbeatMany(ctx context.Context, p store.HeartbeatManyParams) ([]store.LeaseState, error) {
	f.hbCalls.Add(1)
	if f.stallHB.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.fakeHB.Load() {
		return make([]store.LeaseState, len(p.Leases)), nil
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f.Store.HeartbeatMany(ctx, p)
}

func (f *faultStore) Release(ctx context.Context, p store.FenceParams) error {
	if err := f.check(); err != nil {
		return err
	}
	if f.failRelease.Load() {
		return errStoreDown
	}
	return f.Store.Release(ctx, p)
}

func (f *faultStore) SetStatusMessage(ctx context.Context, p store.StatusMessageParams) error {
	if err := f.check(); err != nil {
		return err
	}
	if f.blipStatus.Add(-1) >= 0 {
		return errStoreDown
	}
	return f.Store.SetStatusMessage(ctx, p)
}

func (f *faultStore) RequestInput(ctx context.Context, p store.RequestInputParams) (map[string]json.RawMessage, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.blipInput.Add(-1) >= 0 {
		return nil, errStoreDown
	}
	if len(p.Requests) > 0 && f.cutInput.Add(-1) >= 0 {
		if _, err := f.Store.RequestInput(context.WithoutCancel(ctx), p); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.Store.RequestInput(ctx, p)
}

func (f *faultStore) SaveStep(ctx context.Context, p store.StepParams) (json.RawMessage, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if f.blipStep.Add(-1) >= 0 {
		return nil, errStoreDown
	}
	return f.Store.SaveStep(ctx, p)
}

func (f *faultStore) Finish(ctx context.Context, p store.FinishParams) error {
	err := f.check()
	if err == nil && f.blipFinish.Add(-1) >= 0 {
		err = errStoreDown
	}
	if d := time.Duration(f.slowFinish.Load()); err == nil && d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil {
		err = f.Store.Finish(ctx, p)
	}
	f.mu.Lock()
	f.finishes = append(f.finishes, err)
	f.mu.Unlock()
	return err
}

func (f *faultStore) Answer(ctx context.Context, p store.AnswerParams) ([]string, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	return f.Store.Answer(ctx, p)
}

func (f *faultStore) RequestCancel(ctx context.Context, p store.CancelParams) (*task.Record, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	return f.Store.RequestCancel(ctx, p)
}

func (f *faultStore) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	return f.Store.DeleteExpired(ctx, now, limit)
}

var _ store.Store = (*faultStore)(nil)

// newMem returns a fresh memory store.
func newMem() *memory.Store { return memory.New() }

// quiet hides the store's change announcements (store.Listener): engines
// on it learn of each other's writes only by reading the store, as
// replicas on a store that announces nothing do.
func quiet(st store.Store) store.Store { return struct{ store.Store }{st} }

// pastCreate waits, in a handler, until its task's create has stored the
// task (2 × foldWindow): the handler's next write is then a store write of
// its own, not folded into the create.
func pastCreate() { time.Sleep(2 * foldWindow) }
