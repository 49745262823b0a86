package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mcptasks/mcptasks/task"
)

// writeStmts are the statements of the write path, prepared once on the
// write connection: SQLite would otherwise parse each one again at every
// execution, which costs more than the insert itself.
type writeStmts struct {
	get, insert, update, heartbeat, byKey, dropKey, dataVersion *sql.Stmt
}

func prepareWrites(ctx context.Context, db *sql.DB) (*writeStmts, error) {
	ws := &writeStmts{}
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{
		{&ws.get, getSQL}, {&ws.insert, insertSQL}, {&ws.update, updateSQL}, {&ws.heartbeat, heartbeatSQL},
		{&ws.byKey, byKeySQL}, {&ws.dropKey, dropKeySQL},
		{&ws.dataVersion, "PRAGMA data_version"},
	} {
		st, err := db.PrepareContext(ctx, p.q)
		if err != nil {
			ws.close()
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
		*p.st = st
	}
	return ws, nil
}

func (ws *writeStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{ws.get, ws.insert, ws.update, ws.heartbeat, ws.byKey, ws.dropKey, ws.dataVersion} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// wtx is a write transaction of the commit loop, with the prepared
// statements of the write path. Its statements run under the loop's
// context, never a caller's: SQLite answers an interrupted change inside a
// transaction by rolling back the whole transaction, which would undo the
// other writes of the group.
type wtx struct {
	tx  *sql.Tx
	ctx context.Context
	ws  *writeStmts
}

// exec runs the prepared statement st.
func (tx *wtx) exec(st *sql.Stmt, args ...any) (sql.Result, error) {
	return tx.tx.StmtContext(tx.ctx, st).ExecContext(tx.ctx, args...)
}

// get loads the task with the id.
func (tx *wtx) get(id string) (*task.Record, error) {
	return scanRecord(tx.tx.StmtContext(tx.ctx, tx.ws.get).QueryRowContext(tx.ctx, id))
}

// query runs q and reads all its rows as tasks.
func (tx *wtx) query(q string, args ...any) ([]*task.Record, error) {
	rows, err := tx.tx.QueryContext(tx.ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var rs []*task.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, rows.Err()
}
