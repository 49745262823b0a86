package postgres

import (
	"context"
	"fmt"

	"github.com/mcptasks/mcptasks/store"
)

var _ store.Pinger = (*Store)(nil)

// Ping implements [store.Pinger]: it reports whether the database answers,
// within the ctx deadline or the store's QueryTimeout. mcptasks serve's
// /readyz uses it.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}
