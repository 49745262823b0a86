package task

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Bounds of a task's durable steps ([Record.Steps]). The record is read
// by every tasks/get of the task, so its steps are kept small: a step
// stores what a handler needs to skip work on a re-run (an id, a row
// count, a small summary), not bulk data.
const (
	// MaxStepBytes is the largest result JSON one step may store.
	MaxStepBytes = 256 << 10
	// MaxStepsBytes is the most bytes the steps of one task may store
	// in all, counting each step's name and result.
	MaxStepsBytes = 1 << 20
	// MaxStepName is the longest step name, in bytes.
	MaxStepName = 255
)

// CheckStep returns an error naming the step and the bound it breaks,
// or nil if a step of the name may store result: the name is 1 to
// MaxStepName bytes, and result is valid JSON of at most MaxStepBytes.
// The total, MaxStepsBytes, is the store's to check (see StepsBytes).
func CheckStep(name string, result json.RawMessage) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty; give each step of a handler a name of its own", ErrInvalidStep)
	case len(name) > MaxStepName:
		return fmt.Errorf("%w: name %.40q… is %d bytes, more than %d (task.MaxStepName)", ErrInvalidStep, name, len(name), MaxStepName)
	case len(result) > MaxStepBytes:
		return fmt.Errorf("%w: step %q returned %d bytes, more than %d (task.MaxStepBytes); store a reference to the data instead", ErrStepTooLarge, name, len(result), MaxStepBytes)
	case !json.Valid(result):
		return fmt.Errorf("%w: step %q returned invalid JSON: %.40q", ErrInvalidStep, name, result)
	}
	return nil
}

// ErrInvalidStep is the error of a step with no name, a name longer than
// MaxStepName, or a result that is not valid JSON.
var ErrInvalidStep = errors.New("invalid step")

// ErrStepTooLarge is the error of a step whose result breaks
// MaxStepBytes, or would make the task's steps break MaxStepsBytes.
var ErrStepTooLarge = errors.New("step result too large")

// StepsBytes returns the bytes that steps count against MaxStepsBytes:
// the length of each name and result.
func StepsBytes(steps map[string]json.RawMessage) int {
	n := 0
	for k, v := range steps {
		n += len(k) + len(v)
	}
	return n
}
