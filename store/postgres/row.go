package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcptasks/mcptasks/store/internal/sqlstore"
	"github.com/mcptasks/mcptasks/task"
)

// columns are the columns that hold a task.Record, in the order of
// scanRecord. expires_at is derived and not read back.
const columns = `id, principal, tool, args, client_capabilities, status, status_message,
	created_at, updated_at, ttl_ms, poll_interval_ms, input_requests, answers,
	result, error, cancel_requested, attempt, lease_owner, lease_expires_at,
	trace_parent, losses, idempotency_key, history, steps, meta`

const (
	selectSQL = `SELECT ` + columns + ` FROM mcptasks_tasks`
	getSQL    = selectSQL + ` WHERE id = $1`
	getForSQL = getSQL + ` AND principal = $2`
	lockSQL   = getSQL + ` FOR UPDATE`
	byKeySQL  = selectSQL + ` WHERE principal = $1 AND idempotency_key = $2`
	// dropKeySQL takes the idempotency key $2 from the expired task $1.
	dropKeySQL = `UPDATE mcptasks_tasks SET idempotency_key = NULL WHERE id = $1 AND idempotency_key = $2`

	// insertRowSQL inserts a task unless its id, or its principal and
	// idempotency key, exist. The values are those of insertValues.
	insertRowSQL = `INSERT INTO mcptasks_tasks (` + columns + `, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)
		ON CONFLICT DO NOTHING`

	// insertSQL is insertRowSQL that, if the task was new, notifies its
	// creation in the same statement; it returns the number of rows
	// inserted. The values are those of insertValues, then the channel.
	insertSQL = `WITH ins AS (` + insertRowSQL + ` RETURNING id)
	SELECT count(*) FROM ins, pg_notify($27, 'created:' || ins.id)`

	// updateSQL writes back the columns that the state machine changes;
	// the others (trace_parent among them) are fixed at creation. attempt
	// and losses change only in claimSQL, but are written back like the
	// rest: the row is locked while the record is read and changed. The
	// values are those of updateValues.
	updateSQL = `UPDATE mcptasks_tasks SET
		status = $2, status_message = $3, updated_at = $4,
		input_requests = $5, answers = $6, result = $7, error = $8,
		cancel_requested = $9, attempt = $10, lease_owner = $11, lease_expires_at = $12,
		losses = $13, history = $14, steps = $15
	WHERE id = $1`
)

// insertValues returns the values of insertSQL for r, but the channel.
func insertValues(r *task.Record) ([]any, error) {
	inputRequests, answers, rpcErr, history, steps, err := encodeMaps(r)
	if err != nil {
		return nil, err
	}
	// expires_at as the table's constraint computes it, from the stored
	// milliseconds.
	var expiresAt any
	if ttl := r.TTL.Milliseconds(); ttl > 0 {
		expiresAt = time.UnixMilli(r.CreatedAt.UnixMilli() + ttl).UTC()
	}
	return []any{
		r.ID, r.Principal, r.Tool, sqlstore.RawValue(r.Args), sqlstore.RawValue(r.ClientCapabilities),
		string(r.Status), r.StatusMessage,
		timeValue(r.CreatedAt), timeValue(r.UpdatedAt), r.TTL.Milliseconds(), r.PollInterval.Milliseconds(),
		inputRequests, answers, sqlstore.RawValue(r.Result), rpcErr,
		r.CancelRequested, r.Attempt, r.LeaseOwner, timeValue(r.LeaseExpiresAt),
		r.TraceParent, r.Losses, nullString(r.IdempotencyKey), history, steps, sqlstore.RawValue(r.Meta), expiresAt,
	}, nil
}

// updateValues returns the values of updateSQL for r.
func updateValues(r *task.Record) ([]any, error) {
	inputRequests, answers, rpcErr, history, steps, err := encodeMaps(r)
	if err != nil {
		return nil, err
	}
	return []any{
		r.ID, string(r.Status), r.StatusMessage, timeValue(r.UpdatedAt),
		inputRequests, answers, sqlstore.RawValue(r.Result), rpcErr,
		r.CancelRequested, r.Attempt, r.LeaseOwner, timeValue(r.LeaseExpiresAt),
		r.Losses, history, steps,
	}, nil
}

// encodeMaps returns the column values of r's input requests, answers,
// error, history and steps.
func encodeMaps(r *task.Record) (inputRequests, answers, rpcErr, history, steps any, err error) {
	if inputRequests, err = sqlstore.EncodeRaws(r.InputRequests); err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("input requests: %w", err)
	}
	if answers, err = sqlstore.EncodeRaws(r.Answers); err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("answers: %w", err)
	}
	if rpcErr, err = sqlstore.EncodeError(r.Error); err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("error: %w", err)
	}
	if history, err = sqlstore.EncodeHistory(r.History); err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("history: %w", err)
	}
	if steps, err = sqlstore.EncodeRaws(r.Steps); err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("steps: %w", err)
	}
	return inputRequests, answers, rpcErr, history, steps, nil
}

// update writes r back to its row.
func update(ctx context.Context, tx pgx.Tx, r *task.Record) error {
	vals, err := updateValues(r)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, updateSQL, vals...); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

// scanRecord reads a record from a row of columns, then the extra
// columns into extra.
func scanRecord(row pgx.Row, extra ...any) (*task.Record, error) {
	var (
		r                               task.Record
		status                          string
		created, updated                time.Time
		ttl, poll                       int64
		args, caps, meta, inputRequests []byte
		answers                         []byte
		result, rpcErr, history, steps  []byte
		leaseExpiresAt                  *time.Time
		key                             *string
	)
	dest := []any{&r.ID, &r.Principal, &r.Tool, &args, &caps, &status, &r.StatusMessage,
		&created, &updated, &ttl, &poll, &inputRequests, &answers,
		&result, &rpcErr, &r.CancelRequested, &r.Attempt, &r.LeaseOwner, &leaseExpiresAt,
		&r.TraceParent, &r.Losses, &key, &history, &steps, &meta}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	r.Args, r.ClientCapabilities, r.Result = sqlstore.RawFrom(args), sqlstore.RawFrom(caps), sqlstore.RawFrom(result)
	r.Meta = sqlstore.RawFrom(meta)
	r.Status = task.Status(status)
	r.CreatedAt, r.UpdatedAt = created.UTC(), updated.UTC()
	r.TTL, r.PollInterval = time.Duration(ttl)*time.Millisecond, time.Duration(poll)*time.Millisecond
	if leaseExpiresAt != nil {
		r.LeaseExpiresAt = leaseExpiresAt.UTC()
	}
	if key != nil {
		r.IdempotencyKey = *key
	}
	var err error
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

// timeValue is the column value of a time, truncated to the millisecond
// (the store's precision; timestamptz keeps microseconds), in UTC; NULL
// when zero.
func timeValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// nullString is the column value of an optional string: NULL when empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
