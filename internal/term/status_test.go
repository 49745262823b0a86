package term

import (
	"strings"
	"testing"
	"time"
)

func TestStatusLine(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	now := start.Add(65 * time.Second)
	var out strings.Builder
	width := 40
	s := NewStatusLine(&out, func() int { return width }, start)
	s.now = func() time.Time { return now }

	s.Set("working", "Querying\nrows")
	if got, want := out.String(), "\r\x1b[2K⠋ 1m05s working · Querying rows"; got != want {
		t.Errorf("drawn %q, want %q", got, want)
	}
	s.Tick()
	if got := s.Text(); got != "⠙ 1m05s working · Querying rows" {
		t.Errorf("after a tick: %q", got)
	}
	// Cut to the width, so that the line never wraps.
	s.Set("working", strings.Repeat("x", 100))
	if got := s.Text(); len([]rune(got)) != width-1 || !strings.HasSuffix(got, "x…") {
		t.Errorf("long line %q (%d runes), want %d runes ending in …", got, len([]rune(got)), width-1)
	}

	// Paused: nothing is drawn; the line is erased once.
	out.Reset()
	s.Pause()
	s.Tick()
	s.Set("input_required", "")
	if got := out.String(); got != "\r\x1b[2K" {
		t.Errorf("while paused, wrote %q", got)
	}
	out.Reset()
	s.Resume()
	if got := out.String(); !strings.HasPrefix(got, "\r\x1b[2K") || !strings.HasSuffix(got, "input_required") {
		t.Errorf("resumed: %q", got)
	}

	// Println puts a line above the status line.
	out.Reset()
	s.Println("hello")
	if got := out.String(); !strings.HasPrefix(got, "\r\x1b[2Khello\n\r\x1b[2K") {
		t.Errorf("Println wrote %q", got)
	}

	// Stopped for good: Resume does not bring it back.
	out.Reset()
	s.Stop()
	s.Resume()
	s.Tick()
	if got := out.String(); got != "\r\x1b[2K" {
		t.Errorf("after Stop, wrote %q", got)
	}
}

func TestStatusLine_DefaultWidth(t *testing.T) {
	t.Parallel()
	s := NewStatusLine(&strings.Builder{}, func() int { return 0 }, time.Now())
	s.Set("working", strings.Repeat("y", 200))
	if got := len([]rune(s.Text())); got != DefaultWidth-1 {
		t.Errorf("width %d, want %d", got, DefaultWidth-1)
	}
}

func TestElapsed(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		-time.Second:                    "0s",
		1500 * time.Millisecond:         "1s",
		59 * time.Second:                "59s",
		3*time.Minute + 4*time.Second:   "3m04s",
		2*time.Hour + 5*time.Minute + 9: "2h05m",
	} {
		if got := Elapsed(d); got != want {
			t.Errorf("Elapsed(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestPrompter_Choose(t *testing.T) {
	t.Parallel()
	choices := []Choice{{"d", "detach"}, {"c", "cancel"}, {"w", "wait"}}
	for _, tc := range []struct{ in, want string }{
		{"\n", "w"},
		{"d\n", "d"},
		{"Cancel\n", "c"},
		{"det\n", "d"},
		{"x\nc\n", "c"},
	} {
		var out strings.Builder
		p := &Prompter{In: NewLines(strings.NewReader(tc.in)), Out: &out}
		got, err := p.Choose(t.Context(), "Now?", choices, "w")
		if err != nil || got != tc.want {
			t.Errorf("Choose with %q = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if !strings.HasPrefix(out.String(), "Now? [d]etach, [c]ancel, [w]ait [w]: ") {
			t.Errorf("prompt %q", out.String())
		}
	}
}
