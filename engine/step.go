package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Step runs fn as the durable step name of the task and returns its
// result. The first time a task reaches a step, fn runs and its result is
// stored with the task (one store write, fenced by the run's attempt),
// then returned. When the handler runs again (after a lost worker, a
// graceful release, or a wait for input that gave up its goroutine), Step
// returns the stored result and does not call fn.
//
// The guarantee is at-least-once: a step whose result was stored never
// runs again for the task; a step that ran but whose result was not
// stored (the process crashed in between, or the lease was lost) runs
// again on the next run. A store error is retried until the result is
// stored or the run stops, as for the run's other writes; Step then
// returns the error that stopped the run, which the handler should return.
// An error from fn is returned and not stored, so the step runs again
// next time. Give fn work that is safe to repeat, or make it idempotent
// (an idempotency key derived from [Run.ID] and the name).
//
// Names are unique within a task: each names one piece of work, like an
// input key; a name used twice returns the first result. A result is JSON
// of at most task.MaxStepBytes, and a task's steps hold at most
// task.MaxStepsBytes in all: a larger result fails the step with an error
// wrapping task.ErrStepTooLarge that names the step and the bound (store a
// reference to bulk data, not the data). A run outside a task (inline)
// just calls fn. Step is safe to call from several goroutines, with
// different names.
//
// [Step] is the typed form.
func (r *Run) Step(ctx context.Context, name string, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if r.e == nil {
		return fn(ctx)
	}
	if err := task.CheckStep(name, json.RawMessage(`null`)); err != nil {
		return nil, fmt.Errorf("engine: step: %w", err)
	}
	r.mu.Lock()
	stored, ok := r.rec.Steps[name]
	r.mu.Unlock()
	if ok {
		spanStep(r.x.span, name, true)
		return stored, nil
	}
	res, err := fn(ctx)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		res = json.RawMessage(`null`)
	}
	if err := task.CheckStep(name, res); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// A store error is retried, as for the run's other writes, until the
	// result is stored or the run stops; a result the store's rules
	// refuse (too large for the task's steps) is not.
	var refused error
	err = r.storeCall(ctx, "save step", func(ctx context.Context) (err error) {
		stored, err = r.x.st.SaveStep(ctx, store.StepParams{FenceParams: r.fence(), Name: name, Result: res})
		if errors.Is(err, task.ErrStepTooLarge) || errors.Is(err, task.ErrInvalidStep) {
			refused, err = err, nil
		}
		return err
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return nil, fmt.Errorf("engine: step %q: %w", name, err)
	}
	r.mu.Lock()
	if r.rec.Steps == nil {
		r.rec.Steps = map[string]json.RawMessage{}
	}
	r.rec.Steps[name] = stored
	r.mu.Unlock()
	spanStep(r.x.span, name, false)
	return stored, nil
}

// Step is [Run.Step] for a result of type T, stored as its JSON. Every
// run, the first included, gets the value decoded from the stored JSON,
// so a re-run sees exactly what the first run saw.
func Step[T any](ctx context.Context, run *Run, name string, fn func(context.Context) (T, error)) (T, error) {
	var v T
	raw, err := run.Step(ctx, name, func(ctx context.Context) (json.RawMessage, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("engine: step %q: encode result: %w", name, err)
		}
		return b, nil
	})
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("engine: step %q: decode the stored result as %T: %w", name, v, err)
	}
	return v, nil
}
