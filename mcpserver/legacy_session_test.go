package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
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
// and only ids of that form are taken as answers.
func TestInputRequestID(t *testing.T) {
	const id = "AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA"
	raw, _ := json.Marshal(inputRequestID(id, "a/b"))
	if gotID, key, ok := parseInputRequestID(raw); !ok || gotID != id || key != "a/b" {
		t.Errorf("parse(%s) = %q, %q, %v", raw, gotID, key, ok)
	}
	for _, bad := range []string{`0`, `"t/short/k"`, `"t/` + id + `/"`, `"x/` + id + `/k"`, `null`} {
		if _, _, ok := parseInputRequestID(json.RawMessage(bad)); ok {
			t.Errorf("parse(%s) accepted", bad)
		}
	}
}
