package mcpserver

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/task"
)

// TestSession: a session id carries its principal and capabilities, and
// any change to it, another key, or another principal makes it unknown.
func TestSession(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	caps, err := sessionCapabilities(json.RawMessage(`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`))
	if err != nil || string(caps) != `{"elicitation":{}}` {
		t.Fatalf("sessionCapabilities = %s, %v; want the extensions dropped", caps, err)
	}
	id, err := encodeSession(key, &legacySession{Principal: "alice", Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := decodeSession(key, id, "alice")
	if err != nil || ls.Principal != "alice" || string(ls.Capabilities) != `{"elicitation":{}}` {
		t.Fatalf("decodeSession = %+v, %v", ls, err)
	}
	body, mac, _ := strings.Cut(strings.TrimPrefix(id, sessionPrefix), ".")
	forged, _ := encodeSession([]byte("another key of at least 32 bytes!!"), &legacySession{Principal: "alice", Capabilities: caps})
	for _, tt := range []struct{ name, id, principal string }{
		{"another principal", id, "bob"},
		{"another key", forged, "alice"},
		{"body changed", sessionPrefix + body + "x." + mac, "alice"},
		{"mac changed", sessionPrefix + body + "." + strings.Repeat("A", len(mac)), "alice"},
		{"no mac", sessionPrefix + body, "alice"},
		{"no prefix", strings.TrimPrefix(id, sessionPrefix), "alice"},
		{"empty", "", "alice"},
	} {
		if _, err := decodeSession(key, tt.id, tt.principal); err != errBadSession {
			t.Errorf("%s: decodeSession err = %v, want errBadSession", tt.name, err)
		}
	}
	if _, err := sessionCapabilities(json.RawMessage(`{"x":"` + strings.Repeat("y", maxSessionCapabilities) + `"}`)); err == nil {
		t.Error("capabilities over the bound were kept")
	}
	if _, err := sessionCapabilities(json.RawMessage(`[1]`)); err == nil {
		t.Error("capabilities that are not an object were kept")
	}
}

// TestInputRequestID: the id of an input request names its task and key,
// in the form sent now (with the asking) and the one sent before it, keys
// with '/' included; only ids of these forms are taken as answers.
func TestInputRequestID(t *testing.T) {
	const id = "AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA"
	for _, tc := range []struct {
		name, raw string
		key       string // "": not an input request id
	}{
		{"new form", `"t/` + id + `.7/confirm"`, "confirm"},
		{"new form, attempt ask", `"t/` + id + `.a3/confirm"`, "confirm"},
		{"new form, key with slashes", `"t/` + id + `.7/a/b.c/d"`, "a/b.c/d"},
		{"new form, key that looks like an ask", `"t/` + id + `.7/8/k"`, "8/k"},
		{"old form", `"t/` + id + `/confirm"`, "confirm"},
		{"old form, key with slashes", `"t/` + id + `/a/b"`, "a/b"},
		{"made here", strconv.Quote(inputRequestID(id, "12", "x/y")), "x/y"},
		{"empty ask", `"t/` + id + `./k"`, ""},
		{"no key", `"t/` + id + `.7/"`, ""},
		{"no key, old form", `"t/` + id + `/"`, ""},
		{"no slash after the task", `"t/` + id + `.7"`, ""},
		{"short task id", `"t/short.7/k"`, ""},
		{"ask before the task id", `"t/7.` + id + `/k"`, ""},
		{"other prefix", `"x/` + id + `.7/k"`, ""},
		{"number", `0`, ""},
		{"null", `null`, ""},
		{"not JSON", `"t/`, ""},
	} {
		gotID, _, key, ok := parseInputRequestID(json.RawMessage(tc.raw))
		switch {
		case tc.key == "" && ok:
			t.Errorf("%s: parse(%s) = %q, %q; want it refused", tc.name, tc.raw, gotID, key)
		case tc.key != "" && (!ok || gotID != id || key != tc.key):
			t.Errorf("%s: parse(%s) = %q, %q, %v; want %q, %q", tc.name, tc.raw, gotID, key, ok, id, tc.key)
		}
	}
}

// TestQuestionID: a question's asking is the number of the latest history
// event that asked it, whatever was dropped after it; without one, the id
// the stream sent, else the run's attempt. An answer to another numbered
// asking of the key is stale.
func TestQuestionID(t *testing.T) {
	const id = "AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA"
	asked := func(seq int, keys ...string) task.HistoryEvent {
		return task.HistoryEvent{Seq: seq, Kind: task.HistoryInputRequested, Keys: keys}
	}
	other := func(seq int) task.HistoryEvent { return task.HistoryEvent{Seq: seq, Kind: task.HistoryStatus} }
	long := strings.Repeat("k", task.MaxHistoryName+10)
	for _, tc := range []struct {
		name    string
		key     string
		history []task.HistoryEvent
		sent    string
		want    string // the ask
	}{
		{"asked", "k", []task.HistoryEvent{other(1), asked(2, "k"), other(3)}, "", "2"},
		{"asked again", "k", []task.HistoryEvent{asked(2, "k"), other(3), asked(4, "k")}, "t/" + id + ".2/k", "4"},
		{"status messages dropped after it", "k", []task.HistoryEvent{asked(2, "k"), other(5), other(9)}, "", "2"},
		{"a key the history keeps cut", long, []task.HistoryEvent{asked(2, long[:task.MaxHistoryName])}, "", "2"},
		{"dropped from the history, sent", "k", []task.HistoryEvent{other(1)}, "t/" + id + ".2/k", "2"},
		{"dropped from the history, not sent", "k", []task.HistoryEvent{other(1)}, "", "a3"},
	} {
		r := &task.Record{ID: id, Attempt: 3, History: tc.history}
		if got, want := questionID(r, tc.key, tc.sent), inputRequestID(id, tc.want, tc.key); got != want {
			t.Errorf("%s: %q, want %q", tc.name, got, want)
		}
	}
	r := &task.Record{ID: id, Attempt: 3, History: []task.HistoryEvent{asked(2, "k"), asked(4, "k")}}
	for ask, want := range map[string]bool{"2": true, "4": false, "a3": false, "": false} {
		if got := stale(r, ask, "k"); got != want {
			t.Errorf("stale(ask %q) = %v, want %v", ask, got, want)
		}
	}
}
