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
	r := &Record{}
	r.AddHistory(HistoryEvent{At: t0, Kind: HistoryClaimed, Attempt: 1, Worker: strings.Repeat("w", 100)})
	for i := range 100 {
		r.AddHistory(HistoryEvent{At: t0.Add(time.Duration(i) * time.Second), Kind: HistoryStatus, Attempt: 1, Message: fmt.Sprintf("step %d", i)})
	}
	if len(r.History) != MaxHistory {
		t.Fatalf("len(History) = %d after 101 events, want %d", len(r.History), MaxHistory)
	}
	var seqs []int
	for _, e := range r.History {
		seqs = append(seqs, e.Seq)
	}
	// The first HistoryHead events stay; the rest are the newest.
	want := []int{1, 2, 3, 4}
	for s := 101 - (MaxHistory - HistoryHead) + 1; s <= 101; s++ {
		want = append(want, s)
	}
	if !slices.Equal(seqs, want) {
		t.Errorf("kept events %v, want %v", seqs, want)
	}
	if got := r.History[0].Worker; got != strings.Repeat("w", MaxHistoryName) {
		t.Errorf("Worker of %d characters kept as %d", 100, len(got))
	}
	if last := r.History[MaxHistory-1]; last.Message != "step 99" || last.Kind != HistoryStatus {
		t.Errorf("last event = %+v, want step 99", last)
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
