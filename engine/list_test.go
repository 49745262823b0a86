package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
)

// TestList: the principal's live tasks, newest first, none of another's,
// none whose TTL has elapsed; a cursor List did not make is refused.
func TestList(t *testing.T) {
	bubble(t, func(t *testing.T) {
		tools := []*Tool{{Name: "job", TTL: time.Minute, Handler: func(ctx context.Context, _ *Run) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}}
		e := newEngine(t, newMem(), tools, Options{})
		expired := create(t, e, "job")
		time.Sleep(30 * time.Second)
		older := create(t, e, "job")
		time.Sleep(time.Second)
		newer := create(t, e, "job")
		if _, err := e.Create(bg, CreateParams{Tool: "job", Principal: "bob"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(31 * time.Second) // the first task's minute is over

		page, err := e.List(bg, ListParams{Principal: principal})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range page.Tasks {
			ids = append(ids, r.ID)
		}
		if len(ids) != 2 || ids[0] != newer.ID || ids[1] != older.ID || page.Next != "" {
			t.Errorf("List = %v (next %q), want [%s %s]; %s expired", ids, page.Next, newer.ID, older.ID, expired.ID)
		}
		if _, err := e.List(bg, ListParams{Principal: principal, Cursor: "x"}); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("List with a bad cursor: %v", err)
		}
		// No principal is an error: to the store it means everyone's.
		if page, err := e.List(bg, ListParams{}); err == nil {
			t.Errorf("List without a principal = %d tasks, want an error", len(page.Tasks))
		}
	})
}
