package task

import (
	"encoding/json"
	"testing"
	"time"
)

// TestCreateResult_AsCreated checks that a task's CreateTaskResult is the
// same whenever it is made: a create replayed by its idempotency key after
// the task moved on answers exactly as the first create did.
func TestCreateResult_AsCreated(t *testing.T) {
	created := time.Date(2026, 7, 28, 10, 30, 0, 0, time.UTC)
	r := &Record{ID: "AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA", Status: Working, CreatedAt: created, UpdatedAt: created, TTL: time.Hour, PollInterval: time.Second}
	first, _ := json.Marshal(r.CreateResult())
	r.Status, r.StatusMessage, r.UpdatedAt, r.Result = Completed, "done", created.Add(time.Minute), json.RawMessage(`{}`)
	later, _ := json.Marshal(r.CreateResult())
	if string(first) != string(later) {
		t.Errorf("CreateResult changed with the task:\n first %s\n later %s", first, later)
	}
	const want = `{"resultType":"task","taskId":"AZrPm3kAAAAAAAAAAAAAAAAAAAAAAAAA","status":"working","createdAt":"2026-07-28T10:30:00.000Z","lastUpdatedAt":"2026-07-28T10:30:00.000Z","ttlMs":3600000,"pollIntervalMs":1000}`
	if string(first) != want {
		t.Errorf("CreateResult = %s\nwant %s", first, want)
	}
}
