package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/client"
)

// TestFollow_ServerUnavailable: a wait that gave up on a server that
// kept failing past its retry budget (a *client.UnavailableError) ends
// call and wait with exit 3, saying that the task may still be running
// and how to follow it again. Before, the command printed "task …: 5
// failures in a row: … connection refused" and nothing more.
func TestFollow_ServerUnavailable(t *testing.T) {
	t.Parallel()
	for _, human := range []bool{false, true} {
		t.Run(map[bool]string{false: "JSON", true: "Terminal"}[human], func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			s := &streams{in: strings.NewReader(""), out: &out, err: &errb, outTTY: human, width: func() int { return 80 }}
			o := newOutput(s, human)
			defer o.close()
			tk := client.New("http://127.0.0.1:1/mcp", nil).Task("T1")
			f := &follower{t: tk, out: o, con: newConsole(t.Context(), s, human), waitHint: "mcptasks wait T1"}
			gaveUp := &client.UnavailableError{TaskID: "T1", Task: tk, Failures: 26, For: 2 * time.Minute,
				Err: &client.TransportError{Method: "tasks/get", URL: tk.ServerURL, Err: syscall.ECONNREFUSED}}
			err := f.run(func(context.Context, ...client.WaitOption) (*mcp.CallToolResult, error) { return nil, gaveUp })
			if code := exitCodeOf(err); code != exitTransport {
				t.Errorf("exit %d, want %d", code, exitTransport)
			}
			msg := err.Error()
			for _, want := range []string{"the task may still be running", "connection refused", "\nFollow it again once the server is back: mcptasks wait T1"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if ue := (*client.UnavailableError)(nil); !errors.As(err, &ue) {
				t.Errorf("error %v does not wrap the client's *UnavailableError", err)
			}
		})
	}
}
