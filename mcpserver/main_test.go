package mcpserver_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if goroutines of this module or of go-sdk outlive
// the tests: every server a test starts must stop with it, engine workers
// included.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := waitForLeaks(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked by the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// waitForLeaks polls, for at most d, until no goroutine other than the
// caller runs code of this module or of go-sdk, and returns the stacks of
// those still running then.
func waitForLeaks(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		leaked := leakedGoroutines()
		if leaked == "" || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func leakedGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the calling goroutine
			continue
		}
		if strings.Contains(g, "github.com/mcptasks/mcptasks/") || strings.Contains(g, "github.com/modelcontextprotocol/go-sdk/") {
			leaked = append(leaked, g)
		}
	}
	return strings.Join(leaked, "\n\n")
}
