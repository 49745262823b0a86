package cmdtool

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeScript writes an executable /bin/sh script into dir and returns
// its path. Tests run scripts as "sh PATH" rather than exec'ing them: a
// file just written may be briefly held open by a fork in a parallel test
// (ETXTBSY).
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// groupMembers returns the live (non-zombie) processes of process group
// pgid, read from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGroupGone fails the test unless process group pgid has no live
// process within d: a SIGKILLed process is gone within moments.
func waitGroupGone(t *testing.T, pgid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := groupMembers(t, pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has %v after %s", pgid, left, d)
		}
		time.Sleep(10 * time.Millisecond) // polling /proc against the deadline
	}
}

// lines collects the lines a command prints and signals those awaited.
type lines struct {
	mu   sync.Mutex
	all  []string
	want map[string]chan string // prefix -> the first line with it
}

func newLines(prefixes ...string) *lines {
	l := &lines{want: map[string]chan string{}}
	for _, p := range prefixes {
		l.want[p] = make(chan string, 1)
	}
	return l
}

func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, s)
	for p, c := range l.want {
		if strings.HasPrefix(s, p) {
			select {
			case c <- s:
			default:
			}
		}
	}
}

// await returns the first line that starts with prefix, waiting at most d.
func (l *lines) await(t *testing.T, prefix string, d time.Duration) string {
	t.Helper()
	select {
	case s := <-l.want[prefix]:
		return s
	case <-time.After(d):
		t.Fatalf("no line %q within %s; lines: %q", prefix, d, l.get())
		return ""
	}
}

func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

// shInvocation runs script with sh.
func shInvocation(script string, args ...string) *invocation {
	return &invocation{
		path: "/bin/sh", args: append([]string{"sh", script}, args...), dir: filepath.Dir(script),
		env: []string{"PATH=" + os.Getenv("PATH")}, grace: DefaultGrace, outputLimit: DefaultOutputLimit,
	}
}

func TestExecute_Lines(t *testing.T) {
	t.Parallel()
	script := writeScript(t, t.TempDir(), "lines.sh", `printf 'one\ntwo\r three \n\n   \n'; echo err >&2; printf 'no newline'`)
	l := newLines()
	inv := shInvocation(script)
	inv.onLine = l.add
	o, err := execute(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(l.get(), "|")
	for _, want := range []string{"one", "two", "three", "err"} {
		if !strings.Contains(got, want) {
			t.Errorf("lines %q lack %q", got, want)
		}
	}
	// Blank lines are skipped; an unterminated line is not a line yet.
	if len(l.get()) != 4 {
		t.Errorf("lines %q: want 4", l.get())
	}
	if string(o.stdout) != "one\ntwo\r three \n\n   \nno newline" || !o.state.Success() {
		t.Errorf("stdout %q, state %v", o.stdout, o.state)
	}
}

func TestExecute_ExitCode(t *testing.T) {
	t.Parallel()
	script := writeScript(t, t.TempDir(), "fail.sh", "echo out; echo problem >&2; exit 3\n")
	o, err := execute(t.Context(), shInvocation(script))
	if err != nil {
		t.Fatal(err)
	}
	if o.state.ExitCode() != 3 || string(o.stderrTail) != "problem\n" || string(o.stdout) != "out\n" {
		t.Errorf("exit %d, stderr %q, stdout %q", o.state.ExitCode(), o.stderrTail, o.stdout)
	}
}

func TestExecute_StartError(t *testing.T) {
	t.Parallel()
	inv := shInvocation("x")
	inv.path = filepath.Join(t.TempDir(), "missing")
	if _, err := execute(t.Context(), inv); err == nil {
		t.Error("no error starting a missing program")
	}
}

// TestExecute_SIGTERMIgnored stops a command whose processes ignore
// SIGTERM: it is killed once the grace period has passed, and no process
// of its group is left.
func TestExecute_SIGTERMIgnored(t *testing.T) {
	t.Parallel()
	script := writeScript(t, t.TempDir(), "stubborn.sh", `trap '' TERM
sleep 60 &
echo "pgid $$"
sleep 60
`)
	const grace = 300 * time.Millisecond
	l := newLines("pgid ")
	inv := shInvocation(script)
	inv.onLine, inv.grace = l.add, grace
	ctx, cancel := context.WithCancel(t.Context())
	type result struct {
		o   *outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := execute(ctx, inv)
		done <- result{o, err}
	}()
	pgid, err := strconv.Atoi(strings.TrimPrefix(l.await(t, "pgid ", 10*time.Second), "pgid "))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(groupMembers(t, pgid)); n < 2 {
		t.Fatalf("group %d has %d processes before the cancel, want the script and its sleeps", pgid, n)
	}
	start := time.Now()
	cancel()
	r := <-done
	if r.err != nil || !r.o.stopped {
		t.Fatalf("execute: %v, %+v", r.err, r.o)
	}
	if took := time.Since(start); took < grace {
		t.Errorf("returned %s after the cancel, before the %s grace period", took, grace)
	}
	waitGroupGone(t, pgid, 5*time.Second)
}

// TestExecute_SIGTERMHonoured checks that the whole group gets SIGTERM and
// a command that exits on it is not waited for until the grace period ends.
func TestExecute_SIGTERMHonoured(t *testing.T) {
	t.Parallel()
	script := writeScript(t, t.TempDir(), "polite.sh", `trap 'echo stopping >&2; exit 7' TERM
echo "pgid $$"
while :; do sleep 0.05; done
`)
	l := newLines("pgid ")
	inv := shInvocation(script)
	inv.onLine, inv.grace = l.add, time.Minute
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *outcome, 1)
	go func() {
		o, _ := execute(ctx, inv)
		done <- o
	}()
	l.await(t, "pgid ", 10*time.Second)
	cancel()
	select {
	case o := <-done:
		if o.state.ExitCode() != 7 || !strings.Contains(string(o.stderrTail), "stopping") {
			t.Errorf("exit %d, stderr %q: want the TERM trap's exit 7", o.state.ExitCode(), o.stderrTail)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not stop on SIGTERM")
	}
}

// TestExecute_GraceForWholeGroup stops a command whose leader, a wrapper,
// dies at once on SIGTERM while its child traps SIGTERM to clean up: the
// child gets the grace period too, and execute returns once it is done,
// not when grace ends. A cleanup longer than grace is cut short by SIGKILL.
func TestExecute_GraceForWholeGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cleanup string // how long the child's TERM trap sleeps
		grace   time.Duration
		cleaned bool // whether the trap finishes (writes its file)
	}{
		{name: "CleanupWithinGrace", cleanup: "0.5", grace: 20 * time.Second, cleaned: true},
		{name: "CleanupBeyondGrace", cleanup: "30", grace: 300 * time.Millisecond, cleaned: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// The leader has no trap: SIGTERM kills it at once. Its child
			// says "trapped" once its trap is set. (It loops on short
			// sleeps: a "sleep 60 &" forked as SIGTERM comes may miss it
			// and rightly hold the group until grace ends.)
			script := writeScript(t, dir, "wrapper.sh", `echo "pgid $$"
sh -c 'trap "sleep $1; touch \"$2\"; exit" TERM; echo trapped; while :; do sleep 0.05; done' child "$1" "$2" &
wait
`)
			done := filepath.Join(dir, "cleaned")
			l := newLines("pgid ", "trapped")
			inv := shInvocation(script, tt.cleanup, done)
			inv.onLine, inv.grace = l.add, tt.grace
			ctx, cancel := context.WithCancel(t.Context())
			type result struct {
				o   *outcome
				err error
			}
			results := make(chan result, 1)
			go func() {
				o, err := execute(ctx, inv)
				results <- result{o, err}
			}()
			pgid, err := strconv.Atoi(strings.TrimPrefix(l.await(t, "pgid ", 10*time.Second), "pgid "))
			if err != nil {
				t.Fatal(err)
			}
			l.await(t, "trapped", 10*time.Second)
			start := time.Now()
			cancel()
			r := <-results
			took := time.Since(start)
			if r.err != nil || !r.o.stopped {
				t.Fatalf("execute: %v, %+v", r.err, r.o)
			}
			_, err = os.Stat(done)
			if cleaned := err == nil; cleaned != tt.cleaned {
				t.Errorf("the child's cleanup finished: %v, want %v (execute returned after %s, grace %s)", cleaned, tt.cleaned, took, tt.grace)
			}
			if took >= tt.grace+5*time.Second {
				t.Errorf("execute returned %s after the cancel, grace %s", took, tt.grace)
			}
			if !tt.cleaned && took < tt.grace {
				t.Errorf("execute returned %s after the cancel, before the %s grace period", took, tt.grace)
			}
			if tt.cleaned && took >= tt.grace/2 {
				t.Errorf("execute returned %s after the cancel: it waited out most of the %s grace after the group was gone", took, tt.grace)
			}
			waitGroupGone(t, pgid, 5*time.Second)
		})
	}
}

func TestExecute_Timeout(t *testing.T) {
	t.Parallel()
	script := writeScript(t, t.TempDir(), "slow.sh", "echo started; sleep 60\n")
	inv := shInvocation(script)
	inv.timeout, inv.grace = 200*time.Millisecond, 100*time.Millisecond
	o, err := execute(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	if !o.timedOut || o.stopped || string(o.stdout) != "started\n" {
		t.Errorf("outcome %+v", o)
	}
}

// TestExecute_OrphanKilled checks that a background process the command
// leaves behind is killed when the command exits, and does not hold the
// result back by keeping stdout open.
func TestExecute_OrphanKilled(t *testing.T) {
	t.Parallel()
	script := writeScript(t, t.TempDir(), "orphan.sh", "sleep 60 &\necho \"pgid $$\"\n")
	l := newLines("pgid ")
	inv := shInvocation(script)
	inv.onLine = l.add
	o, err := execute(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	if o.ioIncomplete {
		t.Error("the orphan held stdout open until ioWait")
	}
	pgid, _ := strconv.Atoi(strings.TrimPrefix(l.await(t, "pgid ", time.Second), "pgid "))
	waitGroupGone(t, pgid, 5*time.Second)
}

// TestExecute_IncompleteOnFailure checks that output cut at ioWait (a
// process that left the group holds stdout open) is reported as possibly
// incomplete when the command fails too, not only when it succeeds.
func TestExecute_IncompleteOnFailure(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	// The script exits once the escaped process has left the group (its
	// file is there), so that the group's SIGKILL cannot reach it.
	script := writeScript(t, t.TempDir(), "escape.sh",
		"setsid sh -c 'touch \"$0.left\"; sleep 3; echo late' \"$0\" &\n"+
			"until [ -e \"$0.left\" ]; do sleep 0.01; done\necho early\nexit 3\n")
	o, err := execute(t.Context(), shInvocation(script))
	if err != nil {
		t.Fatal(err)
	}
	if o.state.ExitCode() != 3 || !o.ioIncomplete {
		t.Errorf("exit %d, output incomplete %v; want 3 and true", o.state.ExitCode(), o.ioIncomplete)
	}
}

func TestExecute_Truncates(t *testing.T) {
	t.Parallel()
	inv := &invocation{path: "/usr/bin/seq", args: []string{"seq", "20000"}, dir: t.TempDir(), outputLimit: 1000, grace: time.Second}
	o, err := execute(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i := 1; i <= 20000; i++ {
		total += int64(len(strconv.Itoa(i)) + 1)
	}
	if len(o.stdout) != 1000 || o.stdoutOmitted != total-1000 || !strings.HasPrefix(string(o.stdout), "1\n2\n3\n") {
		t.Errorf("kept %d bytes, omitted %d; want 1000 and %d", len(o.stdout), o.stdoutOmitted, total-1000)
	}
}

func TestHeadBuffer_RuneBoundary(t *testing.T) {
	t.Parallel()
	b := &headBuffer{limit: 2}
	_, _ = b.Write([]byte("aé!"))
	kept, omitted := b.bytes()
	if string(kept) != "a" || omitted != 3 {
		t.Errorf("kept %q, omitted %d; want \"a\", 3", kept, omitted)
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{limit: 4}
	for _, s := range []string{"hello ", "wor", "ld", "é"} {
		_, _ = b.Write([]byte(s))
	}
	kept, omitted := b.bytes()
	if string(kept) != "ldé" || omitted != 9 {
		t.Errorf("kept %q, omitted %d; want \"ldé\", 9", kept, omitted)
	}
	b = &tailBuffer{limit: 4}
	_, _ = b.Write([]byte("éabc")) // 5 bytes: the last 4 start inside é
	if kept, omitted = b.bytes(); string(kept) != "abc" || omitted != 2 {
		t.Errorf("kept %q, omitted %d; want \"abc\", 2", kept, omitted)
	}
}

func TestLineSplitter_LongLine(t *testing.T) {
	t.Parallel()
	var got []string
	s := &lineSplitter{onLine: func(l string) { got = append(got, l) }}
	_, _ = s.Write([]byte(strings.Repeat("x", 3*maxLine)))
	_, _ = s.Write([]byte("\nshort\n"))
	if len(got) != 2 || len(got[0]) != maxLine || got[1] != "short" {
		t.Errorf("lines of %d bytes: %v", len(got[0]), got[1:])
	}
}
