package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// ErrBadCursor is returned by [Lister.List] for a cursor it did not make,
// or made for other filters.
var ErrBadCursor = errors.New("store: bad cursor")

// Bounds of [ListParams].
const (
	// DefaultListLimit is the page size of a zero ListParams.Limit.
	DefaultListLimit = 50
	// MaxListLimit is the largest page List returns.
	MaxListLimit = 500
	// MaxScanLimit, the default ListParams.ScanLimit, is the most tasks
	// one List call examines. It bounds the time of a page whose filters
	// no index serves (Tool, Text, IDPrefix; see BENCHMARKS.md for the
	// measured cost at a million stored tasks).
	MaxScanLimit = 2000
	// MaxListText is the longest ListParams.Text or IDPrefix, in bytes.
	MaxListText = 256
)

// Lister is implemented by stores that can list, search and count their
// tasks: for the operator console, and for a principal's tasks/list. The
// cost of each call is bounded, whatever the number of stored tasks: List
// walks an index and examines at most [ListParams.ScanLimit] tasks, and the
// counts read indexes (BENCHMARKS.md has the measured costs).
type Lister interface {
	// List returns a page of the tasks that match p, newest first
	// (CreatedAt descending, then ID descending: in byte order, or in
	// the database's collation on Postgres), and the cursor of the next
	// page. See [ListParams] for how a page may be short.
	List(ctx context.Context, p ListParams) (*ListPage, error)
	// CountTasks counts the live tasks, and those that finished in a
	// recent window, by tool and status.
	CountTasks(ctx context.Context, p CountParams) (TaskCounts, error)
	// Throughput counts the tasks created and the tasks finished in each
	// minute of a recent window.
	Throughput(ctx context.Context, p ThroughputParams) ([]MinuteCount, error)
	// Queue counts the live tasks by what they wait for, at now.
	Queue(ctx context.Context, now time.Time) (*QueueCounts, error)
}

// ListParams are the parameters of [Lister.List]. Zero fields do not
// filter. A task is listed when it matches every filter that is set.
//
// One call examines at most ScanLimit tasks, in the page's order from the
// cursor; which ones count depends on the store's indexes (the SQL stores
// walk an index of Principal, else of Status, else of CreatedAt alone, and
// check the other filters on the tasks they examine). So a page may hold
// fewer than Limit tasks, or none, and still have a Next cursor: the
// examined tasks ran out before the page filled. Following Next until it
// is empty lists every matching task once, in order.
type ListParams struct {
	// Principal lists only the tasks of this principal.
	Principal string
	// Status lists only the tasks in this status.
	Status task.Status
	// Tool lists only the tasks of this tool.
	Tool string
	// CreatedAfter and CreatedBefore bound CreatedAt: CreatedAfter <=
	// CreatedAt < CreatedBefore.
	CreatedAfter, CreatedBefore time.Time
	// IDPrefix lists only the tasks whose ID starts with it (bytes).
	// Ids made by task.NewID begin with their creation time:
	// task.IDTimeRange turns a prefix into CreatedAfter and CreatedBefore
	// bounds that narrow the scan.
	IDPrefix string
	// Text lists only the tasks whose status message contains it,
	// ignoring the case of ASCII letters.
	Text string
	// Now, if set, leaves out the tasks whose TTL has elapsed at Now, as
	// tasks/get does.
	Now time.Time

	// Cursor continues a listing: the Next of the previous page, listed
	// with the same filters; Now, CreatedAfter and CreatedBefore may
	// change (the page goes on from the cursor within the new bounds).
	// Empty for the first page.
	Cursor string
	// Limit is the most tasks in the page: 0 means DefaultListLimit, and
	// more than MaxListLimit is an error.
	Limit int
	// ScanLimit is the most tasks the call examines: 0 means
	// MaxScanLimit, and more is an error.
	ScanLimit int
}

// ListPage is a page of [Lister.List].
type ListPage struct {
	// Tasks are the matching tasks, newest first.
	Tasks []*task.Record
	// Next is the cursor of the next page, or empty when no task is left
	// to examine.
	Next string
}

// ListQuery is a checked [ListParams] with its cursor decoded, what a
// store's List works from; see [ListParams.Query].
type ListQuery struct {
	ListParams
	// After is true when the page continues a listing: it starts after
	// the task created at AfterCreated with the id AfterID (exclusive).
	After        bool
	AfterCreated time.Time
	AfterID      string
}

// Query checks p and decodes its cursor. Its errors name the field at fault;
// a cursor it cannot use wraps ErrBadCursor.
func (p ListParams) Query() (*ListQuery, error) {
	switch {
	case p.Limit < 0 || p.Limit > MaxListLimit:
		return nil, fmt.Errorf("store: ListParams.Limit is %d: use 1 to %d, or 0 for %d", p.Limit, MaxListLimit, DefaultListLimit)
	case p.ScanLimit < 0 || p.ScanLimit > MaxScanLimit:
		return nil, fmt.Errorf("store: ListParams.ScanLimit is %d: use 1 to %d, or 0 for %[2]d", p.ScanLimit, MaxScanLimit)
	case p.Status != "" && !p.Status.Valid():
		return nil, fmt.Errorf("store: ListParams.Status %q is not a task status", p.Status)
	case len(p.Text) > MaxListText:
		return nil, fmt.Errorf("store: ListParams.Text is %d bytes long: at most %d", len(p.Text), MaxListText)
	case len(p.IDPrefix) > MaxListText:
		return nil, fmt.Errorf("store: ListParams.IDPrefix is %d bytes long: at most %d", len(p.IDPrefix), MaxListText)
	}
	q := &ListQuery{ListParams: p}
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	if q.ScanLimit == 0 {
		q.ScanLimit = MaxScanLimit
	}
	if p.Cursor == "" {
		return q, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(p.Cursor)
	var c cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == "" {
		return nil, fmt.Errorf("%w: %q is not a cursor that List returned", ErrBadCursor, p.Cursor)
	}
	if c.Filters != p.filterHash() {
		return nil, fmt.Errorf("%w: the cursor was made for other filters; start again without it", ErrBadCursor)
	}
	q.After, q.AfterCreated, q.AfterID = true, time.UnixMilli(c.Created).UTC(), c.ID
	return q, nil
}

// cursor is the content of a ListPage.Next: the position of the last task
// examined, and a hash of the filters it belongs to.
type cursor struct {
	Created int64  `json:"t"`
	ID      string `json:"i"`
	Filters string `json:"f"`
}

// filterHash identifies the filters of p, so that a cursor is not used
// with others. The time bounds are not among them: a listing of "the last
// hour" may go on while the hour moves.
func (p ListParams) filterHash() string {
	h := fnv.New64a()
	for _, s := range []string{p.Principal, string(p.Status), p.Tool, p.IDPrefix, p.Text} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Cursor returns the cursor of a page that ends with the task created at
// created with the id: the next page starts after it.
func (q *ListQuery) Cursor(created time.Time, id string) string {
	b, _ := json.Marshal(cursor{Created: created.UnixMilli(), ID: id, Filters: q.filterHash()})
	return base64.RawURLEncoding.EncodeToString(b)
}

// Before reports whether a task created at created with the id comes after
// the cursor's position in the order of a listing (newest first): whether
// a page that continues from the cursor may hold it.
func (q *ListQuery) Before(created time.Time, id string) bool {
	if !q.After {
		return true
	}
	if c := created.Compare(q.AfterCreated); c != 0 {
		return c < 0
	}
	return id < q.AfterID
}

// InRange reports whether r lies in the part of the listing the page
// walks: after the cursor, within CreatedAfter and CreatedBefore.
func (q *ListQuery) InRange(r *task.Record) bool {
	return q.Before(r.CreatedAt, r.ID) &&
		(q.CreatedAfter.IsZero() || !r.CreatedAt.Before(q.CreatedAfter)) &&
		(q.CreatedBefore.IsZero() || r.CreatedAt.Before(q.CreatedBefore))
}

// Matches reports whether r matches every filter of q, the cursor aside.
func (q *ListQuery) Matches(r *task.Record) bool {
	return (q.Principal == "" || r.Principal == q.Principal) &&
		(q.Status == "" || r.Status == q.Status) &&
		(q.Tool == "" || r.Tool == q.Tool) &&
		(q.CreatedAfter.IsZero() || !r.CreatedAt.Before(q.CreatedAfter)) &&
		(q.CreatedBefore.IsZero() || r.CreatedAt.Before(q.CreatedBefore)) &&
		strings.HasPrefix(r.ID, q.IDPrefix) &&
		(q.Text == "" || ContainsFold(r.StatusMessage, q.Text)) &&
		(q.Now.IsZero() || !r.Expired(q.Now))
}

// ContainsFold reports whether s contains substr, ignoring the case of
// ASCII letters (and only theirs), as every store's text search does.
func ContainsFold(s, substr string) bool {
	return strings.Contains(LowerASCII(s), LowerASCII(substr))
}

// LowerASCII returns s with its ASCII letters, and only those, in lower
// case: SQLite's lower() without ICU, and Postgres's in the C collation.
func LowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// CountParams are the parameters of [Lister.CountTasks].
type CountParams struct {
	// Now is the time of the count: live tasks whose TTL has elapsed at
	// Now are left out.
	Now time.Time
	// FinishedSince is the start of the window of finished tasks; it may
	// be at most MaxWindow before Now. The cost of the count grows with
	// the number of tasks finished in the window.
	FinishedSince time.Time
}

// TaskCounts counts tasks by tool, then by status: the live ones
// (working, input_required) at CountParams.Now, and the completed, failed
// and cancelled ones that finished in the window. Missing entries are
// zero.
type TaskCounts map[string]map[task.Status]int

// Add adds n tasks of the tool in the status.
func (c TaskCounts) Add(tool string, s task.Status, n int) {
	if c[tool] == nil {
		c[tool] = map[task.Status]int{}
	}
	c[tool][s] += n
}

// ByStatus sums the counts of every tool.
func (c TaskCounts) ByStatus() map[task.Status]int {
	m := map[task.Status]int{}
	for _, byStatus := range c {
		for s, n := range byStatus {
			m[s] += n
		}
	}
	return m
}

// Counted reports whether r counts in a count with p, as CountTasks
// counts.
func (p CountParams) Counted(r *task.Record) bool {
	if r.Status.Terminal() {
		return !r.UpdatedAt.Before(p.FinishedSince)
	}
	return !r.Expired(p.Now)
}

// Check returns an error naming the field of p at fault, if any.
func (p CountParams) Check() error {
	return checkWindow("CountParams.FinishedSince", p.FinishedSince, p.Now)
}

// checkWindow checks a window from since to now.
func checkWindow(field string, since, now time.Time) error {
	switch {
	case now.Before(since):
		return fmt.Errorf("store: %s %v is after Now %v", field, since, now)
	case now.Sub(since) > MaxWindow:
		return fmt.Errorf("store: %s is %v before Now: at most %v", field, now.Sub(since), MaxWindow)
	}
	return nil
}

// ThroughputParams are the parameters of [Lister.Throughput].
type ThroughputParams struct {
	// Since is the start of the window; it is rounded down to a minute.
	Since time.Time
	// Now is its end.
	Now time.Time
}

// MinuteCount is what happened in one minute.
type MinuteCount struct {
	// Minute is the start of the minute, in UTC.
	Minute time.Time
	// Created counts the tasks created in the minute.
	Created int
	// Finished counts the tasks that ended (completed, failed or
	// cancelled) in the minute, by the time of their last update.
	Finished int
}

// QueueCounts counts the live tasks by what they wait for.
type QueueCounts struct {
	// Claimable tasks wait for a worker: no lease, or an expired one
	// (its worker was lost), and not suspended.
	Claimable int
	// Running tasks are working under a live lease.
	Running int
	// WaitingForInput tasks are input_required and still held by the
	// worker that asked.
	WaitingForInput int
	// Suspended tasks are input_required and held by no worker: they
	// wait for an answer, with no handler parked.
	Suspended int
	// OldestClaimable is when the oldest claimable task was created;
	// zero when none is claimable.
	OldestClaimable time.Time
}

// MaxWindow is the longest window of [Lister.Throughput] and
// [Lister.CountTasks].
const MaxWindow = 24 * time.Hour

// Minutes are the MinuteCounts of a window, one per minute, oldest first.
type Minutes []MinuteCount

// NewMinutes returns the zero counts of the window of p: one per minute,
// from the minute of p.Since to the minute of p.Now. A window that ends
// before it starts, or is longer than MaxWindow, is an error.
func NewMinutes(p ThroughputParams) (Minutes, error) {
	since, now := p.Since.UTC().Truncate(time.Minute), p.Now.UTC()
	if err := checkWindow("ThroughputParams.Since", since, now); err != nil {
		return nil, err
	}
	ms := make(Minutes, int(now.Sub(since)/time.Minute)+1)
	for i := range ms {
		ms[i].Minute = since.Add(time.Duration(i) * time.Minute)
	}
	return ms, nil
}

// Add counts created and finished tasks at t, if t falls in the window.
func (ms Minutes) Add(t time.Time, created, finished int) {
	if len(ms) == 0 || t.Before(ms[0].Minute) {
		return
	}
	if i := int(t.Sub(ms[0].Minute) / time.Minute); i < len(ms) {
		ms[i].Created += created
		ms[i].Finished += finished
	}
}

// Add counts r, at now, in the queue counts it belongs to, if any. It is
// the rule that every store's Queue follows.
func (q *QueueCounts) Add(r *task.Record, now time.Time) {
	if r.Status.Terminal() || r.Expired(now) {
		return
	}
	held := r.LeaseOwner != "" && now.Before(r.LeaseExpiresAt)
	switch {
	case held && r.Status == task.Working:
		q.Running++
	case held:
		q.WaitingForInput++
	case Suspended(r):
		q.Suspended++
	default:
		q.Claimable++
		if q.OldestClaimable.IsZero() || r.CreatedAt.Before(q.OldestClaimable) {
			q.OldestClaimable = r.CreatedAt
		}
	}
}
