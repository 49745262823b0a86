// Package sqlite is the embedded, durable Store: one SQLite file in WAL mode with synchronous=FULL, on the pure-Go modernc.org/sqlite driver.
//
// Every write goes through a single connection in a BEGIN IMMEDIATE
// transaction. A create inserts the row; a heartbeat is one fenced UPDATE
// of the lease expiry, which loads nothing; a claim and the other writes
// of a task load it, apply the shared state-machine rules of package store
// and write back only its state columns, never those the create wrote.
// Expired tasks are deleted by one DELETE. Reads use a separate pool of
// read-only connections, which WAL lets run beside the writer. With
// synchronous=FULL a write that returned nil has been synced to disk: it
// survives a crash of the process and of the machine.
//
// Writes are group-committed: those that arrive while one transaction
// commits share the next one and its fsync. Get answers repeated reads of
// an unchanged task from a bounded in-memory cache that this process's
// writes keep exact (see [Options.CacheSize]).
//
// Several processes may open the same file (a server and a worker on one
// machine): SQLite serializes their writes, and a writer waits up to
// [Options.BusyTimeout] for another process's transaction. A cached Get
// sees another process's write at most [Options.CacheMaxStale] late.
//
// Times are kept as unix milliseconds and come back in UTC; durations in
// whole milliseconds. Args, ClientCapabilities and Result are kept byte for
// byte. The values of InputRequests and Answers, and Error.Data, are kept
// byte for byte inside a JSON object, so they must be valid JSON: whitespace
// around a value is dropped, a nil value comes back as null, and a write of
// an invalid value fails.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	sqlitedriver "modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mcptasks/mcptasks/store"
)

// Defaults for a nil or zero [Options].
const (
	// DefaultBusyTimeout is how long a connection waits for a lock held
	// by another process before it fails with SQLITE_BUSY.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultMaxReadConns is the size of the read-only connection pool.
	DefaultMaxReadConns = 4
	// DefaultCacheSize is how many tasks Get keeps in memory.
	DefaultCacheSize = 10_000
	// DefaultCacheBytes bounds the memory of the tasks Get keeps: 64 MiB,
	// about 10,000 tasks of 6 KiB.
	DefaultCacheBytes = 64 << 20
	// DefaultCacheMaxStale bounds how late a cached Get may see a write
	// made by another process on the same file.
	DefaultCacheMaxStale = 10 * time.Millisecond
)

// Options configure [Open]. A nil or zero Options uses the defaults.
type Options struct {
	// BusyTimeout is how long a connection waits for a lock held by
	// another process, and Open for another process's switch of a new
	// file to WAL; zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// MaxReadConns caps the read-only connection pool; zero means
	// DefaultMaxReadConns.
	MaxReadConns int
	// CacheSize is how many tasks Get keeps in memory, so that repeated
	// polls of a task that has not changed need no read transaction; zero
	// means DefaultCacheSize and a negative value turns the cache off. The
	// cache never serves a record older than this process's last write to
	// it; see CacheMaxStale for other processes' writes.
	CacheSize int
	// CacheBytes bounds the memory of the cached tasks, as the sum of
	// their variable-length fields (arguments, result, messages, input
	// requests and answers) plus 512 bytes each; zero means
	// DefaultCacheBytes. A task larger than a sixteenth of it is never
	// cached: its polls read the file.
	CacheBytes int64
	// CacheMaxStale bounds how late Get may see a write made by another
	// process that has the same file open (a worker beside a server): a
	// cached task is served only within CacheMaxStale of a check for such
	// writes. Zero means DefaultCacheMaxStale.
	CacheMaxStale time.Duration
}

// Store is a [store.Store] kept in one SQLite file. It is safe for
// concurrent use; call Close when done.
type Store struct {
	w      *sql.DB // the one write connection: SQLite has one writer
	ws     *writeStmts
	r      *sql.DB   // read-only connections
	get    *sql.Stmt // getSQL on r, prepared once per connection
	getFor *sql.Stmt // getForSQL on r

	cache       *cache // nil when Options.CacheSize < 0
	dataVersion int64  // of w, as last read by the commit loop

	writes    chan write    // to commitLoop
	stop      chan struct{} // closed by Close
	stopped   chan struct{} // closed when commitLoop has returned
	closeOnce sync.Once

	// events announces each change this value commits (see Listen).
	events store.Broadcast
	// listenProbe asks the commit loop to start looking for other
	// processes' writes (Listen).
	listenProbe chan struct{}
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Listener = (*Store)(nil)
)

// Listen implements [store.Listener]: the changes committed through s,
// each announced after its commit. Commits of other processes that share
// the file (a worker beside serve) are noticed through SQLite's
// data_version, checked every 100 ms while someone listens, and announced
// as an [store.EventResync].
func (s *Store) Listen(ctx context.Context) (<-chan store.Event, error) {
	ch, err := s.events.Listen(ctx)
	select {
	case s.listenProbe <- struct{}{}:
	default:
	}
	return ch, err
}

// Open opens the SQLite database at path, creating the file if it does not
// exist, and brings its schema to the latest version. The path is a file
// name, not a URI, and may not contain '?'; ":memory:" is refused because
// the read pool would see another database than the writer.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	o, err := options(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case path == "":
		return nil, errors.New("sqlite: path is empty: name the database file")
	case path == ":memory:":
		return nil, errors.New("sqlite: path :memory: is not supported: use store/memory, or a file")
	case strings.Contains(path, "?"):
		return nil, fmt.Errorf("sqlite: path %q contains '?': use a file name without it", path)
	}
	ms, err := loadMigrations(migrationFS, migrationDir)
	if err != nil {
		return nil, err
	}

	w, err := sql.Open("sqlite", dsn(path, o, "_txlock", "immediate"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	// The first connection switches a new file to WAL, which fails at once
	// while another process switches it: retry as busy_timeout would.
	if err := retryBusy(ctx, o.BusyTimeout, func() error { return checkWAL(ctx, w) }); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := migrate(ctx, w, ms); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}

	r, err := sql.Open("sqlite", dsn(path, o, "_query_only", "1"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(o.MaxReadConns)
	r.SetMaxIdleConns(o.MaxReadConns)
	get, err := r.PrepareContext(ctx, getSQL)
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	getFor, err := r.PrepareContext(ctx, getForSQL)
	if err != nil {
		get.Close()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	ws, err := prepareWrites(ctx, w)
	if err != nil {
		getFor.Close()
		get.Close()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s := &Store{w: w, ws: ws, r: r, get: get, getFor: getFor, writes: make(chan write), stop: make(chan struct{}), stopped: make(chan struct{}), listenProbe: make(chan struct{}, 1)}
	if o.CacheSize > 0 {
		s.cache = newCache(o.CacheSize, o.CacheBytes, o.CacheMaxStale)
		s.checkForeign()
	}
	go s.commitLoop()
	return s, nil
}

// options returns opts with the defaults filled in.
func options(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout < 0 {
		return o, fmt.Errorf("sqlite: Options.BusyTimeout is %v: use zero for the default or a positive duration", o.BusyTimeout)
	}
	if o.CacheBytes < 0 {
		return o, fmt.Errorf("sqlite: Options.CacheBytes is %d: use zero for the default or a positive number (a negative CacheSize turns the cache off)", o.CacheBytes)
	}
	if o.CacheMaxStale < 0 {
		return o, fmt.Errorf("sqlite: Options.CacheMaxStale is %v: use zero for the default or a positive duration", o.CacheMaxStale)
	}
	if o.MaxReadConns < 0 {
		return o, fmt.Errorf("sqlite: Options.MaxReadConns is %d: use zero for the default or a positive number", o.MaxReadConns)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.MaxReadConns == 0 {
		o.MaxReadConns = DefaultMaxReadConns
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.CacheMaxStale == 0 {
		o.CacheMaxStale = DefaultCacheMaxStale
	}
	return o, nil
}

// dsn returns the modernc.org/sqlite data source name for path: the pragmas
// every connection runs when it opens, and the extra key-value pairs.
func dsn(path string, o Options, extra ...string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	for i := 0; i+1 < len(extra); i += 2 {
		q.Add(extra[i], extra[i+1])
	}
	return path + "?" + q.Encode()
}

// checkWAL fails unless the database is in WAL mode: SQLite keeps the old
// journal mode, without an error, where WAL is impossible.
func checkWAL(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, not wal: the file system may not support WAL", mode)
	}
	return nil
}

// Pauses between the tries of a connection that found the file busy
// (retryBusy): the first, and the longest, to which the pause doubles.
const (
	minBusyPause = time.Millisecond
	maxBusyPause = 50 * time.Millisecond
)

// retryBusy calls try until it returns anything but SQLITE_BUSY or
// timeout has passed, with a pause between tries that doubles from
// minBusyPause to maxBusyPause, and returns its last error. It is for what
// SQLite's busy_timeout does not cover: the journal_mode(WAL) pragma of a
// connection to a new file takes the write lock from within a read
// transaction, where SQLite does not wait (that could deadlock), so while
// another process or connection switches the file to WAL it fails at once
// with SQLITE_BUSY, "database is locked".
func retryBusy(ctx context.Context, timeout time.Duration, try func() error) error {
	deadline := time.Now().Add(timeout)
	pause := minBusyPause
	for {
		err := try()
		left := time.Until(deadline)
		if !isBusy(err) || left <= 0 {
			return err
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w while %w", ctx.Err(), err)
		case <-t.C:
		}
		pause = min(2*pause, maxBusyPause)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY: another connection
// holds the lock needed.
func isBusy(err error) bool {
	c, ok := primaryCode(err)
	return ok && c == sqlite3.SQLITE_BUSY
}

// primaryCode returns the primary result code (SQLITE_BUSY, SQLITE_ERROR,
// …, without its extended bits) of err, if err is the driver's.
func primaryCode(err error) (int, bool) {
	var se *sqlitedriver.Error
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code() & 0xff, true
}

// Close closes the database. Calls in flight may fail.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.stopped
	if err := errors.Join(s.get.Close(), s.getFor.Close(), s.r.Close(), s.ws.close(), s.w.Close()); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Ping reports whether the database file can be read.
func (s *Store) Ping(ctx context.Context) error {
	return s.r.PingContext(ctx)
}
