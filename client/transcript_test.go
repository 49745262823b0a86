package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/txtar"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden sections of testdata/wire/*.txtar")

// TestTranscripts replays the client's golden transcripts in
// testdata/wire: the mirror image of the server's. Each archive opens with
// what it checks, then has steps of four sections:
//
//	-- LABEL: do --        what the client does: call TOOL ARGS, get, update KEY RESPONSE, cancel
//	-- LABEL: reply --     "STATUS json" and the body the scripted server answers with
//	-- LABEL: request --   golden: the request the client sent (method, Mcp-* headers, params without _meta)
//	-- LABEL: outcome --   golden: what the client made of the reply
//
// $ID in a reply is the id of the request it answers. get, update and
// cancel act on the task the last call created. go test -run
// TestTranscripts -update rewrites the golden sections.
func TestTranscripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "wire", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts in testdata/wire: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			replayClient(t, path)
		})
	}
}

func replayClient(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := txtar.Parse(raw)
	files := a.Files
	var reply string // the body the server sends next
	f, url := startFake(t, func(w http.ResponseWriter, n int, req map[string]json.RawMessage) {
		status, body, _ := strings.Cut(reply, "\n")
		var code int
		fmt.Sscanf(status, "%d", &code)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(strings.ReplaceAll(body, "$ID", string(req["id"]))))
	})
	c := client.New(url, nil)
	ctx := testContext(t)
	var tk *client.Task
	var out []txtar.File
	for i := 0; i < len(files); i++ {
		file := files[i]
		label, kind, _ := strings.Cut(file.Name, ": ")
		if kind != "do" {
			t.Fatalf("%s: section %q: want a %q section", path, file.Name, label+": do")
		}
		if i+1 >= len(files) || files[i+1].Name != label+": reply" {
			t.Fatalf("%s: %q has no %q section", path, file.Name, label+": reply")
		}
		reply = strings.TrimRight(string(files[i+1].Data), "\n")
		out = append(out, file, files[i+1])
		i++
		n := len(f.seen)
		outcome := doStep(ctx, c, &tk, strings.TrimSpace(string(file.Data)))
		if len(f.seen) != n+1 {
			t.Fatalf("%s: %s: the client sent %d requests, want 1", path, label, len(f.seen)-n)
		}
		got := map[string]string{"request": formatSent(f.seen[n], f.bodies[n]), "outcome": outcome}
		for _, k := range []string{"request", "outcome"} {
			name := label + ": " + k
			if i+1 < len(files) && files[i+1].Name == name {
				i++
				if want := strings.TrimRight(string(files[i].Data), "\n"); !*updateGolden && want != got[k] {
					t.Errorf("%s: %s differs:\nwant:\n%s\ngot:\n%s", path, name, want, got[k])
				}
			} else if !*updateGolden {
				t.Errorf("%s: no %q section; run with -update", path, name)
			}
			out = append(out, txtar.File{Name: name, Data: []byte(got[k] + "\n")})
		}
	}
	if *updateGolden {
		a.Files = out
		if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// doStep runs one step and renders what came of it.
func doStep(ctx context.Context, c *client.Client, tk **client.Task, step string) string {
	op, rest, _ := strings.Cut(step, " ")
	switch op {
	case "call":
		name, args, _ := strings.Cut(rest, " ")
		res, err := c.CallTool(ctx, name, json.RawMessage(args))
		switch {
		case err != nil:
			return "error: " + err.Error()
		case res.Task != nil:
			*tk = res.Task
			return "task:\n" + formatStatus(res.Task.Last())
		}
		b, _ := json.MarshalIndent(res.Result, "", "  ")
		return "result:\n" + string(b)
	case "get":
		st, err := (*tk).Get(ctx)
		if err != nil {
			return "error: " + err.Error()
		}
		return formatStatus(st)
	case "update":
		key, resp, _ := strings.Cut(rest, " ")
		if err := (*tk).Update(ctx, map[string]any{key: json.RawMessage(resp)}); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "cancel":
		if err := (*tk).Cancel(ctx); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	}
	return "unknown step " + step
}

// formatStatus renders a task status as the client decoded it.
func formatStatus(st *client.TaskStatus) string {
	v := map[string]any{"taskId": st.TaskID, "status": st.Status, "ttlMs": st.TTLMs, "pollIntervalMs": st.PollIntervalMs}
	if st.StatusMessage != "" {
		v["statusMessage"] = st.StatusMessage
	}
	if !st.CreatedAt.IsZero() {
		v["createdAt"] = st.CreatedAt
	}
	if len(st.InputRequests) > 0 {
		v["inputRequests"] = slices.Sorted(maps.Keys(st.InputRequests))
	}
	if st.RawResult != nil {
		v["result"] = st.RawResult
	}
	if st.Error != nil {
		v["error"] = st.Error
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// formatSent renders a request as the transcripts show it: the method, the
// Mcp-* headers, and the params without _meta.
func formatSent(r *http.Request, body map[string]json.RawMessage) string {
	var b strings.Builder
	var method string
	_ = json.Unmarshal(body["method"], &method)
	b.WriteString(method)
	for _, h := range slices.Sorted(maps.Keys(r.Header)) {
		if strings.HasPrefix(h, "Mcp-") {
			fmt.Fprintf(&b, "\n%s: %s", h, r.Header.Get(h))
		}
	}
	var params map[string]json.RawMessage
	_ = json.Unmarshal(body["params"], &params)
	delete(params, "_meta")
	p, _ := json.Marshal(params)
	var ind bytes.Buffer
	_ = json.Indent(&ind, p, "", "  ")
	return b.String() + "\n\n" + ind.String()
}
