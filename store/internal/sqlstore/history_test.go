package sqlstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

func TestEncodeDecodeHistory(t *testing.T) {
	t.Parallel()
	if v, err := EncodeHistory(nil); v != nil || err != nil {
		t.Fatalf("EncodeHistory(nil) = %v, %v, want NULL", v, err)
	}
	if h, err := DecodeHistory(nil); h != nil || err != nil {
		t.Fatalf("DecodeHistory(NULL) = %v, %v", h, err)
	}
	at := time.Date(2026, time.July, 28, 10, 30, 0, 123_000_000, time.UTC)
	in := []task.HistoryEvent{
		{Seq: 1, At: at, Kind: task.HistoryClaimed, Attempt: 1, Worker: "w1", Lost: true},
		{Seq: 5, At: at, Kind: task.HistoryFinished, Attempt: 1, Status: task.Failed, Message: `a "b"`, Keys: []string{"k"}},
	}
	v, err := EncodeHistory(in)
	if err != nil {
		t.Fatal(err)
	}
	// The shape the Postgres claim statement writes too.
	want := `[{"seq":1,"at":1785234600123,"kind":"claimed","attempt":1,"worker":"w1","lost":true},` +
		`{"seq":5,"at":1785234600123,"kind":"finished","attempt":1,"status":"failed","message":"a \"b\"","keys":["k"]}]`
	if v != want {
		t.Fatalf("EncodeHistory = %s, want %s", v, want)
	}
	out, err := DecodeHistory([]byte(v.(string)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(out, in, func(a, b task.HistoryEvent) bool {
		return a.Seq == b.Seq && a.At.Equal(b.At) && a.Kind == b.Kind && a.Attempt == b.Attempt && a.Worker == b.Worker &&
			a.Lost == b.Lost && a.Status == b.Status && a.Message == b.Message && slices.Equal(a.Keys, b.Keys)
	}) {
		t.Errorf("DecodeHistory = %+v, want %+v", out, in)
	}
	if _, err := DecodeHistory([]byte(`{`)); err == nil {
		t.Error("DecodeHistory of invalid JSON succeeded")
	}
}

// BenchmarkHistory measures what a history costs each write of a task
// (the SQL stores encode the whole record) and each read (they decode
// it): a task past its status messages' bound keeps the claim, three
// messages and eight more (12 events); one with many questions keeps
// task.MaxHistory.
func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{12, task.MaxHistory} {
		r := &task.Record{}
		for i := range n {
			r.AddHistory(task.HistoryEvent{At: time.Now(), Kind: task.HistoryInputRequested, Attempt: 1, Message: fmt.Sprintf("Processing batch %d of 40", i), Keys: []string{"k"}})
		}
		v, _ := EncodeHistory(r.History)
		b.Run(fmt.Sprintf("Encode/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeHistory(r.History); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(v.(string))), "JSON-bytes")
		})
		b.Run(fmt.Sprintf("Decode/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeHistory([]byte(v.(string))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
