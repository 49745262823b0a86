package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// columns are the columns of tasks that hold a task.Record, in the order of
// recordValues and scanRecord. expires_at is computed by SQLite.
const columns = `id, principal, tool, args, client_capabilities, status, status_message,
	created_at, updated_at, ttl_ms, poll_interval_ms, input_requests, answers,
	result, error, cancel_requested, attempt, lease_owner, lease_expires_at`

// marks are the placeholders of columns.
const marks = `?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`

const (
	selectSQL = `SELECT ` + columns + ` FROM tasks`
	getSQL    = selectSQL + ` WHERE id = ?`
	insertSQL = `INSERT INTO tasks (` + columns + `) VALUES (` + marks + `) ON CONFLICT (id) DO NOTHING`
	updateSQL = `UPDATE tasks SET (` + columns + `) = (` + marks + `) WHERE id = ?`
)

// recordValues returns the column values of r.
func recordValues(r *task.Record) ([]any, error) {
	inputRequests, err := encodeRaws(r.InputRequests)
	if err != nil {
		return nil, fmt.Errorf("input requests: %w", err)
	}
	answers, err := encodeRaws(r.Answers)
	if err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	rpcErr, err := encodeError(r.Error)
	if err != nil {
		return nil, fmt.Errorf("error: %w", err)
	}
	cancel := 0
	if r.CancelRequested {
		cancel = 1
	}
	return []any{
		r.ID, r.Principal, r.Tool, rawValue(r.Args), rawValue(r.ClientCapabilities),
		string(r.Status), r.StatusMessage,
		r.CreatedAt.UnixMilli(), r.UpdatedAt.UnixMilli(), r.TTL.Milliseconds(), r.PollInterval.Milliseconds(),
		inputRequests, answers,
		rawValue(r.Result), rpcErr, cancel, r.Attempt, r.LeaseOwner, timeValue(r.LeaseExpiresAt),
	}, nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanRecord reads a record from a row of columns.
func scanRecord(sc scanner) (*task.Record, error) {
	var (
		r                                  task.Record
		status                             string
		created, updated, ttl, poll        int64
		args, caps, inputRequests, answers []byte
		result, rpcErr                     []byte
		cancel                             bool
		leaseExpiresAt                     sql.NullInt64
	)
	err := sc.Scan(&r.ID, &r.Principal, &r.Tool, &args, &caps, &status, &r.StatusMessage,
		&created, &updated, &ttl, &poll, &inputRequests, &answers,
		&result, &rpcErr, &cancel, &r.Attempt, &r.LeaseOwner, &leaseExpiresAt)
	if err != nil {
		return nil, err
	}
	r.Args, r.ClientCapabilities, r.Result = rawFrom(args), rawFrom(caps), rawFrom(result)
	r.Status = task.Status(status)
	r.CreatedAt, r.UpdatedAt = timeFrom(created), timeFrom(updated)
	r.TTL, r.PollInterval = time.Duration(ttl)*time.Millisecond, time.Duration(poll)*time.Millisecond
	r.CancelRequested = cancel
	if leaseExpiresAt.Valid {
		r.LeaseExpiresAt = timeFrom(leaseExpiresAt.Int64)
	}
	if r.InputRequests, err = decodeRaws(inputRequests); err != nil {
		return nil, fmt.Errorf("task %s: input requests: %w", r.ID, err)
	}
	if r.Answers, err = decodeRaws(answers); err != nil {
		return nil, fmt.Errorf("task %s: answers: %w", r.ID, err)
	}
	if r.Error, err = decodeError(rpcErr); err != nil {
		return nil, fmt.Errorf("task %s: error: %w", r.ID, err)
	}
	return &r, nil
}

// update writes r back to its row.
func update(ctx context.Context, tx *sql.Tx, r *task.Record) error {
	vals, err := recordValues(r)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, updateSQL, append(vals, r.ID)...); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

// rawValue is the column value of a JSON value: NULL when empty.
func rawValue(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// rawFrom is the JSON value of a column: nil when NULL or empty.
func rawFrom(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

// timeValue is the column value of an optional time: NULL when zero.
func timeValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// timeFrom is the time of unix milliseconds, in UTC.
func timeFrom(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}

// encodeRaws returns m as a JSON object whose values are m's bytes, keys
// sorted; NULL when m is empty. A nil value is written as null.
func encodeRaws(m map[string]json.RawMessage) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		if err := writeRaw(&b, m[k]); err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

// writeRaw writes the JSON value v, or null if it is empty.
func writeRaw(b *strings.Builder, v json.RawMessage) error {
	if len(v) == 0 {
		b.WriteString("null")
		return nil
	}
	if !json.Valid(v) {
		return fmt.Errorf("not valid JSON: %.40q", v)
	}
	b.Write(bytes.TrimSpace(v))
	return nil
}

// decodeRaws is the inverse of encodeRaws.
func decodeRaws(b []byte) (map[string]json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// encodeError returns e as a JSON-RPC error object that keeps e.Data's
// bytes; NULL when e is nil.
func encodeError(e *task.Error) (any, error) {
	if e == nil {
		return nil, nil
	}
	msg, err := json.Marshal(e.Message)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"code":%d,"message":%s`, e.Code, msg)
	if len(e.Data) > 0 {
		b.WriteString(`,"data":`)
		if err := writeRaw(&b, e.Data); err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

// decodeError is the inverse of encodeError.
func decodeError(b []byte) (*task.Error, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var e task.Error
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	return &e, nil
}
