// Package term draws a live status line and asks questions on a
// terminal: line prompts, choices, and elicitation forms rendered from
// their requestedSchema.
//
// It works on any io.Reader and io.Writer, in the terminal's ordinary
// (cooked) mode: the terminal edits and echoes the line, and Ctrl-C stays a
// signal, which the caller turns into an Interrupt.
package term

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
)

// ErrInterrupted is returned by a question that an Interrupt ended.
var ErrInterrupted = errors.New("interrupted")

// Lines reads lines from an io.Reader in a goroutine of its own, started
// by the first read, so that a question can be abandoned (by a context or
// an interrupt) without losing the reader or the next line. It is safe for
// concurrent use, though a line goes to one reader only.
type Lines struct {
	r    io.Reader
	once sync.Once
	ch   chan line

	mu  sync.Mutex
	err error // sticky: the reader's error once every line is read
}

type line struct {
	s   string
	err error
}

// NewLines returns a line reader of r. Nothing is read from r before the
// first call of Next.
func NewLines(r io.Reader) *Lines { return &Lines{r: r, ch: make(chan line)} }

func (l *Lines) start() {
	go func() {
		br := bufio.NewReader(l.r)
		for {
			s, err := br.ReadString('\n')
			if err == nil || s != "" {
				l.ch <- line{s: strings.TrimRight(s, "\r\n")}
			}
			if err != nil {
				l.ch <- line{err: err}
				return
			}
		}
	}()
}

// Next returns the next line without its line ending. It returns ctx's
// error if ctx ends first, ErrInterrupted if interrupt receives first,
// and the reader's error (io.EOF at the end) once every line is read.
func (l *Lines) Next(ctx context.Context, interrupt <-chan struct{}) (string, error) {
	l.mu.Lock()
	err := l.err
	l.mu.Unlock()
	if err != nil {
		return "", err
	}
	l.once.Do(l.start)
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-interrupt:
		return "", ErrInterrupted
	case ln := <-l.ch:
		if ln.err != nil {
			l.mu.Lock()
			l.err = ln.err
			l.mu.Unlock()
			return "", ln.err
		}
		return ln.s, nil
	}
}
