package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testRequestInput checks that a worker's input requests become outstanding,
// and that answered keys are answered from the store instead.
func testRequestInput(t *testing.T, f factory) {
	type state struct {
		outstanding map[string]json.RawMessage
		answers     map[string]json.RawMessage
	}
	tests := []struct {
		name string
		// prior runs before the request under test, at second 1 and 2.
		prior   func(t *testing.T, s store.Store, c store.Claimed)
		request map[string]json.RawMessage
		message string
		// withdraw is the request's Withdraw.
		withdraw []string
		// returned are the stored answers the request gets back.
		returned map[string]json.RawMessage
		// want is the state after the request; changed says whether the
		// request itself changed the task (status, message, UpdatedAt);
		// gone, whether it withdrew the last question (the message is
		// then cleared).
		want    state
		changed bool
		gone    bool
	}{
		{
			name:    "NewKeys",
			request: raws("a", reqA, "b", reqB),
			message: "need a and b",
			want:    state{outstanding: raws("a", reqA, "b", reqB)},
			changed: true,
		},
		{
			name:    "NewKeysKeepMessage",
			request: raws("a", reqA),
			want:    state{outstanding: raws("a", reqA)},
			changed: true,
		},
		{
			name: "RepeatedIsIdempotent",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
			},
			request: raws("a", reqA),
			message: "asked again",
			want:    state{outstanding: raws("a", reqA)},
		},
		{
			name: "OutstandingKeyKeepsFirstRequest",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
			},
			request: raws("a", reqC),
			want:    state{outstanding: raws("a", reqA)},
		},
		{
			name: "MoreKeys",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
			},
			request: raws("a", reqA, "b", reqB),
			message: "and b",
			want:    state{outstanding: raws("a", reqA, "b", reqB)},
			changed: true,
		},
		{
			name: "AnsweredKeysNotAskedAgain",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
				answer(t, s, "t1", at(2*time.Second), raws("a", respA))
			},
			request:  raws("a", reqA),
			message:  "asked again",
			returned: raws("a", respA),
			want:     state{answers: raws("a", respA)},
		},
		{
			name: "AnsweredAndNewKeys",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
				answer(t, s, "t1", at(2*time.Second), raws("a", respA))
			},
			request:  raws("a", reqA, "b", reqB),
			message:  "need b",
			returned: raws("a", respA),
			want:     state{outstanding: raws("b", reqB), answers: raws("a", respA)},
			changed:  true,
		},
		{
			name:    "NoKeys",
			request: map[string]json.RawMessage{},
			message: "nothing",
		},
		{
			name: "WithdrawOne",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA, "b", reqB))
			},
			withdraw: []string{"a"},
			want:     state{outstanding: raws("b", reqB)},
			changed:  true,
		},
		{
			name: "WithdrawLast",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
			},
			withdraw: []string{"a", "never-asked"},
			changed:  true,
			gone:     true,
		},
		{
			name: "WithdrawAnsweredKeepsAnswer",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
				answer(t, s, "t1", at(2*time.Second), raws("a", respA))
			},
			withdraw: []string{"a"},
			want:     state{answers: raws("a", respA)},
		},
		{
			name: "WithdrawAndAsk",
			prior: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
			},
			withdraw: []string{"a"},
			request:  raws("b", reqB),
			message:  "b instead",
			want:     state{outstanding: raws("b", reqB)},
			changed:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			create(t, s, newTask("t1"))
			c := claim(t, s, "w1", at(0))
			if tt.prior != nil {
				tt.prior(t, s, c)
			}
			before := get(t, s, "t1")

			now := at(5 * time.Second)
			got, err := s.RequestInput(context.Background(), store.RequestInputParams{FenceParams: fence(c, now), Requests: tt.request, StatusMessage: tt.message, Withdraw: tt.withdraw})
			if err != nil {
				t.Fatalf("RequestInput: %v", err)
			}
			wantRaws(t, "returned answers", got, tt.returned)

			want := before.Clone()
			want.InputRequests, want.Answers = tt.want.outstanding, tt.want.answers
			want.Status = task.Working
			if len(tt.want.outstanding) > 0 {
				want.Status = task.InputRequired
			}
			if tt.changed {
				want.UpdatedAt = now
				if tt.message != "" {
					want.StatusMessage = tt.message
				}
			}
			if tt.gone {
				want.StatusMessage = ""
			}
			wantStored(t, s, want)
		})
	}
}

// testAnswer checks how answers meet the outstanding input requests.
// errBadAnswer is what the AnswerChecks of testAnswer refuse with.
var errBadAnswer = errors.New("storetest: bad answer")

func testAnswer(t *testing.T, f factory) {
	now := at(10 * time.Second)
	tests := []struct {
		name string
		// setup brings task t1 (TTL 1h, claimed at t0 by w1) into its state
		// before the answer; nil asks for a and b.
		setup     func(t *testing.T, s store.Store, c store.Claimed)
		id        string // default t1
		principal string // default alice
		now       time.Time
		responses map[string]json.RawMessage
		check     store.AnswerCheck
		err       error
		accepted  []string
		// outstanding and answers are the state after; nil status means no change at all.
		outstanding map[string]json.RawMessage
		answers     map[string]json.RawMessage
		status      task.Status
	}{
		{
			name:        "Partial",
			responses:   raws("a", respA),
			accepted:    []string{"a"},
			outstanding: raws("b", reqB),
			answers:     raws("a", respA),
			status:      task.InputRequired,
		},
		{
			name:      "Last",
			responses: raws("a", respA, "b", respB),
			accepted:  []string{"a", "b"},
			answers:   raws("a", respA, "b", respB),
			status:    task.Working,
		},
		{
			name: "LastAfterPartial",
			setup: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA, "b", reqB))
				answer(t, s, "t1", at(2*time.Second), raws("a", respA))
			},
			responses: raws("b", respB),
			accepted:  []string{"b"},
			answers:   raws("a", respA, "b", respB),
			status:    task.Working,
		},
		{
			name:        "UnknownKeysIgnored",
			responses:   raws("a", respA, "zzz", respB),
			accepted:    []string{"a"},
			outstanding: raws("b", reqB),
			answers:     raws("a", respA),
			status:      task.InputRequired,
		},
		{
			name:      "OnlyUnknownKeys",
			responses: raws("zzz", respB),
		},
		{
			name:      "NoResponses",
			responses: map[string]json.RawMessage{},
		},
		{
			name: "AnsweredKeyNotOverwritten",
			setup: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA, "b", reqB))
				answer(t, s, "t1", at(2*time.Second), raws("a", respA))
			},
			responses: raws("a", respB),
		},
		{
			name: "WorkingTaskNoOp",
			setup: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
				answer(t, s, "t1", at(2*time.Second), raws("a", respA))
			},
			responses: raws("a", respB, "b", respB),
		},
		{
			name:      "NeverAskedNoOp",
			setup:     func(*testing.T, store.Store, store.Claimed) {},
			responses: raws("a", respA),
		},
		{
			name: "TerminalTaskNoOp",
			setup: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA))
				err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, at(2*time.Second)), Status: task.Failed, Error: &task.Error{Code: 1, Message: "x"}})
				if err != nil {
					t.Fatalf("Finish: %v", err)
				}
			},
			responses: raws("a", respA),
		},
		{
			// Answers need no lease: the worker may have let the task go.
			name: "Unleased",
			setup: func(t *testing.T, s store.Store, c store.Claimed) {
				requestInput(t, s, c, at(time.Second), raws("a", reqA, "b", reqB))
				if err := s.Release(context.Background(), fence(c, at(2*time.Second))); err != nil {
					t.Fatalf("Release: %v", err)
				}
			},
			responses: raws("a", respA, "b", respB),
			accepted:  []string{"a", "b"},
			answers:   raws("a", respA, "b", respB),
			status:    task.Working,
		},
		{
			// A refused answer stores nothing, not even the valid ones of
			// the same update: the key stays open.
			name:      "CheckRefuses",
			responses: raws("a", respA, "b", respB),
			check: func(key string, req, resp json.RawMessage) error {
				if key == "b" && string(req) == string(reqB) && string(resp) == string(respB) {
					return errBadAnswer
				}
				return nil
			},
			err: errBadAnswer,
		},
		{
			// The check sees each outstanding key with its request, and
			// never a key that is not outstanding.
			name:      "CheckAccepts",
			responses: raws("a", respA, "zzz", respB),
			check: func(key string, req, resp json.RawMessage) error {
				if key != "a" || string(req) != string(reqA) || string(resp) != string(respA) {
					return fmt.Errorf("check(%q, %s, %s)", key, req, resp)
				}
				return nil
			},
			accepted:    []string{"a"},
			outstanding: raws("b", reqB),
			answers:     raws("a", respA),
			status:      task.InputRequired,
		},
		{
			name:      "WrongPrincipal",
			principal: bob,
			responses: raws("a", respA),
			err:       store.ErrNotFound,
		},
		{
			name:      "UnknownID",
			id:        "t2",
			responses: raws("a", respA),
			err:       store.ErrNotFound,
		},
		{
			name:      "TTLElapsed",
			now:       at(time.Hour),
			responses: raws("a", respA),
			err:       store.ErrNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := f.open(t)
			r := newTask("t1")
			r.TTL = time.Hour
			create(t, s, r)
			c := claim(t, s, "w1", at(0))
			if tt.setup != nil {
				tt.setup(t, s, c)
			} else {
				requestInput(t, s, c, at(time.Second), raws("a", reqA, "b", reqB))
			}
			before := get(t, s, "t1")

			p := store.AnswerParams{ID: "t1", Principal: alice, Now: now, Responses: tt.responses, Check: tt.check}
			if tt.id != "" {
				p.ID = tt.id
			}
			if tt.principal != "" {
				p.Principal = tt.principal
			}
			if !tt.now.IsZero() {
				p.Now = tt.now
			}
			accepted, err := s.Answer(context.Background(), p)
			if tt.err != nil {
				wantErr(t, "Answer", err, tt.err)
				var ae *store.AnswerError
				if tt.check != nil && (!errors.As(err, &ae) || ae.Key != "b") {
					t.Errorf("Answer: error %v, want an *AnswerError for key b", err)
				}
			} else if err != nil {
				t.Fatalf("Answer: %v", err)
			}
			wantKeys(t, "accepted", accepted, tt.accepted...)

			want := before.Clone()
			if tt.status != "" {
				want.Status = tt.status
				want.InputRequests = tt.outstanding
				want.Answers = tt.answers
				want.UpdatedAt = p.Now
			}
			wantStored(t, s, want)
		})
	}
}
