package term

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultWidth is the width a StatusLine assumes when it cannot learn the
// terminal's.
const DefaultWidth = 80

// DefaultTick is how often [StatusLine.Run] redraws the line.
const DefaultTick = 100 * time.Millisecond

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// StatusLine is one line of a terminal redrawn in place: a spinner, the
// elapsed time, a status and a message, cut to the terminal's width so
// that it never wraps. It is safe for concurrent use.
type StatusLine struct {
	w     io.Writer
	width func() int
	now   func() time.Time

	mu      sync.Mutex
	start   time.Time
	status  string
	message string
	frame   int
	shown   bool // the line is on the screen
	paused  bool
	stopped bool
}

// NewStatusLine returns a status line written to w that counts the time
// from start. width reports the terminal's columns (nil or a result below
// 1 means DefaultWidth).
func NewStatusLine(w io.Writer, width func() int, start time.Time) *StatusLine {
	return &StatusLine{w: w, width: width, now: time.Now, start: start}
}

// SetStart changes the time the elapsed time counts from.
func (s *StatusLine) SetStart(t time.Time) {
	s.mu.Lock()
	s.start = t
	s.mu.Unlock()
}

// Set shows a new status and message.
func (s *StatusLine) Set(status, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.message = status, message
	s.draw()
}

// Tick advances the spinner and redraws.
func (s *StatusLine) Tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frame++
	s.draw()
}

// Run ticks every interval until ctx ends.
func (s *StatusLine) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Tick()
		}
	}
}

// Pause erases the line and draws nothing until Resume: the terminal is
// free for a prompt.
func (s *StatusLine) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	s.paused = true
}

// Resume draws the line again after Pause.
func (s *StatusLine) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = s.stopped
	s.draw()
}

// Println erases the line, prints a permanent line above it, and draws it
// again (unless paused).
func (s *StatusLine) Println(a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	fmt.Fprintln(s.w, a...)
	s.draw()
}

// Stop erases the line for good: nothing draws it again.
func (s *StatusLine) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	s.paused, s.stopped = true, true
}

// Text is the line as it would be drawn now, without escape sequences.
func (s *StatusLine) Text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text()
}

func (s *StatusLine) text() string {
	var b strings.Builder
	b.WriteString(spinner[s.frame%len(spinner)])
	b.WriteString(" ")
	b.WriteString(Elapsed(s.now().Sub(s.start)))
	if s.status != "" {
		b.WriteString(" ")
		b.WriteString(s.status)
	}
	if m := oneLine(s.message); m != "" {
		b.WriteString(" · ")
		b.WriteString(m)
	}
	w := DefaultWidth
	if s.width != nil {
		if n := s.width(); n > 0 {
			w = n
		}
	}
	return truncate(b.String(), w-1)
}

func (s *StatusLine) draw() {
	if s.paused {
		return
	}
	fmt.Fprint(s.w, "\r\x1b[2K"+s.text())
	s.shown = true
}

func (s *StatusLine) erase() {
	if s.shown {
		fmt.Fprint(s.w, "\r\x1b[2K")
		s.shown = false
	}
}

// oneLine replaces line breaks and tabs by spaces, and control characters
// (see safe).
func oneLine(s string) string {
	return strings.Join(strings.Fields(safe(s)), " ")
}

// safe returns s with the control characters a terminal acts on (C0 but
// newline and tab, DEL and C1) replaced by U+FFFD: text from a server or a
// tool's output, shown in a prompt or the status line, must not move the
// cursor, retitle the window or write the clipboard.
func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// truncate cuts s to n runes, ending it with "…" if it was longer.
func truncate(s string, n int) string {
	if n < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Elapsed formats a duration for a person: "7s", "3m04s", "2h05m".
func Elapsed(d time.Duration) string {
	d = max(d, 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
