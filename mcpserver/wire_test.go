package mcpserver_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/internal/txtar"
)

var updateGolden = flag.Bool("update", false, "rewrite the expected responses in testdata/wire/*.txtar")

// TestWire replays the golden HTTP transcripts in testdata/wire. Each
// archive runs against a fresh in-process server; see
// testdata/wire/README.md for the format.
func TestWire(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "wire", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no transcripts in testdata/wire")
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runTranscript(t, path, false)
		})
		// The same transcript through go-sdk's handler, with the fast path
		// off: the answers must be the same, apart from SSE instead of JSON.
		if !*updateGolden {
			t.Run("sdk/"+name, func(t *testing.T) {
				t.Parallel()
				runTranscript(t, path, true)
			})
		}
	}
}

// TestArchive_RoundTrip checks that the transcript parser keeps every byte,
// so that -update rewrites nothing but expected responses.
func TestArchive_RoundTrip(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "wire", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(txtar.Parse(data).Format()); got != string(data) {
			t.Errorf("%s does not round-trip:\n%s", p, diffLines(string(data), got))
		}
	}
}

// splitSectionName splits a file name "LABEL: KIND" into label and kind.
func splitSectionName(name string) (label, kind string) {
	if i := strings.LastIndex(name, ": "); i >= 0 {
		return name[:i], name[i+2:]
	}
	return "", name
}

// runTranscript replays one archive.
// With sdkPath set, tasks/* go through go-sdk instead of the fast path, and
// an SSE reply counts as the JSON one it carries.
func runTranscript(t *testing.T, path string, sdkPath bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := txtar.Parse(data)
	cfg := serverConfig{noFastPath: sdkPath}
	for _, f := range a.Files {
		if _, kind := splitSectionName(f.Name); kind == "config" {
			if err := parseConfig(f.Data, &cfg); err != nil {
				t.Fatalf("%s: config: %v", path, err)
			}
		}
	}
	cs := startReplicas(t, cfg)
	r := &replay{t: t, path: path, files: a.Files, c: cs[0], replicas: cs, n: &normalizer{origin: cs[0].base}, sseAsJSON: sdkPath,
		snapshots: map[string]string{}, bugs: map[string][]string{}}
	for r.i = 0; r.i < len(r.files); r.i++ {
		f := r.files[r.i]
		switch _, kind := splitSectionName(f.Name); kind {
		case "config":
			r.out = append(r.out, f)
		case "request":
			r.request()
		case "wait":
			r.out = append(r.out, f)
			r.wait(f)
		case "snapshot", "unchanged":
			r.out = append(r.out, f)
			r.snapshot(f, kind == "unchanged")
		case "response", "bug":
			t.Fatalf("%s: %q does not follow a request", path, f.Name)
		default:
			t.Fatalf("%s: unknown section %q", path, f.Name)
		}
	}
	if *updateGolden {
		a.Files = r.out
		if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.bugs) > 0 {
		// Every other step has been checked; a failure there still fails
		// the test.
		var msgs []string
		for note, labels := range r.bugs {
			msgs = append(msgs, fmt.Sprintf("%s [steps: %s]", note, strings.Join(labels, ", ")))
		}
		slices.Sort(msgs)
		t.Skip("BUG: " + strings.Join(msgs, "\nBUG: "))
	}
}

// replay is the state of one transcript being replayed.
type replay struct {
	t         *testing.T
	path      string
	files     []txtar.File
	i         int           // index of the section being replayed
	c         *testClient   // the first replica
	replicas  []*testClient // every replica, c first
	n         *normalizer
	snapshots map[string]string   // task id -> canonical tasks/get result
	out       []txtar.File        // the archive as -update writes it
	sseAsJSON bool                // compare an SSE reply as JSON
	bugs      map[string][]string // known bug note -> steps where it still shows
}

// next consumes and returns the section after the current one if it is
// named name.
func (r *replay) next(name string) *txtar.File {
	if r.i+1 < len(r.files) && r.files[r.i+1].Name == name {
		r.i++
		return &r.files[r.i]
	}
	return nil
}

// request sends the request of the current section and compares the
// response with the section that follows it.
func (r *replay) request() {
	t, f := r.t, r.files[r.i]
	label, _ := splitSectionName(f.Name)
	text, err := r.n.expand(string(f.Data))
	if err != nil {
		t.Fatalf("%s: %s: %v", r.path, f.Name, err)
	}
	req, err := parseRequest(text)
	if err != nil {
		t.Fatalf("%s: %s: %v", r.path, f.Name, err)
	}
	c := r.c
	if v := req.header.Get("Test-Replica"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > len(r.replicas) {
			t.Fatalf("%s: %s: Test-Replica %q: want 1 to %d", r.path, f.Name, v, len(r.replicas))
		}
		c = r.replicas[n-1]
		req.header.Del("Test-Replica")
	}
	if v := req.header.Get("Test-Read-Messages"); v != "" {
		if req.readMessages, err = strconv.Atoi(v); err != nil || req.readMessages < 1 {
			t.Fatalf("%s: %s: Test-Read-Messages %q: want a positive count", r.path, f.Name, v)
		}
		req.header.Del("Test-Read-Messages")
	}
	resp := c.do(t, req)
	if sid := resp.header.Get("Mcp-Session-Id"); sid != "" {
		r.n.session = sid
	}
	method := bodyMethod(req.body)
	// Results of older protocol versions carry no resultType and are not
	// checked; their errors are.
	v := req.header.Get("MCP-Protocol-Version")
	modern := v >= wireVersion || v == "" && method != "initialize" // initialize is of the versions before
	for _, m := range resp.messages {
		r.n.learn(m)
		if !modern && !isError(m) {
			continue
		}
		if err := validateExchange(method, m); err != nil {
			t.Errorf("%s: %s: schema: %v\n%s", r.path, f.Name, err, m)
		}
	}
	if r.sseAsJSON && resp.class == "sse" {
		// The fast path's JSON reply is what go-sdk's SSE stream carries,
		// without the stream's header.
		resp.class = "json"
		resp.header.Del("X-Accel-Buffering")
	}
	got, err := formatResponse(r.n, resp)
	if err != nil {
		t.Fatalf("%s: %s: %v", r.path, f.Name, err)
	}
	r.out = append(r.out, f)
	respName := label + ": response"
	if label == "" {
		respName = "response"
	}
	want := r.next(respName)
	bug := r.next(label + ": bug")
	switch {
	case bug != nil && want == nil:
		t.Fatalf("%s: %s: a bug note needs the correct response written out", r.path, label)
	case bug != nil:
		// The expected response is the correct one, written by hand; the
		// server is known to answer otherwise.
		r.out = append(r.out, *want, *bug)
		if w := strings.TrimRight(string(want.Data), "\n"); w == got {
			t.Errorf("%s: %s: marked as a bug, but the response is now right: remove the %q section", r.path, label, bug.Name)
		} else {
			note := strings.Join(sectionLines(bug.Data), " ")
			r.bugs[note] = append(r.bugs[note], label)
			t.Logf("%s: %s: known bug still present\n%s", r.path, label, diffLines(w, got))
		}
		return
	case *updateGolden:
	case want == nil:
		t.Errorf("%s: %s has no %q section; run with -update", r.path, f.Name, respName)
	default:
		w := strings.TrimRight(string(want.Data), "\n")
		if r.sseAsJSON {
			if status, rest, ok := strings.Cut(w, " sse\n"); ok {
				w = status + " json\n" + strings.TrimPrefix(rest, "X-Accel-Buffering: no\n")
			}
		}
		if w != got {
			t.Errorf("%s: %s: response differs\n%s", r.path, label, diffLines(w, got))
		}
	}
	r.out = append(r.out, txtar.File{Name: respName, Data: []byte(got + "\n")})
}

// wait polls each task of a wait section until it has the status.
func (r *replay) wait(f txtar.File) {
	for _, line := range sectionLines(f.Data) {
		line, err := r.n.expand(line)
		if err != nil {
			r.t.Fatalf("%s: %s: %v", r.path, f.Name, err)
		}
		id, status, msg, err := parseWait(line)
		if err != nil {
			r.t.Fatalf("%s: %s: %v", r.path, f.Name, err)
		}
		session := ""
		if r.n.legacy[id] {
			session = r.n.session
		}
		r.c.waitStatusIn(r.t, "", id, session, status, msg)
	}
}

// snapshot records the tasks/get result of each task of f, or, if check is
// set, verifies that it is byte-identical to the last record.
func (r *replay) snapshot(f txtar.File, check bool) {
	label, _ := splitSectionName(f.Name)
	for _, ref := range sectionLines(f.Data) {
		id, err := r.n.expand(ref)
		if err != nil {
			r.t.Fatalf("%s: %s: %v", r.path, f.Name, err)
		}
		resp, rep := r.c.getTask(r.t, "", id)
		if rep.Error != nil {
			r.t.Fatalf("%s: %s: tasks/get %s: HTTP %d %s", r.path, f.Name, ref, resp.status, rep.raw)
		}
		now := canonical(r.t, rep.Result)
		was, ok := r.snapshots[id]
		switch {
		case !check:
			r.snapshots[id] = now
		case !ok:
			r.t.Fatalf("%s: %s: no snapshot of %s", r.path, f.Name, ref)
		case was != now:
			r.t.Errorf("%s: %s: %s changed:\nwas: %s\nnow: %s", r.path, label, ref, was, now)
		}
	}
}

// sectionLines returns the non-blank lines of a directive, without "#"
// comments.
func sectionLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// parseConfig reads "key value" lines.
func parseConfig(data []byte, cfg *serverConfig) error {
	for _, l := range sectionLines(data) {
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "replicas":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return fmt.Errorf("replicas %q: want a positive number", v)
			}
			cfg.replicas = n
		case "max-body-bytes":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return err
			}
			cfg.maxBodyBytes = n
		case "allowed-origins":
			cfg.allowedOrigins = strings.Fields(v)
		case "max-subscribed-tasks":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return err
			}
			cfg.maxSubscribedTasks = n
		case "max-json-depth":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return err
			}
			cfg.maxJSONDepth = n
		case "max-arguments-bytes":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return err
			}
			cfg.maxArgumentsBytes = n
		default:
			return fmt.Errorf("unknown key %q", k)
		}
	}
	return nil
}

// parseWait parses "ID STATUS [STATUSMESSAGE-AS-JSON-STRING]".
func parseWait(line string) (id, status string, msg *string, err error) {
	f := strings.SplitN(line, " ", 3)
	if len(f) < 2 {
		return "", "", nil, fmt.Errorf("want \"$TASKn STATUS [\\\"statusMessage\\\"]\", got %q", line)
	}
	if len(f) == 3 {
		var s string
		if err := json.Unmarshal([]byte(f[2]), &s); err != nil {
			return "", "", nil, fmt.Errorf("statusMessage %s: %v", f[2], err)
		}
		msg = &s
	}
	return f[0], f[1], msg, nil
}

// parseRequest parses "METHOD PATH", header lines, a blank line and the
// body (the rest, without its final newline).
func parseRequest(text string) (*rawRequest, error) {
	head, body, _ := strings.Cut(text, "\n\n")
	hl := strings.Split(head, "\n")
	method, path, ok := strings.Cut(strings.TrimSpace(hl[0]), " ")
	if !ok {
		return nil, fmt.Errorf("first line %q is not \"METHOD PATH\"", hl[0])
	}
	req := &rawRequest{method: method, path: path, header: http.Header{}, body: []byte(strings.TrimSuffix(body, "\n"))}
	for _, l := range hl[1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("header line %q has no colon", l)
		}
		// Values keep inner and surrounding spaces except the one after
		// the colon, so that whitespace handling can be tested.
		req.header.Add(strings.TrimSpace(k), strings.TrimPrefix(v, " "))
	}
	return req, nil
}

// isError reports whether msg is a JSON-RPC error response.
func isError(msg json.RawMessage) bool {
	var m struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(msg, &m) == nil && m.Error != nil
}

// bodyMethod returns the JSON-RPC method of a request body, if it has one.
func bodyMethod(body []byte) string {
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Method
}

// contractHeaders are the response headers that transcripts show, where
// present: those the specs make part of the contract.
var contractHeaders = []string{"Retry-After", "WWW-Authenticate", "X-Accel-Buffering"}

// formatResponse renders a response as a transcript shows it: "STATUS
// CLASS", the contract headers, then each JSON-RPC message, normalised and
// indented.
func formatResponse(n *normalizer, r *rawResponse) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", r.status, r.class)
	for _, h := range contractHeaders {
		for _, v := range r.header.Values(h) {
			fmt.Fprintf(&b, "\n%s: %s", h, v)
		}
	}
	switch r.class {
	case "json", "sse":
		for _, m := range r.messages {
			s, err := n.normalize(m)
			if err != nil {
				return "", fmt.Errorf("response is not JSON: %v: %s", err, r.body)
			}
			b.WriteString("\n" + s)
		}
	case "empty":
	default:
		b.WriteString("\n" + strings.TrimRight(string(r.body), "\n"))
	}
	return b.String(), nil
}

// diffLines shows want and got line by line, marking the lines that differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Longest common subsequence, for a readable -want +got diff.
	dp := make([][]int, len(w)+1)
	for i := range dp {
		dp[i] = make([]int, len(g)+1)
	}
	for i := len(w) - 1; i >= 0; i-- {
		for j := len(g) - 1; j >= 0; j-- {
			if w[i] == g[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	var b strings.Builder
	b.WriteString("(-want +got)\n")
	i, j := 0, 0
	for i < len(w) || j < len(g) {
		switch {
		case i < len(w) && j < len(g) && w[i] == g[j]:
			b.WriteString("  " + w[i] + "\n")
			i++
			j++
		case i < len(w) && (j == len(g) || dp[i+1][j] >= dp[i][j+1]):
			b.WriteString("- " + w[i] + "\n")
			i++
		default:
			b.WriteString("+ " + g[j] + "\n")
			j++
		}
	}
	return b.String()
}
