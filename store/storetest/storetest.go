// Package storetest is the contract test suite that every store.Store backend must pass.
//
// A backend's own test runs the suite with a factory:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
//	}
//
// A new behaviour of [store.Store] lands here first, so that every backend
// gets it at once; backend tests cover only what is backend-specific.
//
// # The contract the suite pins
//
// Beyond the method docs of [store.Store], the suite holds every backend to
// these rules, which the reference backend (store/memory) and the shared
// Apply functions of package store define:
//
//   - Round trip. Get returns every field that Create stored. Times compare
//     Equal at millisecond precision: a backend may drop sub-millisecond
//     digits and the location, so callers pass millisecond times. TTL and
//     PollInterval are kept in whole milliseconds. JSON values (Args,
//     ClientCapabilities, Result, Error.Data, and the values of
//     InputRequests, Answers and Steps) come back byte for byte; a nil and an empty
//     JSON value are the same, and so are a nil and an empty map. The suite's
//     map values are valid JSON without surrounding whitespace, which a
//     backend that stores the maps as JSON (sqlite) may require.
//   - Copies. Create stores a copy of its argument, and every method returns
//     copies: changing them changes nothing stored.
//   - TTL. Get ignores the TTL: an expired task stays readable until
//     DeleteExpired removes it (the engine hides it). Every other method
//     treats an expired task as gone: Claim skips it, worker writes fail with
//     ErrLeaseLost, Answer and RequestCancel return ErrNotFound. A task
//     expires at exactly CreatedAt+TTL. TTL 0 never expires.
//   - Claim. Limit <= 0 means no limit. Nil Tools means every tool; a
//     non-nil empty Tools matches none. Tasks are taken oldest CreatedAt
//     first, ties by id, and returned in that order. A lease that ends at
//     exactly Now has expired. Lost is true only when the task had a lease
//     owner whose lease expired (not after Release), and such a claim, and
//     no other write, increments Losses.
//   - Fencing. Worker writes (Release, SetStatusMessage, RequestInput,
//     SaveStep, Finish) fail with ErrLeaseLost, and HeartbeatMany reports
//     the lease Lost, changing nothing, when
//     the id is unknown, the task is terminal or expired, nobody holds it, or
//     it is held at another Attempt. A lease that expired but that nobody
//     claimed again still fences by Attempt: its holder's writes succeed.
//   - UpdatedAt is set to Now by the writes that change what tasks/get
//     shows (status, status message, input requests, answers). Claim,
//     HeartbeatMany, Release and a cancel request that only sets
//     CancelRequested leave it alone.
//   - Answer returns the accepted keys in any order; it is a no-op (nil
//     keys, nil error) on a task that is not input_required.
//   - Finish with a non-terminal status returns a *task.TransitionError and
//     changes nothing. An empty StatusMessage keeps the current message.
//   - Steps. SaveStep stores a step once (the first result of a name
//     stays), leaves UpdatedAt alone, and refuses a result that would make
//     the task's steps pass task.MaxStepsBytes with task.ErrStepTooLarge,
//     changing nothing. A Claim returns the steps stored by earlier
//     attempts.
//   - Claimed at creation. Create stores a record that is already leased
//     (Attempt 1, LeaseOwner, LeaseExpiresAt, its claimed history event) as
//     it is: nobody else can claim it until the lease ends, its owner's
//     writes at Attempt 1 are accepted, and a create that is a duplicate
//     of an idempotency key writes nothing, leased or not.
//   - DeleteExpired: limit <= 0 means no limit.
//   - Idempotency keys. A record's IdempotencyKey is unique per principal
//     among tasks that have not expired at the new record's CreatedAt,
//     whatever their status: Create of a record whose key such a task
//     holds writes nothing and returns a *store.DuplicateError with that
//     task, also when creates race. An expired task gives its key up.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Run runs the contract suite against stores made by newStore; each subtest gets a fresh, empty store.
//
// Subtests run in parallel, so newStore must be safe to call concurrently.
// Run closes every store it gets when its subtest ends.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	f := factory(newStore)
	t.Run("CreateGet", func(t *testing.T) { testCreateGet(t, f) })
	t.Run("Claim", func(t *testing.T) { testClaim(t, f) })
	t.Run("Lease", func(t *testing.T) { testLease(t, f) })
	t.Run("Losses", func(t *testing.T) { testLosses(t, f) })
	t.Run("Fence", func(t *testing.T) { testFence(t, f) })
	t.Run("RequestInput", func(t *testing.T) { testRequestInput(t, f) })
	t.Run("Answer", func(t *testing.T) { testAnswer(t, f) })
	t.Run("Finish", func(t *testing.T) { testFinish(t, f) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, f) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, f) })
	t.Run("Count", func(t *testing.T) { testCount(t, f) })
	t.Run("List", func(t *testing.T) { testList(t, f) })
	t.Run("IdempotencyKey", func(t *testing.T) { testIdempotencyKey(t, f) })
	t.Run("History", func(t *testing.T) { testHistory(t, f) })
	t.Run("Suspend", func(t *testing.T) { testSuspend(t, f) })
	t.Run("SuspendOnRequest", func(t *testing.T) { testSuspendOnRequest(t, f) })
	t.Run("HeartbeatMany", func(t *testing.T) { testHeartbeatMany(t, f) })
	t.Run("Steps", func(t *testing.T) { testSteps(t, f) })
	t.Run("CreateClaimed", func(t *testing.T) { testCreateClaimed(t, f) })
	t.Run("Listen", func(t *testing.T) { testListen(t, f) })
}

// factory makes a fresh store for one subtest.
type factory func(t *testing.T) store.Store

// open returns a fresh store that is closed when t ends.
func (f factory) open(t *testing.T) store.Store {
	t.Helper()
	s := f(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// Fixed times: the suite never reads the clock.
var t0 = time.Date(2026, time.July, 28, 10, 30, 0, 0, time.UTC)

// at returns the time d after t0.
func at(d time.Duration) time.Time { return t0.Add(d) }

const (
	alice = "alice"
	bob   = "bob"
	// lease is the lease duration the suite's workers take.
	lease = 30 * time.Second
)

// newTask returns a queued task: working, never claimed, created at t0 by
// alice for the tool "echo", with no TTL.
func newTask(id string) *task.Record {
	return &task.Record{
		ID:                 id,
		Principal:          alice,
		Tool:               "echo",
		Args:               json.RawMessage(`{"text":"hi"}`),
		ClientCapabilities: json.RawMessage(`{"elicitation":{}}`),
		Status:             task.Working,
		CreatedAt:          t0,
		UpdatedAt:          t0,
	}
}

func create(t *testing.T, s store.Store, rs ...*task.Record) {
	t.Helper()
	for _, r := range rs {
		if err := s.Create(context.Background(), r); err != nil {
			t.Fatalf("Create(%s): %v", r.ID, err)
		}
	}
}

func get(t *testing.T, s store.Store, id string) *task.Record {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

// claim claims the one claimable task in s for owner at now, with a lease
// of [lease], and fails the test if there is none or more than one.
func claim(t *testing.T, s store.Store, owner string, now time.Time) store.Claimed {
	t.Helper()
	cs, err := s.Claim(context.Background(), store.ClaimParams{
		Owner: owner, Now: now, LeaseExpiresAt: now.Add(lease),
	})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if len(cs) != 1 {
		t.Fatalf("Claim returned %d tasks, want 1", len(cs))
	}
	return cs[0]
}

// claimIDs claims with p and returns the ids claimed, in order.
func claimIDs(t *testing.T, s store.Store, p store.ClaimParams) []string {
	t.Helper()
	cs, err := s.Claim(context.Background(), p)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	ids := []string{}
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

// fence returns the FenceParams of c at now.
func fence(c store.Claimed, now time.Time) store.FenceParams {
	return store.FenceParams{ID: c.ID, Attempt: c.Attempt, Now: now}
}

// heartbeat extends the lease p fences to expires with a HeartbeatMany of
// that one lease, and reports whether a cancel was requested;
// store.ErrLeaseLost if the lease is not held.
func heartbeat(ctx context.Context, s store.Store, p store.FenceParams, expires time.Time) (cancelRequested bool, err error) {
	sts, err := s.HeartbeatMany(ctx, store.HeartbeatManyParams{
		Leases: []store.Lease{{ID: p.ID, Attempt: p.Attempt}}, Now: p.Now, LeaseExpiresAt: expires,
	})
	switch {
	case err != nil:
		return false, err
	case len(sts) != 1:
		return false, fmt.Errorf("HeartbeatMany of one lease returned %d states", len(sts))
	case sts[0].Lost:
		return false, store.ErrLeaseLost
	}
	return sts[0].CancelRequested, nil
}

// requestInput asks for the keys of reqs on the task held by c, at now.
func requestInput(t *testing.T, s store.Store, c store.Claimed, now time.Time, reqs map[string]json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	answers, err := s.RequestInput(context.Background(), store.RequestInputParams{
		FenceParams: fence(c, now), Requests: reqs,
	})
	if err != nil {
		t.Fatalf("RequestInput: %v", err)
	}
	return answers
}

// answer answers for alice at now and returns the accepted keys, sorted.
func answer(t *testing.T, s store.Store, id string, now time.Time, resp map[string]json.RawMessage) []string {
	t.Helper()
	keys, err := s.Answer(context.Background(), store.AnswerParams{
		ID: id, Principal: alice, Now: now, Responses: resp,
	})
	if err != nil {
		t.Fatalf("Answer: %v", err)
	}
	slices.Sort(keys)
	return keys
}

// Input requests and answers the suite uses. The values are JSON with
// inner whitespace, which a backend must keep byte for byte.
var (
	reqA  = json.RawMessage(`{"method":"elicitation/create", "params":{"message":"a?"}}`)
	reqB  = json.RawMessage(`{"method":"elicitation/create","params":{"message":"b?"}}`)
	reqC  = json.RawMessage(`{"method":"sampling/createMessage","params":{}}`)
	respA = json.RawMessage(`{"action":"accept", "content":{"x":1}}`)
	respB = json.RawMessage(`{"action":"decline"}`)
)

// raws builds a map of JSON values from key, value pairs.
func raws(kv ...any) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(json.RawMessage)
	}
	return m
}

// wantErr fails t unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error = %v, want %v", what, err, target)
	}
}

// wantRecord fails t if got differs from want in any field.
func wantRecord(t *testing.T, what string, got, want *task.Record) {
	t.Helper()
	if d := diffRecords(got, want); len(d) > 0 {
		t.Errorf("%s: record differs:\n\t%s", what, strings.Join(d, "\n\t"))
	}
}

// wantStored fails t unless the stored task equals want.
func wantStored(t *testing.T, s store.Store, want *task.Record) {
	t.Helper()
	wantRecord(t, "Get", get(t, s, want.ID), want)
	r, err := s.GetFor(context.Background(), want.ID, want.Principal)
	if err != nil {
		t.Fatalf("GetFor(%s, %s): %v", want.ID, want.Principal, err)
	}
	wantRecord(t, "GetFor", r, want)
}

// wantKeys fails t unless the sorted keys equal want.
func wantKeys(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	got = slices.Sorted(slices.Values(got))
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// wantRaws fails t unless got holds exactly want's keys and bytes.
func wantRaws(t *testing.T, what string, got, want map[string]json.RawMessage) {
	t.Helper()
	if !equalRaws(got, want) {
		t.Errorf("%s = %s, want %s", what, showRaws(got), showRaws(want))
	}
}

// diffRecords lists the fields in which got and want differ, under the
// suite's equality: times by Equal, JSON by bytes (nil == empty), maps by
// keys and bytes (nil == empty).
func diffRecords(got, want *task.Record) []string {
	var d []string
	add := func(field string, g, w any) {
		d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w))
	}
	if got == nil || want == nil {
		if got != want {
			add("record", got, want)
		}
		return d
	}
	str := func(field, g, w string) {
		if g != w {
			add(field, fmt.Sprintf("%q", g), fmt.Sprintf("%q", w))
		}
	}
	raw := func(field string, g, w json.RawMessage) {
		if !bytes.Equal(g, w) {
			add(field, fmt.Sprintf("%q", g), fmt.Sprintf("%q", w))
		}
	}
	tm := func(field string, g, w time.Time) {
		if !g.Equal(w) {
			add(field, g, w)
		}
	}
	str("ID", got.ID, want.ID)
	str("Principal", got.Principal, want.Principal)
	str("Tool", got.Tool, want.Tool)
	raw("Args", got.Args, want.Args)
	raw("ClientCapabilities", got.ClientCapabilities, want.ClientCapabilities)
	raw("Meta", got.Meta, want.Meta)
	str("TraceParent", got.TraceParent, want.TraceParent)
	str("IdempotencyKey", got.IdempotencyKey, want.IdempotencyKey)
	str("Status", string(got.Status), string(want.Status))
	str("StatusMessage", got.StatusMessage, want.StatusMessage)
	tm("CreatedAt", got.CreatedAt, want.CreatedAt)
	tm("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	if got.TTL != want.TTL {
		add("TTL", got.TTL, want.TTL)
	}
	if got.PollInterval != want.PollInterval {
		add("PollInterval", got.PollInterval, want.PollInterval)
	}
	if !equalRaws(got.InputRequests, want.InputRequests) {
		add("InputRequests", showRaws(got.InputRequests), showRaws(want.InputRequests))
	}
	if !equalRaws(got.Answers, want.Answers) {
		add("Answers", showRaws(got.Answers), showRaws(want.Answers))
	}
	if !equalRaws(got.Steps, want.Steps) {
		add("Steps", showRaws(got.Steps), showRaws(want.Steps))
	}
	raw("Result", got.Result, want.Result)
	switch {
	case (got.Error == nil) != (want.Error == nil):
		add("Error", showError(got.Error), showError(want.Error))
	case got.Error != nil:
		if got.Error.Code != want.Error.Code || got.Error.Message != want.Error.Message ||
			!bytes.Equal(got.Error.Data, want.Error.Data) {
			add("Error", showError(got.Error), showError(want.Error))
		}
	}
	if got.CancelRequested != want.CancelRequested {
		add("CancelRequested", got.CancelRequested, want.CancelRequested)
	}
	if got.Attempt != want.Attempt {
		add("Attempt", got.Attempt, want.Attempt)
	}
	if got.Losses != want.Losses {
		add("Losses", got.Losses, want.Losses)
	}
	str("LeaseOwner", got.LeaseOwner, want.LeaseOwner)
	tm("LeaseExpiresAt", got.LeaseExpiresAt, want.LeaseExpiresAt)
	return d
}

func equalRaws(a, b map[string]json.RawMessage) bool {
	return maps.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

func showRaws(m map[string]json.RawMessage) string {
	if len(m) == 0 {
		return "{}"
	}
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%q", k, m[k])
	}
	return "{" + b.String() + "}"
}

func showError(e *task.Error) string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("{%d %q %q}", e.Code, e.Message, e.Data)
}
