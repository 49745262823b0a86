package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyDeadline bounds each wait for the screen of a pseudo-terminal.
const ptyDeadline = 30 * time.Second

// ptyProc is "mcptasks ARGS" running in a pseudo-terminal.
type ptyProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // of Wait, once done is closed

	mu     sync.Mutex
	out    bytes.Buffer  // everything the process wrote
	seen   int           // the part of out that expect consumed
	update chan struct{} // signalled when out grows
}

func startPTY(t *testing.T, journal string, args ...string) *ptyProc {
	t.Helper()
	p := &ptyProc{t: t, cmd: exec.Command(binary, args...), done: make(chan struct{}), update: make(chan struct{}, 1)}
	p.cmd.Env = cliEnv(journal)
	tty, err := pty.StartWithSize(p.cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	p.tty = tty
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			select {
			case p.update <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO once the process is gone
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		tty.Close()
		if t.Failed() {
			t.Logf("terminal:\n%s", p.screen())
		}
	})
	return p
}

func (p *ptyProc) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// expect waits until s appears after what the last expect consumed, and
// returns the output up to the end of s.
func (p *ptyProc) expect(s string) string {
	p.t.Helper()
	deadline := time.NewTimer(ptyDeadline)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		rest := p.out.String()[p.seen:]
		if i := strings.Index(rest, s); i >= 0 {
			p.seen += i + len(s)
			p.mu.Unlock()
			return rest[:i+len(s)]
		}
		p.mu.Unlock()
		select {
		case <-p.update:
		case <-p.done:
			// The process is gone; the reader may still hold its last
			// words, so look once more after it has drained.
			select {
			case <-p.update:
			case <-time.After(time.Second):
				p.t.Fatalf("the process exited before %q appeared", s)
			}
		case <-deadline.C:
			p.t.Fatalf("%q did not appear within %s", s, ptyDeadline)
		}
	}
}

// send types s.
func (p *ptyProc) send(s string) {
	p.t.Helper()
	if _, err := p.tty.WriteString(s); err != nil {
		p.t.Fatal(err)
	}
}

// exitCode waits for the process to exit and returns its exit code.
func (p *ptyProc) exitCode() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(ptyDeadline):
		p.t.Fatalf("the process did not exit within %s", ptyDeadline)
	}
	var ee *exec.ExitError
	if err := p.err; err != nil && !errors.As(err, &ee) {
		p.t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode()
}

var taskHeader = regexp.MustCompile(`Task (\S+) \((\w+)\) on `)

// TestPTY_ExportReport runs export_report on a terminal: the status line
// shows the task's status messages, the question is asked as a prompt,
// and the answer leads to the result.
func TestPTY_ExportReport(t *testing.T) {
	t.Parallel()
	// A slow step: "Querying rows" lasts 3s, long enough for a poll (1s)
	// to see it.
	p := cliServer(t, "2s")
	journal := filepath.Join(t.TempDir(), "journal.json")
	c := startPTY(t, journal, "call", p.url, "export_report", "rows=5")
	head := c.expect("Ctrl-C to detach or cancel.")
	if m := taskHeader.FindStringSubmatch(head); m == nil || m[2] != "export_report" {
		t.Errorf("header %q, want the task id and tool", head)
	}
	c.expect("working · Querying rows")
	c.expect("? report.csv already exists. Overwrite it with 5 rows?")
	c.expect("overwrite [y/n]: ")
	c.send("y\r")
	c.expect("working · Writing rows")
	c.expect("✓ completed in ")
	c.expect("Wrote 5 rows to report.csv")
	if code := c.exitCode(); code != exitOK {
		t.Errorf("exit %d, want 0", code)
	}
}

// TestPTY_Interrupt presses Ctrl-C while slow_compute runs, and chooses to
// detach (the task keeps running) or to cancel it.
func TestPTY_Interrupt(t *testing.T) {
	t.Parallel()
	p := cliServer(t, "200ms")
	server := &rpc{url: p.url, tasks: true}
	for _, tc := range []struct {
		name   string
		answer string
		screen string
		code   int
		status string // of the task afterwards
	}{
		{"Detach", "d\r", "Detached: task ", exitDetached, "working"},
		{"Cancel", "c\r", "✗ cancelled after ", exitTaskCancelled, "cancelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			journal := filepath.Join(t.TempDir(), "journal.json")
			c := startPTY(t, journal, "call", p.url, "slow_compute", "seconds=60")
			m := taskHeader.FindStringSubmatch(c.expect("Ctrl-C to detach or cancel."))
			if m == nil {
				t.Fatal("no task header")
			}
			id := m[1]
			c.expect(`working · Computing "" for 1m0s`)
			c.send("\x03")
			c.expect("Detach (it keeps running), cancel it, or wait? [d]etach, [c]ancel, [w]ait [w]: ")
			c.send(tc.answer)
			c.expect(tc.screen)
			if tc.code == exitDetached {
				c.expect("Come back with:\r\n  mcptasks wait " + idArg(id))
			}
			if code := c.exitCode(); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if got := server.waitStatus(t, id, tc.status, 10*time.Second); got["status"] != tc.status {
				t.Errorf("task %s is %v, want %s", id, got["status"], tc.status)
			}
		})
	}
}

// TestPTY_QuestionGone: a question that the server no longer asks while
// its prompt is open (here the task is cancelled from elsewhere) ends the
// prompt with a line that says so, and the wait reports the task's end;
// before, the prompt stayed, and the command with it.
func TestPTY_QuestionGone(t *testing.T) {
	t.Parallel()
	p := cliServer(t, "200ms")
	server := &rpc{url: p.url, tasks: true}
	journal := filepath.Join(t.TempDir(), "journal.json")
	c := startPTY(t, journal, "call", p.url, "confirm_delete", "filename=gone.txt")
	m := taskHeader.FindStringSubmatch(c.expect("Ctrl-C to detach or cancel."))
	if m == nil {
		t.Fatal("no task header")
	}
	c.expect("confirm [y/n]: ")
	server.mustCall(t, "tasks/cancel", map[string]any{"taskId": m[1]})
	c.expect("confirm-delete: the server no longer asks this question.")
	c.expect("✗ cancelled after ")
	if code := c.exitCode(); code != exitTaskCancelled {
		t.Errorf("exit %d, want %d", code, exitTaskCancelled)
	}
}

// TestPTY_InterruptQuestion presses Ctrl-C while a question is open: the
// question, not the wait, takes it and asks what it meant; after "wait" the
// question is asked again, and its answer leads to the result.
func TestPTY_InterruptQuestion(t *testing.T) {
	t.Parallel()
	p := cliServer(t, "200ms")
	journal := filepath.Join(t.TempDir(), "journal.json")
	c := startPTY(t, journal, "call", p.url, "confirm_delete", "filename=x.txt")
	c.expect("Ctrl-C to detach or cancel.")
	c.expect("? Delete x.txt?")
	c.expect("confirm [y/n]: ")
	c.send("\x03")
	c.expect("Detach (it keeps running), cancel it, or wait? [d]etach, [c]ancel, [w]ait [w]: ")
	c.send("w\r")
	c.expect("confirm [y/n]: ")
	c.send("y\r")
	c.expect("✓ completed in ")
	c.expect("Deleted x.txt")
	if code := c.exitCode(); code != exitOK {
		t.Errorf("exit %d, want 0", code)
	}
}
