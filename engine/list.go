package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcptasks/mcptasks/store"
)

// ErrListUnsupported is returned by List on a store that cannot list its
// tasks (one that does not implement store.Lister).
var ErrListUnsupported = errors.New("engine: the store cannot list tasks")

// ListParams are the parameters of [Engine.List].
type ListParams struct {
	// Principal lists only this principal's tasks.
	Principal string
	// Cursor continues a listing: the Next of the previous page.
	Cursor string
	// Limit is the most tasks of the page (store.DefaultListLimit if
	// zero).
	Limit int
}

// List returns a page of the principal's tasks that have not expired,
// newest first, as store.Lister.List does: a page may hold fewer than
// Limit tasks and still have a Next cursor. An empty Principal is an
// error, not every principal's tasks. A cursor that List did not
// make gives an error matching store.ErrBadCursor.
func (e *Engine) List(ctx context.Context, p ListParams) (*store.ListPage, error) {
	if p.Principal == "" {
		// To a store, no principal means every principal's tasks.
		return nil, errors.New("engine: list tasks: no principal; a principal lists only its own tasks")
	}
	l, ok := e.raw.(store.Lister)
	if !ok {
		return nil, ErrListUnsupported
	}
	page, err := l.List(ctx, store.ListParams{Principal: p.Principal, Now: e.now(), Cursor: p.Cursor, Limit: p.Limit})
	if err != nil {
		return nil, fmt.Errorf("engine: list tasks: %w", err)
	}
	return page, nil
}
