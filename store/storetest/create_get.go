package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

func testCreateGet(t *testing.T, f factory) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, f) })

	t.Run("Copies", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		r := newTask("t1")
		r.InputRequests = raws("a", reqA)
		r.Answers = raws("b", respB)
		want := r.Clone()
		create(t, s, r)

		// Changing the argument of Create changes nothing stored.
		r.Tool = "changed"
		r.Args[0] = '['
		r.InputRequests["a"] = reqC
		r.Answers["c"] = respA
		wantStored(t, s, want)

		// Nor does changing what Get returned.
		g := get(t, s, "t1")
		g.Status = task.Failed
		g.Args[0] = '['
		g.InputRequests["x"] = reqC
		g.Answers["b"] = respA
		wantStored(t, s, want)
	})

	t.Run("DuplicateID", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		first := newTask("t1")
		create(t, s, first)

		dup := newTask("t1")
		dup.Principal = bob
		dup.Tool = "other"
		err := s.Create(context.Background(), dup)
		wantErr(t, "Create(duplicate)", err, store.ErrExists)
		wantStored(t, s, first)
	})

	t.Run("GetUnknown", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		_, err := s.Get(context.Background(), "t2")
		wantErr(t, "Get(unknown)", err, store.ErrNotFound)
	})

	t.Run("GetForOtherPrincipal", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		r := newTask("t1")
		create(t, s, r)
		get(t, s, "t1") // a backend with a cache may now hold it
		wantStored(t, s, r)
		for _, c := range []struct{ id, principal string }{{"t1", bob}, {"t1", ""}, {"t2", alice}} {
			_, err := s.GetFor(context.Background(), c.id, c.principal)
			wantErr(t, fmt.Sprintf("GetFor(%s, %q)", c.id, c.principal), err, store.ErrNotFound)
		}
	})

	t.Run("TraceParentKept", func(t *testing.T) { testTraceParentKept(t, f) })

	t.Run("ManyTasks", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		var want []*task.Record
		for i := range 20 {
			r := newTask(task.NewID())
			r.CreatedAt = at(time.Duration(i) * time.Millisecond)
			r.UpdatedAt = r.CreatedAt
			r.Args = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
			want = append(want, r)
		}
		create(t, s, want...)
		for _, w := range want {
			wantStored(t, s, w)
		}
	})
}

// testRoundTrip checks that Get returns every field Create was given.
func testRoundTrip(t *testing.T, f factory) {
	ms := func(n int) time.Time { return at(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name string
		rec  func() *task.Record
	}{
		{
			name: "Queued",
			rec:  func() *task.Record { return newTask("t1") },
		},
		{
			name: "EveryField",
			rec: func() *task.Record {
				return &task.Record{
					ID:                 task.NewID(),
					Principal:          "user:alice@example.com",
					Tool:               "render/video",
					Args:               json.RawMessage(`{"frames": [1, 2, 3], "name":"caf\u00e9 <b>&</b>"}`),
					ClientCapabilities: json.RawMessage(`{"elicitation":{"form":{}},"sampling":{}}`),
					Meta:               json.RawMessage(`{"io.modelcontextprotocol/clientInfo": {"name":"t","version":"1"}, "com.example/tenant":"caf\u00e9 <&>"}`),
					TraceParent:        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
					IdempotencyKey:     "7c0b5e9e-3f2a-4d1b-9c8e-2a6f1d3b4c5e",
					Status:             task.InputRequired,
					StatusMessage:      "waiting for the operator — ünïcode ✓",
					CreatedAt:          ms(123),
					UpdatedAt:          ms(98_765),
					TTL:                36*time.Hour + 250*time.Millisecond,
					PollInterval:       1500 * time.Millisecond,
					InputRequests:      raws("a", reqA, "key with spaces/and \"quotes\"", reqC),
					Answers:            raws("earlier", respA, "other", respB),
					Steps:              raws("query", json.RawMessage(`{"rows": [1, 2]}`), "step with \"quotes\"", json.RawMessage(`"x"`)),
					Result:             json.RawMessage(`{"content":[]}`),
					Error:              &task.Error{Code: -32000, Message: "boom <&>", Data: json.RawMessage(`{"why": "because"}`)},
					CancelRequested:    true,
					Attempt:            7,
					Losses:             4,
					LeaseOwner:         "worker-3/pid-42",
					LeaseExpiresAt:     ms(130_001),
				}
			},
		},
		{
			name: "Completed",
			rec: func() *task.Record {
				r := newTask("t1")
				r.Status = task.Completed
				r.Result = json.RawMessage(`{"content":[{"type":"text","text":"done"}],"isError":true}`)
				r.Attempt = 2
				r.Answers = raws("a", respA)
				return r
			},
		},
		{
			name: "FailedWithoutData",
			rec: func() *task.Record {
				r := newTask("t1")
				r.Status = task.Failed
				r.Error = &task.Error{Code: task.CodeInternalError, Message: "worker lost"}
				return r
			},
		},
		{
			name: "NilJSON",
			rec: func() *task.Record {
				r := newTask("t1")
				r.Args = nil
				r.ClientCapabilities = nil
				return r
			},
		},
		{
			// Empty maps and JSON values may come back nil.
			name: "EmptyValues",
			rec: func() *task.Record {
				r := newTask("t1")
				r.Args = json.RawMessage{}
				r.Result = json.RawMessage{}
				r.InputRequests = map[string]json.RawMessage{}
				r.Answers = map[string]json.RawMessage{}
				return r
			},
		},
		{
			// Times compare Equal whatever their location.
			name: "NonUTCTimes",
			rec: func() *task.Record {
				r := newTask("t1")
				tz := time.FixedZone("UTC+5:30", 5*3600+1800)
				r.CreatedAt = ms(5).In(tz)
				r.UpdatedAt = ms(6).In(tz)
				r.LeaseOwner = "w"
				r.Attempt = 1
				r.LeaseExpiresAt = ms(7).In(tz)
				return r
			},
		},
		{
			name: "TimesBefore1970",
			rec: func() *task.Record {
				r := newTask("t1")
				r.CreatedAt = time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
				r.UpdatedAt = r.CreatedAt
				return r
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			r := tt.rec()
			want := r.Clone()
			create(t, s, r)
			wantStored(t, s, want)
		})
	}
}

// testTraceParentKept checks that TraceParent, set at creation, survives
// every later write: the worker that runs the task, on any process and
// after a crash, reads it to continue the creator's trace.
func testTraceParentKept(t *testing.T, f factory) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := context.Background()
	tests := []struct {
		name  string
		write func(t *testing.T, s store.Store, id string)
	}{
		{"Claim", func(t *testing.T, s store.Store, id string) { claim(t, s, "w1", at(time.Second)) }},
		{"Heartbeat", func(t *testing.T, s store.Store, id string) {
			c := claim(t, s, "w1", at(time.Second))
			if _, err := heartbeat(ctx, s, fence(c, at(2*time.Second)), at(lease)); err != nil {
				t.Fatalf("Heartbeat: %v", err)
			}
		}},
		{"SetStatusMessage", func(t *testing.T, s store.Store, id string) {
			c := claim(t, s, "w1", at(time.Second))
			if err := s.SetStatusMessage(ctx, store.StatusMessageParams{FenceParams: fence(c, at(2*time.Second)), StatusMessage: "busy"}); err != nil {
				t.Fatalf("SetStatusMessage: %v", err)
			}
		}},
		{"RequestInputAnswer", func(t *testing.T, s store.Store, id string) {
			c := claim(t, s, "w1", at(time.Second))
			requestInput(t, s, c, at(2*time.Second), raws("a", reqA))
			wantKeys(t, "Answer", answer(t, s, id, at(3*time.Second), raws("a", respA)), "a")
		}},
		{"ReleaseReclaim", func(t *testing.T, s store.Store, id string) {
			c := claim(t, s, "w1", at(time.Second))
			if err := s.Release(ctx, fence(c, at(2*time.Second))); err != nil {
				t.Fatalf("Release: %v", err)
			}
			claim(t, s, "w2", at(3*time.Second))
		}},
		{"LostAndReclaimed", func(t *testing.T, s store.Store, id string) {
			claim(t, s, "w1", at(time.Second))
			claim(t, s, "w2", at(time.Second+lease))
		}},
		{"Finish", func(t *testing.T, s store.Store, id string) {
			c := claim(t, s, "w1", at(time.Second))
			if err := s.Finish(ctx, store.FinishParams{FenceParams: fence(c, at(2*time.Second)), Status: task.Completed, Result: json.RawMessage(`{}`)}); err != nil {
				t.Fatalf("Finish: %v", err)
			}
		}},
		{"RequestCancel", func(t *testing.T, s store.Store, id string) {
			if _, err := s.RequestCancel(ctx, store.CancelParams{ID: id, Principal: alice, Now: at(time.Second), StatusMessage: "stop"}); err != nil {
				t.Fatalf("RequestCancel: %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			r := newTask("t1")
			r.TraceParent = tp
			create(t, s, r)
			if got := get(t, s, "t1").TraceParent; got != tp {
				t.Fatalf("after Create: TraceParent = %q, want %q", got, tp)
			}
			tt.write(t, s, "t1")
			if got := get(t, s, "t1").TraceParent; got != tp {
				t.Errorf("after %s: TraceParent = %q, want %q", tt.name, got, tp)
			}
		})
	}
}
