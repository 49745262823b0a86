package cmdtool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// ioWait bounds how long a finished command's output is still read: only a
// process that left the command's process group (setsid, a daemon) can
// hold the pipes open after the group is killed.
const ioWait = 2 * time.Second

// groupPoll is how often a stopped command's process group is checked
// for live processes during the grace period, once its leader has exited.
const groupPoll = 50 * time.Millisecond

// maxLine bounds a line passed to the status message; the rest of a
// longer line is dropped there (not from the output).
const maxLine = 512

// invocation is one run of a command, its placeholders filled.
type invocation struct {
	path        string   // absolute path of the program
	args        []string // argv, args[0] as written
	dir         string
	env         []string
	timeout     time.Duration // 0: none
	grace       time.Duration
	outputLimit int
	onLine      func(string) // each non-blank line of stdout and stderr; may be nil
}

// outcome is how a command ended.
type outcome struct {
	stdout        []byte // the first outputLimit bytes
	stdoutOmitted int64
	stderrTail    []byte // the last StderrTail bytes
	stderrOmitted int64
	state         *os.ProcessState
	timedOut      bool // stopped because the timeout passed
	stopped       bool // stopped because ctx was done
	ioIncomplete  bool // the pipes were closed after ioWait
}

// execute runs the command to its end. The command gets its own process
// group; when ctx is done or the timeout passes, the group gets SIGTERM,
// then SIGKILL once no process of it is left or the grace period has
// passed, whichever comes first. Whatever way the command ends,
// what is left of its group is killed before execute returns, so no
// process of the group outlives it. The error is only for a command that
// could not start (or, in theory, be waited for).
func execute(ctx context.Context, inv *invocation) (*outcome, error) {
	out := &headBuffer{limit: inv.outputLimit}
	errs := &tailBuffer{limit: StderrTail}
	cmd := &exec.Cmd{
		Path:   inv.path,
		Args:   inv.args,
		Dir:    inv.dir,
		Env:    inv.env,
		Stdin:  nil, // /dev/null
		Stdout: io.MultiWriter(out, &lineSplitter{onLine: inv.onLine}),
		Stderr: io.MultiWriter(errs, &lineSplitter{onLine: inv.onLine}),
		// Setpgid: the command and its children form a group that can be
		// signalled as one. Pdeathsig: if this process dies without
		// cleaning up (SIGKILL), the kernel kills the command too (its
		// own children are then orphaned; see the package doc).
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
		WaitDelay:   ioWait,
	}
	// Pdeathsig fires when the thread that started the command exits, not
	// the process: keep this goroutine on that thread until the command
	// is reaped, so the Go runtime cannot retire the thread under it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		// With SysProcAttr set, exec does not check Dir before the fork,
		// and a missing one fails as if the program were missing.
		if _, serr := os.Stat(inv.dir); inv.dir != "" && serr != nil {
			return nil, fmt.Errorf("working directory: %w", serr)
		}
		return nil, err
	}
	g := &group{cmd: cmd, pgid: cmd.Process.Pid}
	defer g.reap() // in every path, even a panic

	exited := make(chan struct{})
	go func() {
		defer close(exited)
		waitExited(g.pgid)
	}()
	var deadline <-chan time.Time
	if inv.timeout > 0 {
		t := time.NewTimer(inv.timeout)
		defer t.Stop()
		deadline = t.C
	}
	o := &outcome{}
	select {
	case <-exited:
	case <-ctx.Done():
		o.stopped = true
		g.terminate(exited, inv.grace)
	case <-deadline:
		o.timedOut = true
		g.terminate(exited, inv.grace)
	}
	// The leader has exited but is not reaped yet, so its pid (the group
	// id) cannot be reused: kill the rest of the group, then reap.
	g.signal(syscall.SIGKILL)
	<-exited
	reaping := time.Now()
	err := g.reap()
	// Wait reports ErrWaitDelay for a command that succeeded only (an
	// ExitError wins): the time it took to drain the pipes of an exited
	// command tells it for the others.
	o.ioIncomplete = errors.Is(err, exec.ErrWaitDelay) || time.Since(reaping) >= ioWait
	o.state = cmd.ProcessState
	if o.state == nil { // wait itself failed: nothing to report on
		return nil, fmt.Errorf("wait for the command: %w", err)
	}
	o.stdout, o.stdoutOmitted = out.bytes()
	o.stderrTail, o.stderrOmitted = errs.bytes()
	return o, nil
}

// group is a started command's process group.
type group struct {
	cmd    *exec.Cmd
	pgid   int
	reaped bool
	err    error
}

// signal sends sig to every process of the group.
func (g *group) signal(sig syscall.Signal) {
	_ = syscall.Kill(-g.pgid, sig)
}

// terminate sends SIGTERM to the group and waits, for at most grace,
// until no process of it is left alive: the leader and every other member,
// such as a child that traps SIGTERM to clean up under a wrapper (sh, a
// script) that dies at once. The caller sends SIGKILL after it.
func (g *group) terminate(exited <-chan struct{}, grace time.Duration) {
	g.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		return
	}
	// The leader is left unreaped, a zombie that keeps the group in
	// existence (kill(-pgid, 0) succeeds until it is reaped): look in /proc
	// for members still alive.
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for hasLiveMember(g.pgid) {
		select {
		case <-tick.C:
		case <-t.C:
			return
		}
	}
}

// hasLiveMember reports whether process group pgid has a process that is
// neither a zombie nor dead, from /proc/<pid>/stat. If /proc cannot be
// listed it reports true, so that the caller waits out the grace period
// it promised.
func hasLiveMember(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return true
	}
	want := strconv.Itoa(pgid)
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ")".
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.SplitN(strings.TrimSpace(string(b[i+1:])), " ", 4)
		if len(f) < 4 || f[2] != want {
			continue
		}
		switch f[0] {
		case "Z", "X", "x": // a zombie or dead
		default:
			return true
		}
	}
	return false
}

// reap kills the group and waits for the leader, once.
func (g *group) reap() error {
	if !g.reaped {
		g.reaped = true
		g.signal(syscall.SIGKILL)
		g.err = g.cmd.Wait()
	}
	return g.err
}

// waitExited waits until the process pid has exited, without reaping it:
// until it is reaped its pid stays taken, so its process group can still
// be signalled safely.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// headBuffer keeps the first limit bytes written to it and counts the rest.
type headBuffer struct {
	mu      sync.Mutex
	limit   int
	buf     []byte
	omitted int64
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(p), b.limit-len(b.buf))
	b.buf = append(b.buf, p[:n]...)
	b.omitted += int64(len(p) - n)
	return len(p), nil
}

// bytes returns the kept bytes, cut back to a whole UTF-8 character if
// the limit split one, and the number of bytes omitted.
func (b *headBuffer) bytes() ([]byte, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept, omitted := b.buf, b.omitted
	if omitted > 0 {
		for i := len(kept) - 1; i >= 0 && i >= len(kept)-utf8.UTFMax; i-- {
			if utf8.RuneStart(kept[i]) {
				if !utf8.FullRune(kept[i:]) {
					omitted += int64(len(kept) - i)
					kept = kept[:i]
				}
				break
			}
		}
	}
	return kept, omitted
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.limit {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.limit:]...)
	}
	return len(p), nil
}

// bytes returns the last limit bytes, starting at a whole UTF-8
// character, and the number of bytes before them.
func (b *tailBuffer) bytes() ([]byte, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.buf
	if len(kept) > b.limit {
		kept = kept[len(kept)-b.limit:]
	}
	if int64(len(kept)) < b.total {
		for i := 0; i < len(kept) && i < utf8.UTFMax && !utf8.RuneStart(kept[0]); i++ {
			kept = kept[1:]
		}
	}
	return bytes.Clone(kept), b.total - int64(len(kept))
}

// lineSplitter calls onLine with each non-blank line written to it. A
// line ends at "\n" or "\r", so a progress bar redrawn with "\r" updates
// the status too. A line is cut at maxLine bytes.
type lineSplitter struct {
	onLine func(string)
	line   []byte
}

func (s *lineSplitter) Write(p []byte) (int, error) {
	if s.onLine == nil {
		return len(p), nil
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			s.add(p)
			break
		}
		s.add(p[:i])
		if line := strings.TrimSpace(strings.ToValidUTF8(string(s.line), "\uFFFD")); line != "" {
			s.onLine(line)
		}
		s.line = s.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (s *lineSplitter) add(p []byte) {
	s.line = append(s.line, p[:min(len(p), maxLine-len(s.line))]...)
}
