package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// writeStmts are the statements of the write path, prepared once on the
// write connection: SQLite would otherwise parse each one again at every
// execution, which costs more than the insert itself.
type writeStmts struct {
	get, insert, update               *sql.Stmt
	savepoint, rollbackTo, releaseSav *sql.Stmt
	dataVersion                       *sql.Stmt
}

func prepareWrites(ctx context.Context, db *sql.DB) (*writeStmts, error) {
	ws := &writeStmts{}
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{
		{&ws.get, getSQL}, {&ws.insert, insertSQL}, {&ws.update, updateSQL},
		{&ws.savepoint, "SAVEPOINT w"}, {&ws.rollbackTo, "ROLLBACK TO w"}, {&ws.releaseSav, "RELEASE w"},
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
	for _, st := range []*sql.Stmt{ws.get, ws.insert, ws.update, ws.savepoint, ws.rollbackTo, ws.releaseSav, ws.dataVersion} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// wtx is a write transaction with the prepared statements of the write
// path.
type wtx struct {
	*sql.Tx
	ws *writeStmts
}

// exec runs the prepared statement st in the transaction.
func (tx *wtx) exec(ctx context.Context, st *sql.Stmt, args ...any) (sql.Result, error) {
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}
