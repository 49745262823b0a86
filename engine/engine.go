// Package engine runs tasks: it creates them durably, leases them to a
// bounded pool of workers, feeds them input, cancels them, and sweeps them
// away when their TTL ends. It knows nothing of HTTP or JSON-RPC framing.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcptasks/mcptasks/store"
)

// Defaults for the zero values of [Options].
const (
	DefaultWorkers       = 64
	DefaultLease         = 30 * time.Second
	DefaultClaimInterval = time.Second
	DefaultSweepInterval = time.Minute
	DefaultTTL           = time.Hour
	DefaultPollInterval  = time.Second
	DefaultSweepBatch    = 500
	DefaultSuspendAfter  = 5 * time.Second
	DefaultMaxHeld       = 100
	DefaultMaxHolding    = 256
)

// ErrNotFound is returned for a task that does not exist, has expired, or
// belongs to another principal. The three cases are deliberately the same.
var ErrNotFound = errors.New("task not found")

// ErrUnknownTool is returned by Create for a tool the engine does not know.
var ErrUnknownTool = errors.New("engine: unknown tool")

// Options configure an [Engine]. The zero value is usable.
type Options struct {
	// Workers bounds the number of handlers running at once
	// (DefaultWorkers if zero). Handlers parked waiting for input do not
	// count against it (those of tools that hold, up to MaxHolding: see
	// there). A handler holds its slot while it waits for the
	// store (its question, its status, its steps), so the default is
	// sized for handlers that wait rather than compute: with 16, the
	// handlers of a burst of tasks that ask at once ran at two thirds of
	// the rate at which the tasks were created (BENCHMARKS.md). Negative means none: the engine then creates,
	// reads, answers and cancels tasks, and sweeps, but runs no handler
	// (other processes do).
	Workers int
	// Lease is how long a claim lasts without a heartbeat (DefaultLease if
	// zero). Every Lease/3 one store call extends the leases of all the
	// handlers of the process and reads back their cancel requests and
	// answers (for those that no wake-up announced). A crashed worker's
	// tasks are reclaimed once their lease expires.
	Lease time.Duration
	// SuspendAfter is how long a handler waits for input holding its
	// goroutine, lease and heartbeat before it is suspended
	// (DefaultSuspendAfter if zero; negative suspends at once). A suspended
	// handler returns ErrSuspended and its task waits, input_required and
	// held by nobody, costing no memory and no work, until its answers
	// arrive; then a worker runs the handler again, and its RequestInput
	// returns the stored answers at once. Only tools that may be re-run
	// (RetryPolicy.Rerun) and do not hold (Tool.Hold) are suspended.
	SuspendAfter time.Duration
	// MaxHeld bounds the handlers that hold while they wait for input, for
	// up to SuspendAfter (DefaultMaxHeld if zero; negative means none: all
	// are suspended at once). A handler that asks while as many hold is
	// suspended at once, by the same store write that records its request,
	// so that a burst of tasks that ask costs neither memory nor an extra
	// write per task. Handlers of tools that hold (Tool.Hold) or may not
	// be re-run do not count: MaxHolding bounds those. Each handler
	// that holds keeps about 30 KiB, which the collector's GOGC multiplies
	// at the peak of a burst; holding pays off only for an answer within
	// SuspendAfter, as a re-run after it is cheap.
	MaxHeld int
	// MaxHolding bounds the handlers of tools that hold (Tool.Hold, or not
	// re-runnable) that give their worker slot up while they wait for
	// input (DefaultMaxHolding if zero; negative means none do). Such a
	// handler holds what a re-run could not rebuild (a command tool's
	// process, a proxied call's upstream session) for as long as the
	// person takes. One of MaxHolding tokens takes its slot's place until
	// its run ends, so that once answered it runs on at once; past
	// MaxHolding, one that waits keeps its worker slot, so that what it
	// holds counts among the Workers and new tasks wait for a free slot,
	// rather than each starting one more. Such handlers are at most
	// Workers + MaxHolding.
	MaxHolding int
	// ClaimInterval is how often idle workers look for work that no
	// in-process signal announced, such as tasks whose lease expired
	// (DefaultClaimInterval if zero).
	ClaimInterval time.Duration
	// SweepInterval is how often expired tasks are deleted
	// (DefaultSweepInterval if zero).
	SweepInterval time.Duration
	// DefaultTTL is the TTL of tasks whose tool sets none (DefaultTTL if
	// zero). Negative means no limit.
	DefaultTTL time.Duration
	// DefaultPollInterval is the pollIntervalMs suggested for tasks whose
	// tool sets none (DefaultPollInterval if zero).
	DefaultPollInterval time.Duration
	// Owner names this worker in leases; random if empty.
	Owner string
	// Now returns the current time (time.Now if nil).
	Now func() time.Time
	// Logger receives the engine's logs (discarded if nil).
	Logger *slog.Logger
	// Observer, if set, receives the engine's store calls and task flow,
	// for metrics.
	Observer Observer
	// TracerProvider, if set, traces every run of a task: a span "task
	// TOOL" whose parent is the span that created the task (the record's
	// TraceParent), so that a run on any process, or a re-run after a
	// crash, continues the creator's trace. Nil means no tracing, at no
	// cost.
	TracerProvider trace.TracerProvider
}

// Engine creates and runs tasks on a [store.Store].
type Engine struct {
	st    store.Store // the store, observed if Options.Observer is set
	raw   store.Store // the store as given, for its optional interfaces
	obs   Observer
	trc   trace.Tracer // nil without Options.TracerProvider
	opts  Options
	log   *slog.Logger
	tools map[string]*Tool
	names []string

	wake chan struct{} // buffered(1): new work may be claimable
	// backlog says that tasks may be waiting for a claim: this engine
	// left one queued at its create, or the last claim took as many tasks
	// as it had slots for. A freed slot then wakes the claim loop at once.
	backlog  atomic.Bool
	draining chan struct{} // closed by Shutdown
	slots    chan struct{} // one token per running handler
	held     chan struct{} // one token per handler holding while it waits for input
	holding  chan struct{} // one token per handler of a tool that holds, waiting without a worker slot
	idle     chan job      // to a runner waiting for its next job (unbuffered)

	// abandoned ends once Shutdown's deadline has passed: the writes of
	// runs' ends stop retrying then (see execute's finish).
	abandoned context.Context
	abandon   context.CancelFunc

	mu      sync.Mutex
	running map[string]*execution
	// claiming counts the store calls in flight that may lease tasks to
	// this engine (a claim, a create claimed in its insert); while there
	// are any, cancels of tasks that no run here tracks are kept in
	// cancelled (at most maxEarlyCancels), for a run that such a call
	// begins to be cancelled at once (see notify, track).
	claiming  int
	cancelled map[string]bool
	hbStop    chan struct{} // closed to stop the heartbeat loop; nil when it does not run
	// claimCtx is the context of the claim loop, set by Start and guarded
	// by mu: Create claims the tasks it makes under it (nil: not started).
	claimCtx context.Context
	// queueCreates makes Create leave every task queued for the claim
	// loop, as before create-with-claim: the baseline of the create
	// benchmark, set by it only.
	queueCreates bool

	startOnce sync.Once
	drainOnce sync.Once
	stop      context.CancelFunc // stops claiming and sweeping; called with mu held
	loops     sync.WaitGroup     // claim and sweep loops
	handlers  sync.WaitGroup     // running executions
	beats     sync.WaitGroup     // the heartbeat loop
}

// New returns an Engine on st that runs the given tools. It does not start
// any worker: call [Engine.Start] on processes that run tools.
func New(st store.Store, tools []*Tool, opts *Options) (*Engine, error) {
	e := &Engine{st: st, raw: st, obs: nopObserver{}, tools: map[string]*Tool{}, running: map[string]*execution{}}
	if opts != nil {
		e.opts = *opts
	}
	o := &e.opts
	o.Workers = or(o.Workers, DefaultWorkers)
	o.Lease = or(o.Lease, DefaultLease)
	o.ClaimInterval = or(o.ClaimInterval, DefaultClaimInterval)
	o.SweepInterval = or(o.SweepInterval, DefaultSweepInterval)
	o.DefaultTTL = or(o.DefaultTTL, DefaultTTL)
	o.DefaultPollInterval = or(o.DefaultPollInterval, DefaultPollInterval)
	o.SuspendAfter = or(o.SuspendAfter, DefaultSuspendAfter)
	o.MaxHeld = or(o.MaxHeld, DefaultMaxHeld)
	o.MaxHolding = or(o.MaxHolding, DefaultMaxHolding)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Owner == "" {
		host, _ := os.Hostname()
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if o.Observer != nil {
		e.obs = o.Observer
		e.st = observed{st: st, obs: o.Observer}
	}
	if o.TracerProvider != nil {
		e.trc = o.TracerProvider.Tracer(tracerName)
	}
	e.log = o.Logger
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	for _, t := range tools {
		if err := t.validate(); err != nil {
			return nil, err
		}
		if _, dup := e.tools[t.Name]; dup {
			return nil, fmt.Errorf("engine: tool %q registered twice", t.Name)
		}
		e.tools[t.Name] = t
		e.names = append(e.names, t.Name)
	}
	e.wake = make(chan struct{}, 1)
	e.draining = make(chan struct{})
	e.abandoned, e.abandon = context.WithCancel(context.Background())
	e.slots = make(chan struct{}, max(o.Workers, 0))
	e.idle = make(chan job)
	e.held = make(chan struct{}, max(o.MaxHeld, 0))
	e.holding = make(chan struct{}, max(o.MaxHolding, 0))
	return e, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// now returns the current time at the millisecond precision that stores keep.
func (e *Engine) now() time.Time {
	return e.opts.Now().UTC().Truncate(time.Millisecond)
}

// Tool returns the registered tool with the name, or nil.
func (e *Engine) Tool(name string) *Tool { return e.tools[name] }

// signal tells the claim loop that work may be waiting.
func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
