package sqlite

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/task"
)

// The columns of tasks that hold a task.Record, in the order of
// recordValues and scanRecord: first those of the task's identity, which
// Create writes and nothing changes after it, then those of its state,
// which the writes that follow change. An update writes only the state
// columns, so that SQLite leaves the indexes of the identity alone
// (tasks_created, tasks_expires_at and the primary key); it would rewrite
// every index on a column that an UPDATE sets, whether or not the value
// changed. expires_at is computed by SQLite.
const (
	identityColumns = `id, principal, tool, args, client_capabilities, created_at,
	ttl_ms, poll_interval_ms, trace_parent, idempotency_key, meta`
	stateColumns = `status, status_message, updated_at, input_requests, answers,
	result, error, cancel_requested, attempt, lease_owner, lease_expires_at,
	losses, history, steps`
	columns = identityColumns + `, ` + stateColumns
)

// identityMarks and stateMarks are the placeholders of identityColumns and
// stateColumns.
const (
	identityMarks = `?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`
	stateMarks    = `?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`
)

const (
	selectSQL = `SELECT ` + columns + ` FROM tasks`
	getSQL    = selectSQL + ` WHERE id = ?`
	getForSQL = getSQL + ` AND principal = ?`
	byKeySQL  = selectSQL + ` WHERE principal = ? AND idempotency_key = ?`
	// dropKeySQL takes the idempotency key from an expired task.
	dropKeySQL = `UPDATE tasks SET idempotency_key = NULL WHERE id = ?`
	insertSQL  = `INSERT INTO tasks (` + columns + `) VALUES (` + identityMarks + `, ` + stateMarks + `) ON CONFLICT (id) DO NOTHING`
	updateSQL  = `UPDATE tasks SET (` + stateColumns + `) = (` + stateMarks + `) WHERE id = ?`
	// heartbeatSQL extends one lease if its holder still holds it (the
	// WHERE is store.CheckFence: live, held at the attempt, not expired),
	// writing only lease_expires_at. The parameters are the id, the
	// attempt, the new expiry and now; no row means the lease is lost.
	heartbeatSQL = `UPDATE tasks SET lease_expires_at = ?3
	WHERE id = ?1 AND attempt = ?2 AND status IN ('working', 'input_required')
	  AND lease_owner <> '' AND (expires_at IS NULL OR expires_at > ?4)
	RETURNING cancel_requested, status <> 'input_required'`
)

// recordValues returns the column values of r: those of identityColumns,
// then those of stateColumns.
func recordValues(r *task.Record) ([]any, error) {
	return appendStateValues(append(make([]any, 0, 25),
		r.ID, r.Principal, r.Tool, sqlstore.RawValue(r.Args), sqlstore.RawValue(r.ClientCapabilities),
		r.CreatedAt.UnixMilli(), r.TTL.Milliseconds(), r.PollInterval.Milliseconds(),
		r.TraceParent, nullString(r.IdempotencyKey), sqlstore.RawValue(r.Meta),
	), r)
}

// appendStateValues appends the values of r's stateColumns to dst.
func appendStateValues(dst []any, r *task.Record) ([]any, error) {
	inputRequests, err := sqlstore.EncodeRaws(r.InputRequests)
	if err != nil {
		return nil, fmt.Errorf("input requests: %w", err)
	}
	answers, err := sqlstore.EncodeRaws(r.Answers)
	if err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	rpcErr, err := sqlstore.EncodeError(r.Error)
	if err != nil {
		return nil, fmt.Errorf("error: %w", err)
	}
	history, err := sqlstore.EncodeHistory(r.History)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	steps, err := sqlstore.EncodeRaws(r.Steps)
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	cancel := 0
	if r.CancelRequested {
		cancel = 1
	}
	return append(dst,
		string(r.Status), r.StatusMessage, r.UpdatedAt.UnixMilli(), inputRequests, answers,
		sqlstore.RawValue(r.Result), rpcErr, cancel, r.Attempt, r.LeaseOwner, timeValue(r.LeaseExpiresAt),
		r.Losses, history, steps,
	), nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanRecord reads a record from a row of columns.
func scanRecord(sc scanner) (*task.Record, error) {
	var (
		r                               task.Record
		status                          string
		created, updated, ttl, poll     int64
		args, caps, meta, inputRequests []byte
		answers                         []byte
		result, rpcErr, history, steps  []byte
		cancel                          bool
		leaseExpiresAt                  sql.NullInt64
		key                             sql.NullString
	)
	err := sc.Scan(&r.ID, &r.Principal, &r.Tool, &args, &caps, &created,
		&ttl, &poll, &r.TraceParent, &key, &meta,
		&status, &r.StatusMessage, &updated, &inputRequests, &answers,
		&result, &rpcErr, &cancel, &r.Attempt, &r.LeaseOwner, &leaseExpiresAt,
		&r.Losses, &history, &steps)
	if err != nil {
		return nil, err
	}
	r.Args, r.ClientCapabilities, r.Result = sqlstore.RawFrom(args), sqlstore.RawFrom(caps), sqlstore.RawFrom(result)
	r.Meta = sqlstore.RawFrom(meta)
	r.Status = task.Status(status)
	r.CreatedAt, r.UpdatedAt = timeFrom(created), timeFrom(updated)
	r.TTL, r.PollInterval = time.Duration(ttl)*time.Millisecond, time.Duration(poll)*time.Millisecond
	r.CancelRequested = cancel
	r.IdempotencyKey = key.String
	if leaseExpiresAt.Valid {
		r.LeaseExpiresAt = timeFrom(leaseExpiresAt.Int64)
	}
	if r.InputRequests, err = sqlstore.DecodeRaws(inputRequests); err != nil {
		return nil, fmt.Errorf("task %s: input requests: %w", r.ID, err)
	}
	if r.Answers, err = sqlstore.DecodeRaws(answers); err != nil {
		return nil, fmt.Errorf("task %s: answers: %w", r.ID, err)
	}
	if r.Steps, err = sqlstore.DecodeRaws(steps); err != nil {
		return nil, fmt.Errorf("task %s: steps: %w", r.ID, err)
	}
	if r.Error, err = sqlstore.DecodeError(rpcErr); err != nil {
		return nil, fmt.Errorf("task %s: error: %w", r.ID, err)
	}
	if r.History, err = sqlstore.DecodeHistory(history); err != nil {
		return nil, fmt.Errorf("task %s: history: %w", r.ID, err)
	}
	return &r, nil
}

// update writes r's state back to its row (see stateColumns).
func update(tx *wtx, r *task.Record) error {
	vals, err := appendStateValues(make([]any, 0, 15), r) // and the id
	if err != nil {
		return noChange{err}
	}
	if _, err := tx.exec(tx.ws.update, append(vals, r.ID)...); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

// timeValue is the column value of an optional time: NULL when zero.
func timeValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// nullString is the column value of an optional string: NULL when empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// timeFrom is the time of unix milliseconds, in UTC.
func timeFrom(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}
