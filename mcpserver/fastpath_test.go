package mcpserver_test

import (
	"os"
	"regexp"
	"testing"
)

// fastPathCheckedSDK is the go-sdk version whose answers the fast path was
// last checked to reproduce: FuzzFastPath run against it for a while, and
// TestWire passing with the fast path on and off. The fast path answers
// tasks/* and task creation itself, copying what go-sdk checks and how it
// replies; a new go-sdk may check or answer differently.
const fastPathCheckedSDK = "v1.8.0"

// TestFastPath_CheckedAgainstSDK fails when go.mod moves go-sdk to another
// version than the one the fast path was checked against. Then run
//
//	go test ./mcpserver -run TestWire
//	go test ./mcpserver -run '^$' -fuzz FuzzFastPath -fuzztime 10m
//
// fix what differs, and update fastPathCheckedSDK.
func TestFastPath_CheckedAgainstSDK(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/modelcontextprotocol/go-sdk\s+(\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/modelcontextprotocol/go-sdk")
	}
	if regexp.MustCompile(`(?m)^\s*(?:replace\s+)?github\.com/modelcontextprotocol/go-sdk(\s+\S+)?\s*=>`).Match(mod) {
		t.Fatalf("go.mod replaces go-sdk, but the fast path was checked against go-sdk %s only", fastPathCheckedSDK)
	}
	if got := string(m[1]); got != fastPathCheckedSDK {
		t.Fatalf("go.mod requires go-sdk %s, but the fast path was checked against %s: run TestWire and FuzzFastPath "+
			"(see TestFastPath_CheckedAgainstSDK), fix what differs, then set fastPathCheckedSDK to %s", got, fastPathCheckedSDK, got)
	}
}
