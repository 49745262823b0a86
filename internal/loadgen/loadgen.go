// Package loadgen drives load against an MCP 2026-07-28 server over
// Streamable HTTP and measures it: the engine of "mcptasks bench".
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcptasks/mcptasks/internal/mcptest"
)

// Modes of a run.
const (
	ModeCreate    = "create"    // task-creating tools/call
	ModeGet       = "get"       // tasks/get over pre-created tasks, round-robin
	ModeLifecycle = "lifecycle" // create, poll, answer input, until terminal
	ModeCall      = "call"      // plain synchronous tools/call
	ModeResume    = "resume"    // answer a waiting task, poll until terminal
)

// Config describes a run. Every loop is bounded by Duration and by
// Requests.
type Config struct {
	URL         string
	Mode        string
	Concurrency int
	Duration    time.Duration
	// Requests caps the operations of the run (0: only Duration bounds it).
	Requests int
	// Tool and Args are what tools/call calls.
	Tool string
	Args json.RawMessage
	// Tasks is how many tasks the get and resume modes create first.
	Tasks int
	// IgnorePollInterval makes lifecycle poll as fast as it can instead of
	// honouring pollIntervalMs.
	IgnorePollInterval bool
	// Settle makes a create run end only once the tasks it created have
	// done their work up to their first question or their end: the last
	// task each worker created is polled until it is no longer working,
	// and the run's rate counts that time. Tasks are claimed oldest first,
	// so the earlier ones are done by then too.
	Settle bool
	// Token is sent as a bearer token.
	Token string
	// HTTPClient is used if set.
	HTTPClient *http.Client
}

// Result is what a run measured. Latencies are per operation: one request,
// or one whole lifecycle.
type Result struct {
	Mode        string        `json:"mode"`
	Concurrency int           `json:"concurrency"`
	Ops         int64         `json:"ops"`
	Errors      int64         `json:"errors"`
	FirstError  string        `json:"firstError,omitempty"`
	Elapsed     time.Duration `json:"elapsedNs"`
	PerSecond   float64       `json:"perSecond"`
	P50         time.Duration `json:"p50Ns"`
	P90         time.Duration `json:"p90Ns"`
	P99         time.Duration `json:"p99Ns"`
	Max         time.Duration `json:"maxNs"`
	// Requests counts HTTP requests (more than Ops in lifecycle mode).
	Requests int64 `json:"requests"`
	// Settle is the part of Elapsed spent, after the last create, waiting
	// for the created tasks to settle (Config.Settle).
	Settle time.Duration `json:"settleNs,omitempty"`
}

// maxSamples bounds the latencies kept per worker.
const maxSamples = 1 << 20

// Check reports what in cfg no run can take. An error of Run for a cfg
// that passes it is the server's or the connection's.
func (cfg *Config) Check() error {
	if cfg.Concurrency < 1 {
		return fmt.Errorf("concurrency must be at least 1, got %d", cfg.Concurrency)
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return errors.New("bound the run with a duration or a request count")
	}
	switch cfg.Mode {
	case ModeCreate, ModeCall, ModeGet, ModeLifecycle, ModeResume:
		return nil
	}
	return fmt.Errorf("unknown mode %q: use create, get, lifecycle, resume or call", cfg.Mode)
}

// Run runs the load described by cfg.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Duration <= 0 {
		cfg.Duration = time.Hour
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency * 2}, Timeout: 30 * time.Second}
	}
	c := &caller{url: cfg.URL, token: cfg.Token, hc: hc}
	var op func(ctx context.Context, i int64) error
	var last *lastTasks // the tasks to settle
	switch cfg.Mode {
	case ModeCreate:
		if cfg.Settle {
			last = &lastTasks{ops: make([]int64, cfg.Concurrency), ids: make([]string, cfg.Concurrency)}
		}
		op = func(ctx context.Context, i int64) error {
			t, err := c.createTask(ctx, cfg.Tool, cfg.Args)
			if err == nil && last != nil {
				last.add(i, t.TaskID)
			}
			return err
		}
	case ModeCall:
		op = func(ctx context.Context, _ int64) error { return c.callSync(ctx, cfg.Tool, cfg.Args) }
	case ModeGet:
		ids, err := c.createMany(ctx, cfg)
		if err != nil {
			return nil, err
		}
		op = func(ctx context.Context, i int64) error { _, err := c.get(ctx, ids[i%int64(len(ids))]); return err }
	case ModeLifecycle:
		op = func(ctx context.Context, _ int64) error { return c.lifecycle(ctx, cfg) }
	case ModeResume:
		ts, err := c.waitingMany(ctx, cfg)
		if err != nil {
			return nil, err
		}
		if cfg.Requests <= 0 || cfg.Requests > len(ts) {
			cfg.Requests = len(ts) // each task is answered once
		}
		op = func(ctx context.Context, i int64) error { return c.resume(ctx, ts[i]) }
	default:
		return nil, fmt.Errorf("unknown mode %q: use create, get, lifecycle, resume or call", cfg.Mode)
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var (
		next       atomic.Int64
		errs       atomic.Int64
		firstErr   atomic.Value
		mu         sync.Mutex
		all        []time.Duration
		wg         sync.WaitGroup
		reqsBefore = c.requests.Load()
	)
	start := time.Now()
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for runCtx.Err() == nil {
				i := next.Add(1) - 1
				if cfg.Requests > 0 && i >= int64(cfg.Requests) {
					break
				}
				t0 := time.Now()
				err := op(runCtx, i)
				d := time.Since(t0)
				if err != nil {
					if runCtx.Err() != nil {
						break // the run ended mid-operation: not counted
					}
					if errs.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
				}
				if len(lat) < maxSamples {
					lat = append(lat, d)
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	var settle time.Duration
	if last != nil {
		t0 := time.Now()
		if err := c.settle(ctx, last.ids); err != nil {
			return nil, err
		}
		settle = time.Since(t0)
	}
	elapsed := time.Since(start)
	slices.Sort(all)
	r := &Result{Mode: cfg.Mode, Concurrency: cfg.Concurrency, Ops: int64(len(all)), Errors: errs.Load(),
		Elapsed: elapsed, Requests: c.requests.Load() - reqsBefore, Settle: settle}
	if s, ok := firstErr.Load().(string); ok {
		r.FirstError = s
	}
	if len(all) > 0 {
		r.PerSecond = float64(len(all)) / elapsed.Seconds()
		r.P50, r.P90, r.P99, r.Max = pct(all, 50), pct(all, 90), pct(all, 99), all[len(all)-1]
	}
	return r, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// Table formats results as an aligned text table.
func Table(rs ...*Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %4s %10s %10s %9s %9s %9s %9s %7s\n", "mode", "c", "ops", "ops/s", "p50", "p90", "p99", "max", "errors")
	for _, r := range rs {
		fmt.Fprintf(&b, "%-10s %4d %10d %10.0f %9s %9s %9s %9s %7d\n", r.Mode, r.Concurrency, r.Ops, r.PerSecond,
			round(r.P50), round(r.P90), round(r.P99), round(r.Max), r.Errors)
		if r.FirstError != "" {
			fmt.Fprintf(&b, "  first error: %s\n", r.FirstError)
		}
	}
	return b.String()
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// caller sends stateless 2026-07-28 requests.
type caller struct {
	url      string
	token    string
	hc       *http.Client
	id       atomic.Int64
	requests atomic.Int64
}

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"mcptasks-bench","version":"1"}}`

const metaNoTasks = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"mcptasks-bench","version":"1"}}`

// rpcError is a JSON-RPC error reply.
type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// do sends one request whose params are the JSON members in params (without
// braces) and decodes the result into out.
func (c *caller) do(ctx context.Context, method, name, metaJSON, params string, out any) error {
	var body bytes.Buffer
	fmt.Fprintf(&body, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s`, c.id.Add(1), method, metaJSON)
	if params != "" {
		body.WriteString("," + params)
	}
	body.WriteString("}}")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, &body)
	if err != nil {
		return err
	}
	mcptest.SetHeaders(req.Header, method, name)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	c.requests.Add(1)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = mcptest.LastMessage(raw)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return fmt.Errorf("HTTP %d: not a JSON-RPC reply: %.200q", resp.StatusCode, raw)
	}
	if msg.Error != nil {
		return msg.Error
	}
	if out != nil {
		return json.Unmarshal(msg.Result, out)
	}
	return nil
}

func callParams(tool string, args json.RawMessage) string {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	t, _ := json.Marshal(tool)
	return `"name":` + string(t) + `,"arguments":` + string(args)
}

// taskState is the part of a task the load generator reads.
type taskState struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
}

func (c *caller) createTask(ctx context.Context, tool string, args json.RawMessage) (*taskState, error) {
	var t taskState
	if err := c.do(ctx, "tools/call", tool, meta, callParams(tool, args), &t); err != nil {
		return nil, err
	}
	if t.ResultType != "task" {
		return nil, fmt.Errorf("tools/call %s: resultType %q, want a task", tool, t.ResultType)
	}
	return &t, nil
}

func (c *caller) callSync(ctx context.Context, tool string, args json.RawMessage) error {
	var r struct {
		ResultType string `json:"resultType"`
	}
	if err := c.do(ctx, "tools/call", tool, metaNoTasks, callParams(tool, args), &r); err != nil {
		return err
	}
	if r.ResultType != "" && r.ResultType != "complete" {
		return fmt.Errorf("tools/call %s: resultType %q, want complete", tool, r.ResultType)
	}
	return nil
}

func (c *caller) get(ctx context.Context, id string) (*taskState, error) {
	var t taskState
	err := c.do(ctx, "tasks/get", id, meta, `"taskId":"`+id+`"`, &t)
	return &t, err
}

// lastTasks keeps the ids of the last tasks a create run made: slot i%n
// holds the task of the latest operation i that maps to it.
type lastTasks struct {
	mu  sync.Mutex
	ops []int64
	ids []string
}

func (l *lastTasks) add(i int64, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := i % int64(len(l.ids))
	if l.ids[k] == "" || i > l.ops[k] {
		l.ops[k], l.ids[k] = i, id
	}
}

// settle polls each task of ids until it is no longer working.
func (c *caller) settle(ctx context.Context, ids []string) error {
	for _, id := range ids {
		if id == "" {
			continue // a worker that created nothing
		}
		for {
			t, err := c.get(ctx, id)
			if err != nil {
				return fmt.Errorf("settling task %s: %w", id, err)
			}
			if t.Status != "working" {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("settling task %s: %w", id, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

// forEach calls fn(i) for every i in [0, n), conc calls at a time, and
// returns the first error (the calls under way then finish; no new one
// starts).
func forEach(n, conc int, fn func(i int) error) error {
	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		firstErr atomic.Value
	)
	for range max(conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n) && firstErr.Load() == nil; i = next.Add(1) - 1 {
				if err := fn(int(i)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	err, _ := firstErr.Load().(error)
	return err
}

// createMany creates cfg.Tasks tasks for the get mode, cfg.Concurrency at a time.
func (c *caller) createMany(ctx context.Context, cfg Config) ([]string, error) {
	ids := make([]string, max(cfg.Tasks, 1))
	err := forEach(len(ids), cfg.Concurrency, func(i int) error {
		t, err := c.createTask(ctx, cfg.Tool, cfg.Args)
		if err != nil {
			return err
		}
		ids[i] = t.TaskID
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating the tasks to poll: %w", err)
	}
	return ids, nil
}

// waitingMany creates cfg.Tasks tasks for the resume mode and returns them
// once each waits for input, cfg.Concurrency at a time.
func (c *caller) waitingMany(ctx context.Context, cfg Config) ([]*taskState, error) {
	ids, err := c.createMany(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ts := make([]*taskState, len(ids))
	err = forEach(len(ids), cfg.Concurrency, func(i int) error {
		for {
			t, err := c.get(ctx, ids[i])
			if err != nil {
				return err
			}
			switch t.Status {
			case "input_required":
				t.TaskID = ids[i]
				ts[i] = t
				return nil
			case "working":
				time.Sleep(10 * time.Millisecond) // the poll interval while the tasks get ready
			default:
				return fmt.Errorf("task %s is %s, want input_required", ids[i], t.Status)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("creating the tasks to answer: %w", err)
	}
	return ts, nil
}

// resume answers every input request of t, a task that waits for input,
// and polls it every millisecond until it is terminal: the time from the
// answer to the first poll that sees it completed.
func (c *caller) resume(ctx context.Context, t *taskState) error {
	resp := map[string]json.RawMessage{}
	for k, req := range t.InputRequests {
		resp[k] = acceptAll(req)
	}
	b, _ := json.Marshal(resp)
	if err := c.do(ctx, "tasks/update", t.TaskID, meta, `"taskId":"`+t.TaskID+`","inputResponses":`+string(b), nil); err != nil {
		return err
	}
	for {
		got, err := c.get(ctx, t.TaskID)
		switch {
		case err != nil:
			return err
		case got.Status == "completed":
			return nil
		case got.Status == "failed" || got.Status == "cancelled":
			return fmt.Errorf("task %s ended %s", t.TaskID, got.Status)
		}
		time.Sleep(time.Millisecond)
	}
}

// lifecycle creates a task and drives it to a terminal status, answering
// every input request by accepting it with a default answer.
func (c *caller) lifecycle(ctx context.Context, cfg Config) error {
	t, err := c.createTask(ctx, cfg.Tool, cfg.Args)
	if err != nil {
		return err
	}
	answered := map[string]bool{}
	for {
		switch t.Status {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("task %s ended %s", t.TaskID, t.Status)
		case "input_required":
			resp := map[string]json.RawMessage{}
			for k, req := range t.InputRequests {
				if !answered[k] {
					resp[k] = acceptAll(req)
					answered[k] = true
				}
			}
			if len(resp) > 0 {
				b, _ := json.Marshal(resp)
				if err := c.do(ctx, "tasks/update", t.TaskID, meta, `"taskId":"`+t.TaskID+`","inputResponses":`+string(b), nil); err != nil {
					return err
				}
			}
		}
		if !cfg.IgnorePollInterval && t.PollIntervalMs > 0 {
			timer := time.NewTimer(time.Duration(t.PollIntervalMs) * time.Millisecond)
			select {
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			case <-timer.C:
			}
		}
		id := t.TaskID
		if t, err = c.get(ctx, id); err != nil {
			return err
		}
		t.TaskID = id
	}
}

// acceptAll answers an elicitation/create by accepting it, with true for
// every boolean property and the default (or an empty value) for others.
func acceptAll(req json.RawMessage) json.RawMessage {
	var r struct {
		Params struct {
			RequestedSchema struct {
				Properties map[string]struct {
					Type    string `json:"type"`
					Default any    `json:"default"`
				} `json:"properties"`
			} `json:"requestedSchema"`
		} `json:"params"`
	}
	_ = json.Unmarshal(req, &r)
	content := map[string]any{}
	for name, p := range r.Params.RequestedSchema.Properties {
		switch {
		case p.Default != nil:
			content[name] = p.Default
		case p.Type == "boolean":
			content[name] = true
		case p.Type == "number", p.Type == "integer":
			content[name] = 0
		default:
			content[name] = "bench"
		}
	}
	b, _ := json.Marshal(map[string]any{"action": "accept", "content": content})
	return b
}
