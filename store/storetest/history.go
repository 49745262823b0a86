package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testHistory checks the History that the store keeps with each task: it
// comes back as stored, and the writes append to it as the shared Apply
// functions do (the Postgres claim statement too).
func testHistory(t *testing.T, f factory) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		r := newTask("t1")
		r.History = []task.HistoryEvent{
			{Seq: 1, At: at(time.Second), Kind: task.HistoryClaimed, Attempt: 1, Worker: "w1"},
			{Seq: 3, At: at(2 * time.Second), Kind: task.HistoryInputRequested, Attempt: 1, Message: "a?", Keys: []string{"a", "b"}},
		}
		create(t, s, r)
		wantHistory(t, get(t, s, "t1").History, r.History)
	})
	t.Run("Lifecycle", func(t *testing.T) { testHistoryLifecycle(t, f) })
	t.Run("Bounded", func(t *testing.T) { testHistoryBounded(t, f) })
}

func testHistoryLifecycle(t *testing.T, f factory) {
	t.Parallel()
	s := f.open(t)
	ctx := context.Background()
	create(t, s, newTask("t1"))

	c1 := claim(t, s, "w1", at(time.Second))
	if err := s.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: fence(c1, at(2*time.Second)), StatusMessage: "Querying"}); err != nil {
		t.Fatal(err)
	}
	// The same message again changes nothing, and adds no event.
	if err := s.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: fence(c1, at(3*time.Second)), StatusMessage: "Querying"}); err != nil {
		t.Fatal(err)
	}
	if _, err := heartbeat(ctx, s, fence(c1, at(3*time.Second)), at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	_, err := s.RequestInput(ctx, store.RequestInputParams{FenceParams: fence(c1, at(4*time.Second)), Requests: raws("b", reqB, "a", reqA), StatusMessage: "Overwrite?"})
	if err != nil {
		t.Fatal(err)
	}
	answer(t, s, "t1", at(5*time.Second), raws("a", respA))
	answer(t, s, "t1", at(6*time.Second), raws("b", respB, "zz", respB))
	// A question asked and taken back: only the outstanding key is
	// withdrawn.
	requestInput(t, s, c1, at(6500*time.Millisecond), raws("c", reqC))
	if _, err := s.RequestInput(ctx, store.RequestInputParams{FenceParams: fence(c1, at(6700*time.Millisecond)), Withdraw: []string{"c", "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, fence(c1, at(7*time.Second))); err != nil {
		t.Fatal(err)
	}
	c2 := claim(t, s, "w2", at(8*time.Second))
	// w2's lease expires unrenewed: w3's claim finds the worker lost.
	c3 := claim(t, s, "w3", at(8*time.Second+lease))
	if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t1", Principal: alice, Now: at(9*time.Second + lease)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, store.FinishParams{FenceParams: fence(c3, at(10*time.Second+lease)), Status: task.Cancelled, StatusMessage: "Stopped"}); err != nil {
		t.Fatal(err)
	}

	want := []task.HistoryEvent{
		{Seq: 1, At: at(time.Second), Kind: task.HistoryClaimed, Attempt: 1, Worker: "w1"},
		{Seq: 2, At: at(2 * time.Second), Kind: task.HistoryStatus, Attempt: 1, Message: "Querying"},
		{Seq: 3, At: at(4 * time.Second), Kind: task.HistoryInputRequested, Attempt: 1, Message: "Overwrite?", Keys: []string{"a", "b"}},
		{Seq: 4, At: at(5 * time.Second), Kind: task.HistoryAnswered, Attempt: 1, Keys: []string{"a"}},
		{Seq: 5, At: at(6 * time.Second), Kind: task.HistoryAnswered, Attempt: 1, Keys: []string{"b"}},
		{Seq: 6, At: at(6500 * time.Millisecond), Kind: task.HistoryInputRequested, Attempt: 1, Keys: []string{"c"}},
		{Seq: 7, At: at(6700 * time.Millisecond), Kind: task.HistoryInputWithdrawn, Attempt: 1, Keys: []string{"c"}},
		{Seq: 8, At: at(7 * time.Second), Kind: task.HistoryReleased, Attempt: 1, Worker: "w1"},
		{Seq: 9, At: at(8 * time.Second), Kind: task.HistoryClaimed, Attempt: c2.Attempt, Worker: "w2"},
		{Seq: 10, At: at(8*time.Second + lease), Kind: task.HistoryClaimed, Attempt: c3.Attempt, Worker: "w3", Lost: true},
		{Seq: 11, At: at(9*time.Second + lease), Kind: task.HistoryCancelRequested, Attempt: c3.Attempt},
		{Seq: 12, At: at(10*time.Second + lease), Kind: task.HistoryFinished, Attempt: c3.Attempt, Status: task.Cancelled, Message: "Stopped"},
	}
	wantHistory(t, get(t, s, "t1").History, want)

	// A task no worker holds is cancelled at once: one finished event.
	create(t, s, newTask("t2"))
	if _, err := s.RequestCancel(ctx, store.CancelParams{ID: "t2", Principal: alice, Now: at(time.Second), StatusMessage: "Cancelled by request"}); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, get(t, s, "t2").History, []task.HistoryEvent{
		{Seq: 1, At: at(time.Second), Kind: task.HistoryFinished, Status: task.Cancelled, Message: "Cancelled by request"},
	})
}

// testHistoryBounded checks that a chatty task keeps its history within
// the bounds, as task.Record.AddHistory keeps it, whichever write adds
// the events: many status messages, then many questions and answers, then
// a claim (in SQL, on Postgres) of a history already full.
func testHistoryBounded(t *testing.T, f factory) {
	t.Parallel()
	s := f.open(t)
	ctx := context.Background()
	create(t, s, newTask("t1"))
	model := &task.Record{}
	c := claim(t, s, "w1", at(0))
	model.AddHistory(task.HistoryEvent{Kind: task.HistoryClaimed})
	for i := range 40 {
		msg := fmt.Sprintf("step %d %s", i, strings.Repeat("x", task.MaxHistoryText))
		if err := s.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: fence(c, at(time.Duration(i)*time.Millisecond)), StatusMessage: msg}); err != nil {
			t.Fatal(err)
		}
		model.AddHistory(task.HistoryEvent{Kind: task.HistoryStatus})
	}
	for i := range 14 {
		k := fmt.Sprintf("k%02d", i)
		requestInput(t, s, c, at(time.Second), raws(k, reqA))
		answer(t, s, "t1", at(time.Second), raws(k, respA))
		model.AddHistory(task.HistoryEvent{Kind: task.HistoryInputRequested})
		model.AddHistory(task.HistoryEvent{Kind: task.HistoryAnswered})
	}
	if n := len(get(t, s, "t1").History); n != task.MaxHistory {
		t.Fatalf("History holds %d events before the last claim, want %d", n, task.MaxHistory)
	}
	c2 := claim(t, s, "w2", at(lease)) // the lease ended: a loss
	model.AddHistory(task.HistoryEvent{Kind: task.HistoryClaimed})

	h := get(t, s, "t1").History
	var got, want []int
	for _, e := range h {
		got = append(got, e.Seq)
	}
	for _, e := range model.History {
		want = append(want, e.Seq)
	}
	if !slices.Equal(got, want) {
		t.Errorf("kept events %v, want %v", got, want)
	}
	if m := h[1].Message; len([]rune(m)) != task.MaxHistoryText || !strings.HasPrefix(m, "step 0 x") {
		t.Errorf("first message kept as %d characters %.20q…, want %d", len([]rune(m)), m, task.MaxHistoryText)
	}
	last := h[len(h)-1]
	if last.Kind != task.HistoryClaimed || last.Worker != "w2" || !last.Lost || last.Attempt != c2.Attempt {
		t.Errorf("last event = %+v, want w2's claim", last)
	}
}

// wantHistory fails t unless got equals want, times by Equal.
func wantHistory(t *testing.T, got, want []task.HistoryEvent) {
	t.Helper()
	eq := func(a, b task.HistoryEvent) bool {
		return a.Seq == b.Seq && a.At.Equal(b.At) && a.Kind == b.Kind && a.Attempt == b.Attempt &&
			a.Worker == b.Worker && a.Lost == b.Lost && a.Status == b.Status && a.Message == b.Message &&
			slices.Equal(a.Keys, b.Keys)
	}
	if !slices.EqualFunc(got, want, eq) {
		var b strings.Builder
		for i := range max(len(got), len(want)) {
			var g, w string
			if i < len(got) {
				g = fmt.Sprintf("%+v", got[i])
			}
			if i < len(want) {
				w = fmt.Sprintf("%+v", want[i])
			}
			mark := " "
			if g != w {
				mark = "!"
			}
			fmt.Fprintf(&b, "\n%s got  %s\n%s want %s", mark, g, mark, w)
		}
		t.Errorf("History differs:%s", b.String())
	}
}
