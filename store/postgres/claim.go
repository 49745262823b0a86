package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/mcptasks/mcptasks/store"
)

// claimSQL leases the claimable tasks in one statement. The cand query
// walks the mcptasks_tasks_claimable index oldest first, which leaves
// suspended tasks out (its WHERE repeats the index's, with the same
// literals, so the planner may use it) and locks
// up to the limit with FOR UPDATE SKIP LOCKED: rows another claim holds
// are skipped, never waited for, so concurrent claims take different
// tasks. Under READ COMMITTED a row changed since the statement began is
// re-read and re-checked before it is locked, so prev_owner is the owner
// of the version being leased. The update then leases what cand locked:
// the ANY reads those rows by primary key, whatever number of them the
// planner expects (a join alone may hash the whole table), and the join
// brings prev_owner along. A non-empty prev_owner makes the claim a loss
// (store.ApplyClaim): it increments losses and returns lost.
//
// The parameters are now, the limit (NULL: no limit), the owner, the new
// lease expiry, the claim's token (see claimedSQL), and, in claimToolsSQL,
// the tools. The predicate is that of
// store.Claimable, given that the table allows only the five statuses.
//
// Two costs of that index. It holds (created_at, id) only, and its
// condition takes in every task a worker holds: lease_expires_at is in no
// index (so that heartbeats stay HOT updates), so a claim that finds
// nothing reads the row of each held task older than the first claimable
// one. And since migration 007, whose condition names status and
// lease_owner, a claim, a release, a suspension and a finish update the
// index: migration 001's note that claims are HOT updates holds no longer
// for them. Heartbeats and steps still are; status messages change
// updated_at, which the finished index (migration 006) holds, and are not.
const (
	claimSQL      = claimHead + claimTail
	claimToolsSQL = claimHead + `AND tool = ANY($6)` + claimTail

	claimHead = `WITH cand AS (
		SELECT id AS cand_id, lease_owner AS prev_owner
		FROM mcptasks_tasks
		WHERE ` + claimableWhere + `
		  AND (lease_expires_at IS NULL OR lease_expires_at <= $1)
		  AND (expires_at IS NULL OR expires_at > $1)
		  `
	claimTail = `
		ORDER BY created_at, id
		LIMIT $2
		FOR UPDATE SKIP LOCKED
	), claimed AS (
		UPDATE mcptasks_tasks
		SET attempt = attempt + 1, lease_owner = $3, lease_expires_at = $4, claim_token = $5,
		    losses = losses + CASE WHEN prev_owner <> '' THEN 1 ELSE 0 END,
		    history = ` + historyClaimed + `
		FROM cand
		WHERE id = ANY(ARRAY(SELECT cand_id FROM cand)) AND id = cand_id
		RETURNING ` + columns + `, prev_owner <> '' AS lost
	)
	SELECT * FROM claimed ORDER BY created_at, id`
)

// historyClaimed is the history after a claim, as store.ApplyClaim leaves
// it (task.Record.AddHistory): the claimed event appended, numbered after
// the last one, and the event after the first task.HistoryHead (4) dropped
// when task.MaxHistory (32) are kept already. The worker's name is cut to
// task.MaxHistoryName (64) characters, as AddHistory cuts it. The numbers
// are literals for claimSQL to be a constant; TestHistoryClaimedBounds
// checks them.
const historyClaimed = `CASE WHEN jsonb_array_length(coalesce(history, '[]')) >= 32
			THEN history - 4 ELSE coalesce(history, '[]') END
		|| jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
			'seq', coalesce((history -> -1 ->> 'seq')::int, 0) + 1,
			'at', floor(extract(epoch FROM $1::timestamptz) * 1000)::bigint,
			'kind', 'claimed', 'attempt', attempt + 1, 'worker', left($3, 64),
			'lost', CASE WHEN prev_owner <> '' THEN true END)))`

// claimQuery returns the claim statement of p with token and its
// arguments.
func claimQuery(p store.ClaimParams, token string) (string, []any) {
	var limit any // NULL: no limit
	if p.Limit > 0 {
		limit = int64(p.Limit)
	}
	args := []any{timeValue(p.Now), limit, p.Owner, timeValue(p.LeaseExpiresAt), token}
	if p.Tools == nil {
		return claimSQL, args
	}
	return claimToolsSQL, append(args, p.Tools)
}

// claimedSQL finds the tasks that one claim leased, and holds still: those
// of its owner with its token (a later claim of the task writes its own),
// among the tasks of the claimable index, as its condition is repeated
// (the leased ones, not the suspended or ended ones). lost is that of the
// claim's history event, the last claimed one.
const claimedSQL = `SELECT ` + columns + `, coalesce((
		SELECT (e ->> 'lost')::boolean FROM jsonb_array_elements(history) AS e
		WHERE e ->> 'kind' = 'claimed' ORDER BY (e ->> 'seq')::int DESC LIMIT 1), false)
	FROM mcptasks_tasks
	WHERE ` + claimableWhere + ` AND lease_owner = $1 AND claim_token = $2
	ORDER BY created_at, id`

// claimLookups bounds the reads of claimed: the first at once, the next
// after 100 ms, then 200 ms.
const claimLookups = 3

// claimLookupTimeout bounds the reads of claimed together, which do not
// end with the claim's context (a Shutdown's deadline waits for them).
const claimLookupTimeout = 2 * time.Second

// Claim implements [store.Store]. It is one statement; see claimSQL. If
// the statement fails, the claim may have committed all the same (the
// connection broke after COMMIT): the tasks it leased are looked up by
// its token, and returned if there are any; else the error is. Without
// that, they would stay leased to a worker that never runs them, and be
// taken for lost a lease later (a tool that is not re-run would fail
// without having run).
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	if p.Tools != nil && len(p.Tools) == 0 {
		return nil, nil // no tool matches, as in store.Claimable
	}
	if err := ctx.Err(); err != nil { // nothing sent: nothing to look up
		return nil, fmt.Errorf("postgres: claim: %w", err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	token := rand.Text()
	q, args := claimQuery(p, token)
	out, err := s.queryClaimed(ctx, q, args...)
	if err == nil {
		return out, nil
	}
	// The lookups get a context of their own: ctx may be what ended (a
	// timeout, a Shutdown stopping the claim loop) after the statement
	// committed. A statement cut so may also still be running: then an
	// empty lookup is not the end.
	cut := ctx.Err() != nil
	lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), claimLookupTimeout)
	defer lcancel()
	for i := range claimLookups {
		if i > 0 {
			select {
			case <-lctx.Done():
				return nil, fmt.Errorf("postgres: claim: %w", err)
			case <-time.After(time.Duration(50<<i) * time.Millisecond):
			}
		}
		found, lerr := s.queryClaimed(lctx, claimedSQL, p.Owner, token)
		if lerr == nil {
			if len(found) > 0 {
				return found, nil
			}
			if !cut {
				break // the claim did not commit
			}
		}
	}
	return nil, fmt.Errorf("postgres: claim: %w", err)
}

// queryClaimed runs q, which returns the columns of claimed tasks and
// their lost flag.
func (s *Store) queryClaimed(ctx context.Context, q string, args ...any) ([]store.Claimed, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Claimed
	for rows.Next() {
		var c store.Claimed
		if c.Record, err = scanRecord(rows, &c.Lost); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// heartbeatManySQL extends every lease that its caller still holds, in
// one statement. Its WHERE is store.CheckFence: live, not expired, held at
// the attempt. The parameters are the ids, the attempts (in the same
// order), the new expiry and now. A lease it returns no row for is lost.
const heartbeatManySQL = `UPDATE mcptasks_tasks t SET lease_expires_at = $3
	FROM unnest($1::text[], $2::int[]) AS l(id, attempt)
	WHERE t.id = l.id AND t.attempt = l.attempt
	  AND t.status IN ('working', 'input_required')
	  AND t.lease_owner <> ''
	  AND (t.expires_at IS NULL OR t.expires_at > $4)
	RETURNING t.id, t.attempt, t.cancel_requested, t.status <> 'input_required'`

// HeartbeatMany implements [store.Store]. It is one statement that touches
// no indexed column, so Postgres can make each update a HOT update.
func (s *Store) HeartbeatMany(ctx context.Context, p store.HeartbeatManyParams) ([]store.LeaseState, error) {
	ids := make([]string, len(p.Leases))
	attempts := make([]int32, len(p.Leases))
	for i, l := range p.Leases {
		ids[i], attempts[i] = l.ID, int32(l.Attempt)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, heartbeatManySQL, ids, attempts, timeValue(p.LeaseExpiresAt), timeValue(p.Now))
	if err != nil {
		return nil, fmt.Errorf("postgres: heartbeat: %w", err)
	}
	defer rows.Close()
	// By id and attempt: a lease of an earlier attempt of a task, named
	// beside the current one, is lost.
	held := make(map[store.Lease]store.LeaseState, len(p.Leases))
	for rows.Next() {
		var l store.Lease
		var st store.LeaseState
		if err := rows.Scan(&l.ID, &l.Attempt, &st.CancelRequested, &st.Answered); err != nil {
			return nil, fmt.Errorf("postgres: heartbeat: %w", err)
		}
		held[l] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: heartbeat: %w", err)
	}
	out := make([]store.LeaseState, len(p.Leases))
	for i, l := range p.Leases {
		st, ok := held[l]
		out[i] = st
		out[i].Lost = !ok
	}
	return out, nil
}
