package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/internal/loadgen"
	"github.com/mcptasks/mcptasks/internal/mcptest"
	"github.com/mcptasks/mcptasks/internal/pgtest"
)

// TestThousandLifecycles drives 1,000 concurrent task lifecycles (create,
// poll honouring pollIntervalMs, until terminal), then 200 more that answer
// a question on the way, against the real binary on SQLite: zero errors,
// and no task is left non-terminal.
func TestThousandLifecycles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	addr := freeAddr(t)
	p := start(t, addr, "--store", "sqlite:"+filepath.Join(t.TempDir(), "tasks.db"),
		"--demo-step", "20ms", "--workers", "64", "--log-level", "warn")
	for _, tc := range []struct {
		tool string
		args string
		n    int
	}{
		{"slow_compute", `{"seconds":0.05,"label":"load"}`, 1000},
		{"export_report", `{"rows":10}`, 200}, // asks a question on the way
	} {
		r, err := loadgen.Run(context.Background(), loadgen.Config{
			URL: p.url, Mode: loadgen.ModeLifecycle, Concurrency: tc.n, Requests: tc.n,
			Duration: 2 * time.Minute, Tool: tc.tool, Args: []byte(tc.args),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d lifecycles in %s (%.0f/s), p50 %s, p99 %s, %d requests", tc.tool, r.Ops, r.Elapsed.Round(time.Millisecond),
			r.PerSecond, r.P50, r.P99, r.Requests)
		if r.Ops != int64(tc.n) || r.Errors != 0 {
			t.Fatalf("%s: %d lifecycles, %d errors (first: %s); want %d and none", tc.tool, r.Ops, r.Errors, r.FirstError, tc.n)
		}
	}
	// No live task remains, as the store counts them.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`mcptasks_tasks{status="working"} 0`, `mcptasks_tasks{status="input_required"} 0`, `mcptasks_tasks_finished_total{status="completed",tool="export_report"} 200`} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestIDProbe sends tasks/get for 10,000 random well-formed ids, 1,000
// malformed ones and, as another principal, 1,000 ids of existing tasks
// that their owner has just read (so that a store with a read cache holds
// them), on SQLite and on Postgres: every answer is byte-identical, and the
// median times are logged side by side (existence must show neither in the
// answer nor in its timing; the timing is reported, not asserted: see
// BENCHMARKS.md).
func TestIDProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok-alice alice\ntok-bob bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct{ name, spec string }{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")},
		{"postgres", pgtest.DSN(t)},
	} {
		t.Run(st.name, func(t *testing.T) { probeIDs(t, st.spec, tokens) })
	}
}

func probeIDs(t *testing.T, storeSpec, tokens string) {
	addr := freeAddr(t)
	p := start(t, addr, "--store", storeSpec, "--auth-tokens", tokens, "--log-level", "warn")
	alice := &rpc{url: p.url, token: "tok-alice", tasks: true}
	bob := &rpc{url: p.url, token: "tok-bob", tasks: true}

	var foreign []string
	for range 1000 {
		foreign = append(foreign, alice.callTool(t, "slow_compute", map[string]any{"seconds": 0.01, "label": "x"})["taskId"].(string))
	}
	for _, id := range foreign { // their owner polls them: a cache now holds them
		alice.get(t, id)
	}
	random := func() string {
		var b [24]byte
		_, _ = rand.Read(b[:])
		return base64.RawURLEncoding.EncodeToString(b[:])
	}
	// probe sends the ids from 8 goroutines, round-robin.
	probe := func(ids []string) (bodies map[string]bool, median time.Duration) {
		const workers = 8
		bodies = map[string]bool{}
		ds := make([]time.Duration, len(ids))
		answers := make([][]byte, len(ids))
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(ids); i += workers {
					t0 := time.Now()
					answers[i] = bob.rawGet(t, ids[i])
					ds[i] = time.Since(t0)
				}
			}()
		}
		wg.Wait()
		for _, a := range answers {
			bodies[string(a)] = true
		}
		slices.Sort(ds)
		return bodies, ds[len(ds)/2]
	}
	var randomIDs, malformed []string
	for range 10000 {
		randomIDs = append(randomIDs, random())
	}
	for i := range 1000 {
		malformed = append(malformed, strings.Repeat("z", i%40))
	}
	got := map[string]bool{}
	for _, c := range []struct {
		name string
		ids  []string
	}{{"random", randomIDs}, {"foreign", foreign}, {"malformed", malformed}} {
		bodies, median := probe(c.ids)
		t.Logf("%-9s %5d ids: median %s, %d distinct answer(s)", c.name, len(c.ids), median, len(bodies))
		for b := range bodies {
			got[b] = true
		}
	}
	if len(got) != 1 {
		t.Fatalf("answers differ between unknown, foreign and malformed ids: %v", got)
	}
	// Alice still sees her tasks.
	if _, rerr, _ := alice.call(t, "tasks/get", map[string]any{"taskId": foreign[0]}); rerr != nil {
		t.Errorf("alice's own task: %d %s", rerr.Code, rerr.Message)
	}
}

// rawGet sends tasks/get and returns the HTTP status and response body
// (whose JSON-RPC id is always 7), for byte comparison.
func (c *rpc) rawGet(t *testing.T, id string) []byte {
	t.Helper()
	quoted, _ := json.Marshal(id)
	body := `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"taskId":` + string(quoted) + `}}`
	req, _ := http.NewRequest("POST", c.url, strings.NewReader(body))
	mcptest.SetHeaders(req.Header, "tasks/get", "")
	req.Header.Set("Mcp-Name", id) // also when empty: the probe sends every id as it is
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err) // called from several goroutines: no Fatal
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return append([]byte(resp.Status+" "), bytes.TrimSpace(b)...)
}
