package task

import (
	"slices"
	"time"
)

// HistoryKind says what a [HistoryEvent] records.
type HistoryKind string

// Kinds of [HistoryEvent]. Creation is not one: CreatedAt records it.
const (
	// HistoryClaimed: a worker (Worker) took the task, at Attempt; Lost
	// says the previous attempt's worker was lost (its lease expired).
	HistoryClaimed HistoryKind = "claimed"
	// HistoryReleased: the worker gave the task up without ending it (a
	// graceful shutdown), for another to claim.
	HistoryReleased HistoryKind = "released"
	// HistoryStatus: the status message became Message.
	HistoryStatus HistoryKind = "status"
	// HistoryInputRequested: the task asked for the input Keys, and went
	// to input_required with the status message Message (if any).
	HistoryInputRequested HistoryKind = "input_requested"
	// HistoryAnswered: answers to the input Keys arrived.
	HistoryAnswered HistoryKind = "answered"
	// HistoryInputWithdrawn: the task no longer asks for the input Keys
	// (its handler stopped waiting for them before they were answered).
	HistoryInputWithdrawn HistoryKind = "input_withdrawn"
	// HistoryCancelRequested: a cancel was asked for while a worker held
	// the task; the worker ends it.
	HistoryCancelRequested HistoryKind = "cancel_requested"
	// HistoryFinished: the task ended in Status, with the status message
	// Message.
	HistoryFinished HistoryKind = "finished"
)

// Bounds of a [Record]'s History, so that a chatty task cannot grow its
// record without limit: at most MaxHistory events, of which at most
// HistoryHead+MaxHistoryStatus status messages, each of bounded size (at
// most about 3 KiB, with every text at its bound in 4-byte characters; a
// typical event takes under 150 bytes of JSON).
const (
	// MaxHistory is the most events kept. When a new event would make
	// one more, the oldest event after the first HistoryHead goes.
	MaxHistory = 32
	// HistoryHead is how many of the first events are always kept: the
	// first claim and what followed it.
	HistoryHead = 4
	// MaxHistoryStatus is the most status events kept past the head:
	// progress messages come many and go stale, and would otherwise push
	// out the claims, questions and answers around them. A new one past
	// the bound drops the oldest.
	MaxHistoryStatus = 8
	// MaxHistoryText is the most characters (runes) of an event's
	// Message; a longer one is cut.
	MaxHistoryText = 200
	// MaxHistoryName is the most characters of an event's Worker and of
	// each of its Keys.
	MaxHistoryName = 64
	// MaxHistoryKeys is the most input keys an event lists.
	MaxHistoryKeys = 8
)

// HistoryEvent is one step of a task's life, as its History keeps it.
// Which fields are set depends on Kind.
type HistoryEvent struct {
	// Seq numbers the task's events from 1. A gap between two kept
	// events counts the events dropped between them.
	Seq int
	// At is when the event happened.
	At   time.Time
	Kind HistoryKind
	// Attempt is the attempt the event belongs to (0 before any claim).
	Attempt int
	// Worker is the worker that claimed or released the task.
	Worker string
	// Lost is set on a claim that found the previous worker lost.
	Lost bool
	// Status is the terminal status of a finished event.
	Status Status
	// Message is a status message.
	Message string
	// Keys are input keys, sorted; at most MaxHistoryKeys of them.
	Keys []string
}

// AddHistory appends e to r's History, numbered after the last event, with
// its text cut to the bounds. Then it drops the oldest status event past
// the first HistoryHead if more than MaxHistoryStatus are kept there, and
// the oldest event past them if the history is longer than MaxHistory.
func (r *Record) AddHistory(e HistoryEvent) {
	e.Seq = 1
	if n := len(r.History); n > 0 {
		e.Seq = r.History[n-1].Seq + 1
	}
	e.Message = cutRunes(e.Message, MaxHistoryText)
	e.Worker = cutRunes(e.Worker, MaxHistoryName)
	if len(e.Keys) > 0 {
		keys := slices.Sorted(slices.Values(e.Keys))
		e.Keys = make([]string, 0, min(len(keys), MaxHistoryKeys))
		for _, k := range keys[:min(len(keys), MaxHistoryKeys)] {
			e.Keys = append(e.Keys, HistoryKey(k))
		}
	}
	r.History = append(r.History, e)
	if e.Kind == HistoryStatus {
		n, oldest := 0, 0
		for i := len(r.History) - 1; i >= HistoryHead; i-- {
			if r.History[i].Kind == HistoryStatus {
				n, oldest = n+1, i
			}
		}
		if n > MaxHistoryStatus {
			r.History = slices.Delete(r.History, oldest, oldest+1)
		}
	}
	if len(r.History) > MaxHistory {
		r.History = slices.Delete(r.History, HistoryHead, HistoryHead+1)
	}
}

// HistoryKey returns the input key k as a history event keeps it: cut to
// MaxHistoryName characters.
func HistoryKey(k string) string { return cutRunes(k, MaxHistoryName) }

// cutRunes returns s cut to at most n characters (runes), as Postgres's
// left(s, n) does.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// cloneHistory returns a deep copy of h.
func cloneHistory(h []HistoryEvent) []HistoryEvent {
	if h == nil {
		return nil
	}
	c := slices.Clone(h)
	for i := range c {
		c[i].Keys = slices.Clone(c[i].Keys)
	}
	return c
}
