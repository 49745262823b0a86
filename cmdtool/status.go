package cmdtool

import (
	"context"
	"regexp"
	"sync"
	"time"
)

// statusEvery is the least time between two status updates of one task: a
// command printing thousands of lines a second costs a few store writes.
const statusEvery = 250 * time.Millisecond

// statusPump forwards the latest offered line to a task's status message,
// at most once per statusEvery. Lines offered in between are coalesced:
// the latest one is always sent eventually, while the command runs.
type statusPump struct {
	set    func(context.Context, string) error
	every  time.Duration
	mu     sync.Mutex
	latest string
	kick   chan struct{} // buffered(1): a line is waiting
	quit   chan struct{}
	done   chan struct{}
}

// startStatusPump starts a pump that calls set with ctx. Call stop when
// the command has ended.
func startStatusPump(ctx context.Context, every time.Duration, set func(context.Context, string) error) *statusPump {
	p := &statusPump{set: set, every: every, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go p.loop(ctx)
	return p
}

// offer makes s the status message to send next.
func (p *statusPump) offer(s string) {
	p.mu.Lock()
	p.latest = s
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *statusPump) loop(ctx context.Context) {
	defer close(p.done)
	var sent string
	pause := time.NewTimer(p.every)
	pause.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-p.kick:
		}
		p.mu.Lock()
		s := p.latest
		p.mu.Unlock()
		if s != sent {
			// A status update that fails (a store blip) is not worth
			// stopping the command for; the next line tries again.
			if p.set(ctx, s) == nil {
				sent = s
			}
		}
		pause.Reset(p.every)
		select {
		case <-p.quit:
			return
		case <-pause.C:
		}
	}
}

// stop stops the pump and waits for a status update in flight.
func (p *statusPump) stop() {
	close(p.quit)
	<-p.done
}

// progressFilter returns the function that turns an output line into a
// status message: with no pattern every line; with one only the lines it
// matches, reduced to the first capture group if it has one.
func progressFilter(re *regexp.Regexp, offer func(string)) func(string) {
	if re == nil {
		return offer
	}
	return func(line string) {
		m := re.FindStringSubmatch(line)
		switch {
		case m == nil:
		case len(m) > 1 && m[1] != "":
			offer(m[1])
		case len(m) == 1:
			offer(line)
		}
	}
}
