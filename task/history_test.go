package task

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAddHistory_Bounds(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, time.July, 28, 10, 30, 0, 0, time.UTC)
	status := HistoryEvent{Kind: HistoryStatus, Attempt: 1, Message: "step"}
	asked := HistoryEvent{Kind: HistoryInputRequested, Attempt: 1, Keys: []string{"k"}}
	answered := HistoryEvent{Kind: HistoryAnswered, Attempt: 1, Keys: []string{"k"}}
	seqs := func(from, to int) []int {
		var s []int
		for i := from; i <= to; i++ {
			s = append(s, i)
		}
		return s
	}
	tests := []struct {
		name   string
		events []HistoryEvent // after a claim
		want   []int          // the Seq of the events kept
	}{
		{"Few", []HistoryEvent{status, asked, answered}, seqs(1, 4)},
		// Status messages past the head: the newest MaxHistoryStatus.
		{"ChattyStatus", slices.Repeat([]HistoryEvent{status}, 100), append(seqs(1, 4), seqs(101-MaxHistoryStatus+1, 101)...)},
		// Other events: the head and the newest, MaxHistory in all.
		{"ManyQuestions", slices.Repeat([]HistoryEvent{asked, answered}, 25), append(seqs(1, 4), seqs(51-(MaxHistory-HistoryHead)+1, 51)...)},
		// Status messages among the others still count MaxHistoryStatus.
		{"Mixed", slices.Repeat([]HistoryEvent{status, status, asked, answered}, 6), append(seqs(1, 5), seqs(8, 25)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Record{}
			r.AddHistory(HistoryEvent{At: t0, Kind: HistoryClaimed, Attempt: 1, Worker: strings.Repeat("w", 100)})
			for i, e := range tt.events {
				e.At = t0.Add(time.Duration(i) * time.Second)
				e.Message = fmt.Sprintf("%s %d", e.Message, i)
				r.AddHistory(e)
			}
			var got []int
			status := 0
			for i, e := range r.History {
				got = append(got, e.Seq)
				if e.Kind == HistoryStatus && i >= HistoryHead {
					status++
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("kept events %v, want %v", got, tt.want)
			}
			if len(r.History) > MaxHistory || status > MaxHistoryStatus {
				t.Errorf("kept %d events, %d status events past the head", len(r.History), status)
			}
			if w := r.History[0].Worker; w != strings.Repeat("w", MaxHistoryName) {
				t.Errorf("Worker of 100 characters kept as %d", len(w))
			}
		})
	}
}

func TestAddHistory_Text(t *testing.T) {
	t.Parallel()
	r := &Record{}
	keys := []string{"z", "a", strings.Repeat("é", 100)}
	for i := range 10 {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	r.AddHistory(HistoryEvent{Kind: HistoryInputRequested, Message: strings.Repeat("ü", 300), Keys: keys})
	e := r.History[0]
	if n := len([]rune(e.Message)); n != MaxHistoryText || !strings.HasPrefix(strings.Repeat("ü", 300), e.Message) {
		t.Errorf("Message cut to %d characters, want %d whole ones", n, MaxHistoryText)
	}
	if len(e.Keys) != MaxHistoryKeys || e.Keys[0] != "a" || e.Keys[1] != "k0" {
		t.Errorf("Keys = %q, want the first %d in order", e.Keys, MaxHistoryKeys)
	}
	if !slices.Equal(keys[:3], []string{"z", "a", strings.Repeat("é", 100)}) {
		t.Error("AddHistory changed the caller's keys")
	}
}

func TestRecordClone_History(t *testing.T) {
	t.Parallel()
	r := &Record{History: []HistoryEvent{{Seq: 1, Kind: HistoryAnswered, Keys: []string{"a"}}}}
	c := r.Clone()
	c.History[0].Keys[0] = "changed"
	c.History[0].Kind = HistoryFinished
	if r.History[0].Keys[0] != "a" || r.History[0].Kind != HistoryAnswered {
		t.Errorf("changing a clone's history changed the original: %+v", r.History[0])
	}
}
