package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcptasks/mcptasks/store"
)

// Defaults for a nil or zero [Options].
const (
	// DefaultMaxConns is the size of the connection pool. Listen
	// connections come on top of it.
	DefaultMaxConns = 10
	// DefaultQueryTimeout bounds a call whose ctx has no deadline.
	DefaultQueryTimeout = 5 * time.Second
	// DefaultStatementTimeout is the server-side limit on one statement,
	// and on a transaction left idle.
	DefaultStatementTimeout = 30 * time.Second
	// DefaultNotifyChannel is the NOTIFY channel of task events.
	DefaultNotifyChannel = "mcptasks_tasks"
	// DefaultEventBuffer is the capacity of the channel Listen returns.
	DefaultEventBuffer = 256
	// DefaultApplicationName names the store's connections in
	// pg_stat_activity, unless the DSN names them.
	DefaultApplicationName = "mcptasks"
)

// maxChannelLen is the longest channel name Postgres accepts
// (NAMEDATALEN-1 bytes).
const maxChannelLen = 63

// Options configure [Open]. A nil or zero Options uses the defaults.
type Options struct {
	// MaxConns caps the connection pool. Zero means the DSN's
	// pool_max_conns if it has one, else DefaultMaxConns.
	MaxConns int32
	// QueryTimeout bounds every call whose ctx has no deadline, and Open's
	// connection (not its migrations); zero means DefaultQueryTimeout. A
	// caller that needs longer (a large DeleteExpired) passes a ctx with
	// a deadline.
	QueryTimeout time.Duration
	// StatementTimeout is sent as the server's statement_timeout and
	// idle_in_transaction_session_timeout, so that the server ends a
	// runaway statement, or a transaction whose client vanished, and
	// releases its row locks. Zero means DefaultStatementTimeout unless
	// the DSN sets statement_timeout; negative leaves the server's
	// settings alone.
	StatementTimeout time.Duration
	// NotifyChannel is the channel of task events; zero means
	// DefaultNotifyChannel. Channels are per database, not per schema:
	// stores in different schemas of one database should use different
	// channels, or they wake each other for nothing.
	NotifyChannel string
	// EventBuffer is the capacity of the channel Listen returns; zero
	// means DefaultEventBuffer. Events that find it full are dropped.
	EventBuffer int
	// DisableNotify stops this store from sending events; Listen still
	// receives those of other stores. A transaction that notifies holds a
	// database-wide lock while it commits, so notifying commits cannot
	// share a WAL flush: with many concurrent writers, Create runs at
	// about half the rate it reaches without notifications. Engines then
	// find new work, answers and cancel requests by polling. The read
	// caches of other stores (UseReadCache) keep what this one changes
	// until their backstop resync: do not combine the two on one
	// database.
	DisableNotify bool
}

// Store is a [store.Store] and [store.Listener] kept in PostgreSQL. It is
// safe for concurrent use; call Close when done.
type Store struct {
	pool *pgxpool.Pool
	opts Options
	// cache answers GetFor; nil without UseReadCache.
	cache *readCache

	// closing is cancelled by Close; it stops the Listen goroutines,
	// which listeners counts. mu guards closed and the listeners count
	// against Close.
	closing   context.Context
	close     context.CancelFunc
	mu        sync.Mutex
	closed    bool
	listeners sync.WaitGroup
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Listener = (*Store)(nil)
)

// Open connects to the database of dsn, a postgres:// URL or a
// keyword/value string as pgx accepts it, and brings its schema to the
// latest version. The tables go into the first schema of the search_path,
// which must exist. Connecting is bounded by Options.QueryTimeout if ctx
// has no deadline; the migrations only by ctx, as an upgrade may take
// minutes on a large table (and replicas that start meanwhile wait for
// it).
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	o, err := options(opts)
	if err != nil {
		return nil, err
	}
	cfg, err := poolConfig(dsn, o)
	if err != nil {
		return nil, err
	}
	ms, err := loadMigrations(migrationFS, migrationDir)
	if err != nil {
		return nil, err
	}
	// The connection is bounded by QueryTimeout; the migrations are not
	// (only by ctx): one may rebuild an index of millions of tasks, or
	// wait for another replica's.
	cctx, cancel := bound(ctx, o.QueryTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(cctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	conn, err := pool.Acquire(cctx)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	err = migrate(ctx, conn, ms)
	conn.Release()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	closing, closeFn := context.WithCancel(context.Background())
	return &Store{pool: pool, opts: o, closing: closing, close: closeFn}, nil
}

// options returns opts with the defaults filled in, or an error naming
// the field that is invalid.
func options(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxConns < 0:
		return o, fmt.Errorf("postgres: Options.MaxConns is %d: use zero for the default or a positive number", o.MaxConns)
	case o.QueryTimeout < 0:
		return o, fmt.Errorf("postgres: Options.QueryTimeout is %v: use zero for the default or a positive duration", o.QueryTimeout)
	case o.EventBuffer < 0:
		return o, fmt.Errorf("postgres: Options.EventBuffer is %d: use zero for the default or a positive number", o.EventBuffer)
	case len(o.NotifyChannel) > maxChannelLen:
		return o, fmt.Errorf("postgres: Options.NotifyChannel %q is longer than %d bytes", o.NotifyChannel, maxChannelLen)
	}
	if o.QueryTimeout == 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	if o.NotifyChannel == "" {
		o.NotifyChannel = DefaultNotifyChannel
	}
	if o.EventBuffer == 0 {
		o.EventBuffer = DefaultEventBuffer
	}
	return o, nil
}

// poolConfig parses dsn and applies o to it.
func poolConfig(dsn string, o Options) (*pgxpool.Config, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("postgres: dsn is empty: pass a postgres:// URL or a keyword/value connection string")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse dsn: %w", err)
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case !strings.Contains(dsn, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = o.QueryTimeout
	}
	params := cc.RuntimeParams
	if _, ok := params["application_name"]; !ok {
		params["application_name"] = DefaultApplicationName
	}
	st := o.StatementTimeout
	if _, ok := params["statement_timeout"]; ok && st == 0 {
		st = -1 // the DSN's
	}
	if st == 0 {
		st = DefaultStatementTimeout
	}
	if st > 0 {
		ms := strconv.FormatInt(max(st.Milliseconds(), 1), 10)
		params["statement_timeout"] = ms
		params["idle_in_transaction_session_timeout"] = ms
	}
	return cfg, nil
}

// bound returns ctx with the timeout d if it has no deadline.
func bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// bound returns ctx with the store's QueryTimeout if it has no deadline.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return bound(ctx, s.opts.QueryTimeout)
}

// Close stops the Listen goroutines, waits for them, and closes the pool.
// Calls in flight may fail. Close is idempotent. When the database stopped
// answering, Close may wait up to 15 seconds for pgx to give up on each
// connection whose call timed out.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.close()
	s.listeners.Wait()
	s.pool.Close()
	return nil
}
