package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// maxGroup bounds how many writes share one transaction.
const maxGroup = 256

// errClosed is returned by writes on a closed store.
var errClosed = errors.New("sqlite: store is closed")

// write is one write waiting for its group's commit.
type write struct {
	op   string
	fn   func(tx *wtx) error
	done chan error
}

// inTx runs fn in a write transaction and returns once that transaction is
// committed (durable) or has failed. Writes are group-committed: the writes
// that arrive while one transaction commits share the next one and its
// fsync. fn must check the store's rules before it changes anything, and
// return their errors as they are (see runGroup). Errors of the database
// are wrapped with op.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx *wtx) error) error {
	if err := ctx.Err(); err != nil { // select would pick at random between this and a ready commit loop
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	w := write{op: op, fn: fn, done: make(chan error, 1)}
	select {
	case s.writes <- w:
	case <-s.stop:
		return errClosed
	case <-ctx.Done():
		return fmt.Errorf("sqlite: %s: %w", op, ctx.Err())
	}
	// Once queued, the outcome is waited for even if ctx ends: returning
	// early would leave the caller unsure whether the write happened.
	return <-w.done
}

// commitLoop commits queued writes in groups until the store closes.
func (s *Store) commitLoop() {
	defer close(s.stopped)
	// While Gets use the cache, foreign writes are checked for every
	// CacheMaxStale/2, so that their hits stay fresh; a Get that finds the
	// last check too old asks for one.
	refresh := time.NewTimer(time.Hour)
	refresh.Stop()
	defer refresh.Stop()
	check := func() {
		if d := s.checkForeign(); d > 0 {
			refresh.Reset(d)
		}
	}
	for {
		var group []write
		select {
		case <-s.stop:
			return
		case <-s.cache.probeC():
			check()
			continue
		case <-s.listenProbe:
			check()
			continue
		case <-refresh.C:
			check()
			continue
		case w := <-s.writes:
			group = append(group, w)
		}
	more:
		for len(group) < maxGroup {
			select {
			case w := <-s.writes:
				group = append(group, w)
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

// listenCheck is how often the commit loop looks for the writes of other
// processes while a Listen channel is open: they are announced as a resync
// at most this late.
const listenCheck = 100 * time.Millisecond

// checkForeign reads the write connection's data_version, which changes
// when another process commits, and tells the cache and, as a resync, the
// listeners (the store announces only its own writes one by one). It
// returns when to check again: soon while the cache was read since the
// previous check or someone listens, never (0) otherwise.
func (s *Store) checkForeign() (again time.Duration) {
	listening := s.events.Listening()
	if s.cache == nil && !listening {
		return 0
	}
	var t time.Time
	if s.cache != nil {
		t = s.cache.now()
	}
	var v int64
	foreign := true // unsure: forget everything
	if err := s.ws.dataVersion.QueryRowContext(context.Background()).Scan(&v); err == nil {
		foreign = v != s.dataVersion
		s.dataVersion = v
	} else {
		t = time.Time{}
	}
	if s.cache.checked(t, foreign) {
		again = s.cache.maxStale / 2
	}
	if listening {
		if foreign {
			s.events.Publish(store.Event{Kind: store.EventResync})
		}
		if again == 0 || again > listenCheck {
			again = listenCheck
		}
	}
	return again
}

// commitGroup runs the group's writes in one transaction on the write
// connection (BEGIN IMMEDIATE: it holds the write lock from the start) and
// tells each writer its outcome once the transaction is committed or gone.
func (s *Store) commitGroup(group []write) {
	errs := make([]error, len(group))
	s.cache.beginWrite()
	if err := s.runGroup(group, errs); err != nil {
		for i, w := range group {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("sqlite: %s: %w", w.op, err)
			}
		}
	}
	s.cache.endWrite() // before the writers learn of their commit
	for i, w := range group {
		w.done <- errs[i]
	}
}

// runGroup runs the writes of group in one transaction and commits it,
// setting errs[i] for each write that fails. A write that breaks a rule of
// the store has changed nothing (the rules are checked before any change)
// and fails alone, as does one whose error is marked noChange (see
// beforeChange). Any other error is the database's, after which SQLite
// may already have rolled the transaction back: the group stops there and
// is rolled back, and runGroup returns the error for the writes that had
// not failed.
func (s *Store) runGroup(group []write, errs []error) error {
	ctx := context.Background()
	sqlTx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx := &wtx{tx: sqlTx, ctx: ctx, ws: s.ws}
	for i, w := range group {
		if errs[i] = w.fn(tx); errs[i] != nil && !ruleError(errs[i]) {
			_ = sqlTx.Rollback()
			return fmt.Errorf("rolled back with a write that failed: %w", errs[i])
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// ruleError reports whether err is a store rule's refusal of a write, or
// another error returned before the write changed anything, rather than a
// failure of the database.
func ruleError(err error) bool {
	var te *task.TransitionError
	var ae *store.AnswerError
	var nc noChange
	var de *store.DuplicateError
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrLeaseLost) ||
		errors.Is(err, store.ErrExists) || errors.Is(err, task.ErrStepTooLarge) || errors.Is(err, task.ErrInvalidStep) ||
		errors.As(err, &te) || errors.As(err, &ae) || errors.As(err, &nc) || errors.As(err, &de)
}

// noChange marks an error that a write returns before it changed anything,
// such as a record that cannot be encoded.
type noChange struct{ error }

func (e noChange) Unwrap() error { return e.error }

// beforeChange marks err, which a write returns before it changed
// anything, as noChange, so that the write fails alone, unless it is a
// failure of the database that may have ended the transaction (see
// keepsTx). A task that cannot be decoded, or a query that SQLite refuses,
// fails only the write that read or ran it.
func beforeChange(err error) error {
	if !keepsTx(err) {
		return err
	}
	return noChange{err}
}

// keepsTx reports whether the transaction is still open, as it was, after
// a statement of it failed with err: unless err is of the database (or
// database/sql) with another code than SQLITE_ERROR, an error of the
// statement alone. SQLite may roll the whole transaction back on the
// others (SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM,
// SQLITE_INTERRUPT, …), and the statements that followed would then run
// outside it, each committed at once.
func keepsTx(err error) bool {
	if c, ok := primaryCode(err); ok {
		return c == sqlite3.SQLITE_ERROR
	}
	return !errors.Is(err, sql.ErrTxDone) && !errors.Is(err, driver.ErrBadConn)
}

// Create implements [store.Store]. It returns once the task is durable.
func (s *Store) Create(ctx context.Context, r *task.Record) error {
	vals, err := recordValues(r)
	if err != nil {
		return fmt.Errorf("sqlite: create task: %w", err)
	}
	err = s.inTx(ctx, "create task", func(tx *wtx) error {
		if err := s.takeKey(tx, r); err != nil {
			return err
		}
		res, err := tx.exec(tx.ws.insert, vals...)
		if err != nil {
			return fmt.Errorf("sqlite: create task: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("sqlite: create task: %w", err)
		} else if n == 0 {
			return store.ErrExists
		}
		return nil
	})
	if err == nil {
		s.events.Publish(store.Event{Kind: store.CreateEvent(r), TaskID: r.ID})
	}
	return err
}

// takeKey checks, in a create's transaction, that no live task of r's
// principal holds r's idempotency key, and takes the key from an expired
// one. It returns a *store.DuplicateError if a live task holds it.
func (s *Store) takeKey(tx *wtx, r *task.Record) error {
	if r.IdempotencyKey == "" {
		return nil
	}
	old, err := scanRecord(tx.tx.StmtContext(tx.ctx, tx.ws.byKey).QueryRowContext(tx.ctx, r.Principal, r.IdempotencyKey))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return beforeChange(fmt.Errorf("sqlite: create task: idempotency key: %w", err))
	case store.KeyHeld(old, r.CreatedAt):
		return &store.DuplicateError{Task: old}
	}
	s.cache.drop(old.ID)
	if _, err := tx.exec(tx.ws.dropKey, old.ID); err != nil {
		return fmt.Errorf("sqlite: create task: idempotency key: %w", err)
	}
	return nil
}
