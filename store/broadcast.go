package store

import (
	"context"
	"sync"

	"github.com/mcptasks/mcptasks/task"
)

// broadcastBuffer is the buffer of each channel of a Broadcast.
const broadcastBuffer = 256

// Broadcast is an in-process [Listener] for the stores that have no
// database to announce changes through (memory, sqlite): the store
// publishes each change after it committed it, and every channel that
// Listen returned receives it. A channel that is full when an event comes
// loses it, and receives an [EventResync] in its place as soon as it has
// room at a later Publish. The zero value is ready to use.
type Broadcast struct {
	mu   sync.Mutex
	subs map[*broadcastSub]struct{}
}

// broadcastSub is one Listen channel of a Broadcast.
type broadcastSub struct {
	ch   chan Event
	lost bool // an event was dropped: send EventResync first
}

// Publish delivers ev to every listener without blocking.
func (b *Broadcast) Publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.lost {
			select {
			case s.ch <- Event{Kind: EventResync}:
				s.lost = false
			default:
			}
			continue // the resync (or the one still owed) covers ev
		}
		select {
		case s.ch <- ev:
		default:
			s.lost = true
		}
	}
}

// Listening reports whether any channel is listening.
func (b *Broadcast) Listening() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

// Listen implements [Listener]: the channel receives the events published
// from now until ctx is done; then it is closed.
func (b *Broadcast) Listen(ctx context.Context) (<-chan Event, error) {
	s := &broadcastSub{ch: make(chan Event, broadcastBuffer)}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[*broadcastSub]struct{}{}
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, s)
		close(s.ch)
	})
	return s.ch, nil
}

// CreateEvent is how a store announces the create of r: EventCreated,
// which wakes the workers to claim it, if r is created claimable (working,
// unleased); else EventUpdated, for watchers of changes only (a claim for
// it would find nothing): r was created leased to its creator, whose
// engine runs it already, or with its handler's first write applied
// (waiting for input, or ended).
func CreateEvent(r *task.Record) EventKind {
	if r.Status != task.Working || r.LeaseOwner != "" {
		return EventUpdated
	}
	return EventCreated
}
