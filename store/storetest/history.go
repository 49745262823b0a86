package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// testHistory checks the History that the store keeps with each task: it
// comes back as stored.
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
