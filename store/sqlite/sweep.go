package sqlite

import (
	"context"
	"fmt"
	"time"
)

// deleteExpiredSQL deletes up to a limit of the tasks whose TTL has elapsed,
// earliest deadline first, found by the tasks_expires_at index.
const deleteExpiredSQL = `DELETE FROM tasks WHERE rowid IN (
	SELECT rowid FROM tasks WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`

// DeleteExpired implements [store.Store]. A limit of zero or less means no
// limit.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	var n int64
	err := s.inTx(ctx, "delete expired", func(tx *wtx) error {
		s.cache.dropAll() // which tasks go is known only after the delete
		res, err := tx.tx.ExecContext(tx.ctx, deleteExpiredSQL, now.UnixMilli(), limit)
		if err != nil {
			return fmt.Errorf("sqlite: delete expired: %w", err)
		}
		n, err = res.RowsAffected()
		if err != nil {
			return fmt.Errorf("sqlite: delete expired: %w", err)
		}
		return nil
	})
	return int(n), err
}
