package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcptasks/mcptasks/store"
)

// claimSQL selects the claimable tasks, oldest first, by the
// tasks_claimable index, which leaves suspended tasks out: its WHERE must
// imply the index's, so it repeats the index's predicate word for word.
// The parameters are now (twice), then the limit; claimQuery adds the tools.
const claimSQL = selectSQL + `
	WHERE ` + claimableWhere + `
	  AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
	  AND (expires_at IS NULL OR expires_at > ?)`

// claimQuery returns the candidate query of p and its arguments.
func claimQuery(p store.ClaimParams) (string, []any) {
	now := p.Now.UnixMilli()
	q, args := claimSQL, []any{now, now}
	if p.Tools != nil {
		q += ` AND tool IN (?` + strings.Repeat(`, ?`, len(p.Tools)-1) + `)`
		for _, t := range p.Tools {
			args = append(args, t)
		}
	}
	limit := p.Limit
	if limit <= 0 {
		limit = -1 // no limit
	}
	return q + ` ORDER BY created_at, id LIMIT ?`, append(args, limit)
}

// Claim implements [store.Store]. It selects the candidates by index and
// leases each with [store.ApplyClaim], in one write transaction.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	if p.Tools != nil && len(p.Tools) == 0 {
		return nil, nil // no tool matches, as in store.Claimable
	}
	q, args := claimQuery(p)
	var out []store.Claimed
	err := s.inTx(ctx, "claim", func(tx *wtx) error {
		// Every candidate is read and decoded before the first is
		// claimed: a task that cannot be decoded, or a tool list longer
		// than SQLite takes, fails this claim alone.
		cands, err := tx.query(q, args...)
		if err != nil {
			return beforeChange(fmt.Errorf("sqlite: claim: %w", err))
		}
		for _, r := range cands {
			// The query and store.Claimable agree; the check keeps the
			// rules in one place.
			if !store.Claimable(r, p) {
				continue
			}
			c := store.ApplyClaim(r, p)
			s.cache.drop(r.ID)
			if err := update(tx, c.Record); err != nil {
				// Once a candidate is claimed, an error is not a
				// noChange one any more: the group must roll back.
				var nc noChange
				if len(out) > 0 && errors.As(err, &nc) {
					err = nc.error
				}
				return fmt.Errorf("sqlite: claim: %w", err)
			}
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
