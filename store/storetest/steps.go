package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// saveStep stores a step of the task held by c at now and fails t on error.
func saveStep(t *testing.T, s store.Store, c store.Claimed, now time.Time, name string, result json.RawMessage) json.RawMessage {
	t.Helper()
	got, err := s.SaveStep(context.Background(), store.StepParams{FenceParams: fence(c, now), Name: name, Result: result})
	if err != nil {
		t.Fatalf("SaveStep(%s): %v", name, err)
	}
	return got
}

// testSteps checks durable steps: a step is stored with its task, byte
// for byte and once; a re-claim returns it; the total is bounded.
func testSteps(t *testing.T, f factory) {
	query := json.RawMessage(`{"rows": [1, 2, 3]}`)
	t.Run("Store", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		want := get(t, s, "t1")
		if got := saveStep(t, s, c, at(time.Second), "query", query); string(got) != string(query) {
			t.Errorf("SaveStep returned %s, want %s", got, query)
		}
		saveStep(t, s, c, at(2*time.Second), "count", json.RawMessage(`3`))[0] = '4' // a copy
		want.Steps = raws("query", query, "count", json.RawMessage(`3`))
		wantStored(t, s, want) // UpdatedAt unchanged: a step is not on the wire
	})
	t.Run("StoredOnce", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		saveStep(t, s, c, at(time.Second), "query", query)
		if got := saveStep(t, s, c, at(2*time.Second), "query", json.RawMessage(`"other"`)); string(got) != string(query) {
			t.Errorf("second SaveStep of the name returned %s, want the first result %s", got, query)
		}
		wantRaws(t, "Steps", get(t, s, "t1").Steps, raws("query", query))
	})
	t.Run("Replay", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c1 := claim(t, s, "w1", at(0))
		saveStep(t, s, c1, at(time.Second), "query", query)
		// w1 is lost; w2 claims after the lease and finds the step.
		c2 := claim(t, s, "w2", at(lease+time.Second))
		wantRaws(t, "claimed Steps", c2.Steps, raws("query", query))
		saveStep(t, s, c2, at(lease+2*time.Second), "write", json.RawMessage(`true`))
		wantRaws(t, "Steps", get(t, s, "t1").Steps, raws("query", query, "write", json.RawMessage(`true`)))
	})
	t.Run("Fenced", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c1 := claim(t, s, "w1", at(0))
		claim(t, s, "w2", at(lease)) // w1's lease ended
		before := get(t, s, "t1")
		_, err := s.SaveStep(context.Background(), store.StepParams{FenceParams: fence(c1, at(lease+time.Second)), Name: "query", Result: query})
		wantErr(t, "SaveStep of a lost lease", err, store.ErrLeaseLost)
		wantStored(t, s, before)
	})
	t.Run("Size", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		big := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }
		// Four steps at the bound per step fill the bound in all but for
		// their names.
		for _, name := range []string{"a", "b", "c"} {
			saveStep(t, s, c, at(time.Second), name, big(task.MaxStepBytes))
		}
		before := get(t, s, "t1")
		_, err := s.SaveStep(context.Background(), store.StepParams{FenceParams: fence(c, at(2*time.Second)), Name: "d", Result: big(task.MaxStepBytes)})
		wantErr(t, "SaveStep past MaxStepsBytes", err, task.ErrStepTooLarge)
		if !strings.Contains(err.Error(), `"d"`) || !strings.Contains(err.Error(), "MaxStepsBytes") {
			t.Errorf("error %q does not name the step and the bound", err)
		}
		wantStored(t, s, before)
		// One that fits is still stored, and the task's other writes work.
		saveStep(t, s, c, at(3*time.Second), "d", big(task.MaxStepBytes-3*len("a")-1))
		_, err = s.SaveStep(context.Background(), store.StepParams{FenceParams: fence(c, at(2*time.Second)), Name: "e", Result: json.RawMessage(`1`)})
		wantErr(t, "SaveStep at MaxStepsBytes", err, task.ErrStepTooLarge)
		if n := task.StepsBytes(get(t, s, "t1").Steps); n != task.MaxStepsBytes {
			t.Errorf("steps hold %d bytes, want %d", n, task.MaxStepsBytes)
		}
		if err := s.SetStatusMessage(context.Background(), store.StatusMessageParams{FenceParams: fence(c, at(4*time.Second)), StatusMessage: "still here"}); err != nil {
			t.Fatalf("SetStatusMessage after a refused step: %v", err)
		}
	})
	t.Run("TooLargeOne", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, newTask("t1"))
		c := claim(t, s, "w1", at(0))
		before := get(t, s, "t1")
		over := json.RawMessage(`"` + strings.Repeat("x", task.MaxStepBytes-1) + `"`)
		_, err := s.SaveStep(context.Background(), store.StepParams{FenceParams: fence(c, at(time.Second)), Name: "big", Result: over})
		wantErr(t, "SaveStep past MaxStepBytes", err, task.ErrStepTooLarge)
		wantStored(t, s, before)
		_, err = s.SaveStep(context.Background(), store.StepParams{FenceParams: fence(c, at(time.Second)), Name: "bad", Result: json.RawMessage(`{`)})
		if !errors.Is(err, task.ErrInvalidStep) {
			t.Errorf("SaveStep of invalid JSON: error = %v, want task.ErrInvalidStep", err)
		}
		wantStored(t, s, before)
	})
}

// testCreateClaimed checks a record created already leased to its
// creator (the engine's create-with-claim).
func testCreateClaimed(t *testing.T, f factory) {
	leased := func(id string) *task.Record {
		r := newTask(id)
		store.ApplyClaim(r, store.ClaimParams{Owner: "creator", Now: t0, LeaseExpiresAt: at(lease)})
		return r
	}
	t.Run("Held", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		r := leased("t1")
		create(t, s, r)
		wantStored(t, s, r)
		if len(get(t, s, "t1").History) != 1 {
			t.Errorf("history = %+v, want the claimed event", get(t, s, "t1").History)
		}
		// Nobody else claims it while the lease holds.
		if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(time.Second), LeaseExpiresAt: at(lease)}); len(ids) != 0 {
			t.Errorf("Claim of a task leased at creation = %v, want none", ids)
		}
		// The creator's writes at attempt 1 are accepted.
		c := store.Claimed{Record: r}
		saveStep(t, s, c, at(2*time.Second), "query", json.RawMessage(`1`))
		if err := s.Finish(context.Background(), store.FinishParams{FenceParams: fence(c, at(3*time.Second)), Status: task.Completed, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatalf("Finish: %v", err)
		}
	})
	t.Run("LostCreator", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		create(t, s, leased("t1"))
		c := claim(t, s, "w2", at(lease))
		if !c.Lost || c.Attempt != 2 || c.Losses != 1 {
			t.Errorf("claim after the creator's lease ended: Lost %v, Attempt %d, Losses %d; want true, 2, 1", c.Lost, c.Attempt, c.Losses)
		}
	})
	// A create may carry its handler's first write (the engine folds it
	// in): the task is stored as that write left it.
	t.Run("WithQuestion", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		r := leased("t1")
		c := store.Claimed{Record: r.Clone()}
		if _, _, err := store.ApplyRequestInput(r, store.RequestInputParams{FenceParams: fence(c, t0), Requests: raws("a", reqA), StatusMessage: "a?", Suspend: true}); err != nil {
			t.Fatal(err)
		}
		create(t, s, r)
		wantStored(t, s, r)
		if got := get(t, s, "t1"); got.Status != task.InputRequired || got.LeaseOwner != "" {
			t.Errorf("stored %s, owner %q; want input_required, suspended", got.Status, got.LeaseOwner)
		}
		if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(time.Second), LeaseExpiresAt: at(lease)}); len(ids) != 0 {
			t.Errorf("Claim of a task created suspended = %v, want none until answered", ids)
		}
		answer(t, s, "t1", at(2*time.Second), raws("a", respA))
		if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(3 * time.Second), LeaseExpiresAt: at(lease)}); len(ids) != 1 {
			t.Errorf("Claim after the answer = %v, want [t1]", ids)
		}
	})
	t.Run("Finished", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		r := leased("t1")
		c := store.Claimed{Record: r.Clone()}
		if err := store.ApplyFinish(r, store.FinishParams{FenceParams: fence(c, t0), Status: task.Completed, Result: json.RawMessage(`{"content": []}`)}); err != nil {
			t.Fatal(err)
		}
		create(t, s, r)
		wantStored(t, s, r)
	})
	t.Run("DuplicateKey", func(t *testing.T) {
		t.Parallel()
		s := f.open(t)
		first := newTask("t1")
		first.IdempotencyKey = "k"
		create(t, s, first)
		dup := leased("t2")
		dup.IdempotencyKey = "k"
		var de *store.DuplicateError
		if err := s.Create(context.Background(), dup); !errors.As(err, &de) || de.Task.ID != "t1" {
			t.Fatalf("Create of a leased duplicate: error = %v, want a *store.DuplicateError naming t1", err)
		}
		wantStored(t, s, first) // still queued, for anyone
		if _, err := s.Get(context.Background(), "t2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(t2) after a duplicate create: error = %v, want ErrNotFound", err)
		}
		if ids := claimIDs(t, s, store.ClaimParams{Owner: "w2", Now: at(time.Second), LeaseExpiresAt: at(lease)}); len(ids) != 1 || ids[0] != "t1" {
			t.Errorf("Claim = %v, want [t1]", ids)
		}
	})
}
