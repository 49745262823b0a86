package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// testList checks store.Lister, for stores that implement it.
func testList(t *testing.T, f factory) {
	t.Run("Pages", func(t *testing.T) { testListPages(t, f) })
	t.Run("ScanLimit", func(t *testing.T) { testListScanLimit(t, f) })
	t.Run("Errors", func(t *testing.T) { testListErrors(t, f) })
	t.Run("Copies", func(t *testing.T) { testListCopies(t, f) })
	t.Run("CountTasks", func(t *testing.T) { testCountTasks(t, f) })
	t.Run("Throughput", func(t *testing.T) { testThroughput(t, f) })
	t.Run("Queue", func(t *testing.T) { testQueue(t, f) })
}

// lister opens a fresh store and returns it as a store.Lister, or skips t.
func lister(t *testing.T, f factory) (store.Store, store.Lister) {
	t.Helper()
	s := f.open(t)
	l, ok := s.(store.Lister)
	if !ok {
		t.Skip("the store does not implement store.Lister")
	}
	return s, l
}

// listFixture creates 24 tasks for the list tests and returns them: created
// 0 to 11 seconds after t0, two in each second (ties broken by id), by
// alice and bob in turn, of the tools "echo" and "sum", in every status,
// with status messages "step N" or "Report ready", and one expired at
// at(time.Minute).
func listFixture(t *testing.T, s store.Store) []*task.Record {
	t.Helper()
	var rs []*task.Record
	for i := range 24 {
		r := newTask(fmt.Sprintf("t%02d", i))
		r.CreatedAt = at(time.Duration(i/2) * time.Second)
		r.UpdatedAt = r.CreatedAt
		if i%2 == 1 {
			r.Principal = bob
		}
		if i%3 == 0 {
			r.Tool = "sum"
		}
		r.Status = []task.Status{task.Working, task.InputRequired, task.Completed, task.Failed, task.Cancelled}[i%5]
		r.StatusMessage = fmt.Sprintf("step %d", i)
		if i%4 == 0 {
			r.StatusMessage = "Report READY"
		}
		if r.Status == task.InputRequired {
			r.InputRequests = raws("a", reqA)
		}
		if i == 20 {
			r.TTL = time.Minute - r.CreatedAt.Sub(t0) // expires at at(time.Minute)
		}
		rs = append(rs, r)
	}
	// Created in shuffled order: the list's order is the store's doing.
	for _, i := range []int{5, 0, 23, 12, 1, 7, 18, 2, 9, 14, 3, 21, 10, 16, 4, 20, 8, 22, 6, 11, 13, 19, 15, 17} {
		create(t, s, rs[i])
	}
	return rs
}

// listAll follows the cursors of a listing with p to its end and returns
// the ids listed, checking that no page holds more than the limit.
func listAll(t *testing.T, l store.Lister, p store.ListParams) (ids []string, pages int) {
	t.Helper()
	limit := cmpOr(p.Limit, store.DefaultListLimit)
	for {
		page, err := l.List(context.Background(), p)
		if err != nil {
			t.Fatalf("List(%+v): %v", p, err)
		}
		pages++
		if len(page.Tasks) > limit {
			t.Fatalf("List(%+v) returned %d tasks, more than the limit %d", p, len(page.Tasks), limit)
		}
		for _, r := range page.Tasks {
			ids = append(ids, r.ID)
		}
		if page.Next == "" {
			return ids, pages
		}
		if pages > 100 {
			t.Fatalf("List(%+v): more than 100 pages", p)
		}
		p.Cursor = page.Next
	}
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// newestFirst returns the ids of rs that match keep, newest first, ties
// by id descending.
func newestFirst(rs []*task.Record, keep func(r *task.Record) bool) []string {
	var m []*task.Record
	for _, r := range rs {
		if keep(r) {
			m = append(m, r)
		}
	}
	slices.SortFunc(m, func(a, b *task.Record) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	ids := []string{}
	for _, r := range m {
		ids = append(ids, r.ID)
	}
	return ids
}

func testListPages(t *testing.T, f factory) {
	t.Parallel()
	s, l := lister(t, f)
	rs := listFixture(t, s)
	tests := []struct {
		name string
		p    store.ListParams
		want func(r *task.Record) bool
	}{
		{"All", store.ListParams{}, func(*task.Record) bool { return true }},
		{"Principal", store.ListParams{Principal: bob}, func(r *task.Record) bool { return r.Principal == bob }},
		{"UnknownPrincipal", store.ListParams{Principal: "carol"}, func(*task.Record) bool { return false }},
		{"Working", store.ListParams{Status: task.Working}, func(r *task.Record) bool { return r.Status == task.Working }},
		{"InputRequired", store.ListParams{Status: task.InputRequired}, func(r *task.Record) bool { return r.Status == task.InputRequired }},
		{"Failed", store.ListParams{Status: task.Failed}, func(r *task.Record) bool { return r.Status == task.Failed }},
		{"PrincipalStatus", store.ListParams{Principal: alice, Status: task.Completed}, func(r *task.Record) bool {
			return r.Principal == alice && r.Status == task.Completed
		}},
		{"PrincipalWorking", store.ListParams{Principal: bob, Status: task.Working}, func(r *task.Record) bool {
			return r.Principal == bob && r.Status == task.Working
		}},
		{"Tool", store.ListParams{Tool: "sum"}, func(r *task.Record) bool { return r.Tool == "sum" }},
		{"ToolStatus", store.ListParams{Tool: "echo", Status: task.Cancelled}, func(r *task.Record) bool {
			return r.Tool == "echo" && r.Status == task.Cancelled
		}},
		{"CreatedWindow", store.ListParams{CreatedAfter: at(3 * time.Second), CreatedBefore: at(7 * time.Second)}, func(r *task.Record) bool {
			return !r.CreatedAt.Before(at(3*time.Second)) && r.CreatedAt.Before(at(7*time.Second))
		}},
		{"TextIgnoresCase", store.ListParams{Text: "report ready"}, func(r *task.Record) bool { return r.StatusMessage == "Report READY" }},
		{"TextInside", store.ListParams{Text: "EP 1"}, func(r *task.Record) bool { return strings.HasPrefix(r.StatusMessage, "step 1") }},
		{"IDPrefix", store.ListParams{IDPrefix: "t1"}, func(r *task.Record) bool { return strings.HasPrefix(r.ID, "t1") }},
		{"IDExact", store.ListParams{IDPrefix: "t07"}, func(r *task.Record) bool { return r.ID == "t07" }},
		{"NotExpired", store.ListParams{Now: at(time.Minute)}, func(r *task.Record) bool { return r.ID != "t20" }},
		{"Everything", store.ListParams{Principal: alice, Tool: "echo", Text: "step", CreatedBefore: at(11 * time.Second), Now: at(time.Minute)},
			func(r *task.Record) bool {
				return r.Principal == alice && r.Tool == "echo" && strings.HasPrefix(r.StatusMessage, "step") &&
					r.CreatedAt.Before(at(11*time.Second)) && r.ID != "t20"
			}},
	}
	for _, tt := range tests {
		want := newestFirst(rs, tt.want)
		for _, size := range []struct{ limit, scan int }{{0, 0}, {1, 0}, {3, 0}, {2, 1}, {3, 4}, {500, 5}} {
			t.Run(fmt.Sprintf("%s/Limit%d/Scan%d", tt.name, size.limit, size.scan), func(t *testing.T) {
				p := tt.p
				p.Limit, p.ScanLimit = size.limit, size.scan
				got, pages := listAll(t, l, p)
				if !slices.Equal(got, want) {
					t.Errorf("listed %q, want %q", got, want)
				}
				if size.scan == 0 && len(want) <= cmpOr(size.limit, store.DefaultListLimit) && pages != 1 {
					t.Errorf("%d matches took %d pages, want 1", len(want), pages)
				}
			})
		}
	}
}

// testListScanLimit checks that a page whose scan runs out is short, with a
// cursor, and that a full page stops at the limit.
func testListScanLimit(t *testing.T, f factory) {
	t.Parallel()
	s, l := lister(t, f)
	listFixture(t, s)
	ctx := context.Background()
	// Only t03, created a second after t0, says "step 3": no index finds
	// it, and a scan of 3 tasks from the newest does not reach it.
	p := store.ListParams{Text: "step 3", ScanLimit: 3}
	page, err := l.List(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tasks) != 0 || page.Next == "" {
		t.Fatalf("first page of a scan of 3 = %d tasks, next %q; want none and a cursor", len(page.Tasks), page.Next)
	}
	if ids, _ := listAll(t, l, p); !slices.Equal(ids, []string{"t03"}) {
		t.Fatalf("following the cursors listed %q, want t03", ids)
	}
	// A full page: two of the six "Report READY" tasks, and a cursor.
	page, err = l.List(ctx, store.ListParams{Text: "ready", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ids := taskIDs(page.Tasks); !slices.Equal(ids, []string{"t20", "t16"}) || page.Next == "" {
		t.Fatalf("List(Limit 2) = %q, next %q; want t20 t16 and a cursor", ids, page.Next)
	}
	// The last page of a listing that fits has no cursor.
	page, err = l.List(ctx, store.ListParams{Principal: alice, Status: task.InputRequired})
	if err != nil {
		t.Fatal(err)
	}
	if ids := taskIDs(page.Tasks); !slices.Equal(ids, []string{"t16", "t06"}) || page.Next != "" {
		t.Fatalf("List(alice, input_required) = %q, next %q; want t16 t06 and no cursor", ids, page.Next)
	}
}

func taskIDs(rs []*task.Record) []string {
	ids := []string{}
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func testListErrors(t *testing.T, f factory) {
	t.Parallel()
	s, l := lister(t, f)
	listFixture(t, s)
	ctx := context.Background()
	page, err := l.List(ctx, store.ListParams{Status: task.Working, Limit: 1})
	if err != nil || page.Next == "" {
		t.Fatalf("List = %v, %v; want a page with a cursor", page, err)
	}
	tests := []struct {
		name      string
		p         store.ListParams
		badCursor bool
		field     string // named in the error
	}{
		{"Garbage", store.ListParams{Cursor: "not a cursor"}, true, "cursor"},
		{"Base64NotJSON", store.ListParams{Cursor: "bm90IGpzb24"}, true, "cursor"},
		{"OtherFilters", store.ListParams{Status: task.Failed, Cursor: page.Next}, true, "other filters"},
		{"NegativeLimit", store.ListParams{Limit: -1}, false, "Limit"},
		{"LimitTooLarge", store.ListParams{Limit: store.MaxListLimit + 1}, false, "Limit"},
		{"ScanTooLarge", store.ListParams{ScanLimit: store.MaxScanLimit + 1}, false, "ScanLimit"},
		{"BadStatus", store.ListParams{Status: "done"}, false, "Status"},
		{"LongText", store.ListParams{Text: strings.Repeat("x", store.MaxListText+1)}, false, "Text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.List(ctx, tt.p)
			if err == nil {
				t.Fatal("List succeeded, want an error")
			}
			if errors.Is(err, store.ErrBadCursor) != tt.badCursor {
				t.Errorf("List: %v; errors.Is(ErrBadCursor) = %v, want %v", err, !tt.badCursor, tt.badCursor)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("List: %v, want it to name %q", err, tt.field)
			}
		})
	}
	// The cursor still works with its own filters, and the time bounds
	// may move.
	if _, err := l.List(ctx, store.ListParams{Status: task.Working, Limit: 1, Cursor: page.Next, Now: at(time.Hour), CreatedAfter: at(time.Second)}); err != nil {
		t.Errorf("List with its own cursor: %v", err)
	}
}

func testListCopies(t *testing.T, f factory) {
	t.Parallel()
	s, l := lister(t, f)
	create(t, s, newTask("t1"))
	page, err := l.List(context.Background(), store.ListParams{})
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("List = %v, %v", page, err)
	}
	wantRecord(t, "List", page.Tasks[0], newTask("t1"))
	page.Tasks[0].Args[0] = '['
	page.Tasks[0].Status = task.Failed
	wantStored(t, s, newTask("t1"))
}

func testCountTasks(t *testing.T, f factory) {
	t.Parallel()
	s, l := lister(t, f)
	rs := listFixture(t, s)
	p := store.CountParams{Now: at(time.Minute), FinishedSince: at(5 * time.Second)}
	got, err := l.CountTasks(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// Live tasks but t20, expired at Now; finished ones updated (created)
	// 5 s or more after t0.
	want := store.TaskCounts{}
	for _, r := range rs {
		if r.Status.Terminal() && r.UpdatedAt.Sub(t0) >= 5*time.Second || !r.Status.Terminal() && r.ID != "t20" {
			want.Add(r.Tool, r.Status, 1)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CountTasks = %v, want %v", got, want)
	}
	if fmt.Sprint(got.ByStatus()) != fmt.Sprint(map[task.Status]int{task.Working: 4, task.InputRequired: 5, task.Completed: 3, task.Failed: 3, task.Cancelled: 2}) {
		t.Errorf("ByStatus = %v", got.ByStatus())
	}
	for _, bad := range []store.CountParams{
		{Now: at(0), FinishedSince: at(time.Second)},
		{Now: at(store.MaxWindow + time.Second), FinishedSince: at(0)},
	} {
		if _, err := l.CountTasks(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "FinishedSince") {
			t.Errorf("CountTasks(%+v) = %v, want an error naming FinishedSince", bad, err)
		}
	}
}

func testThroughput(t *testing.T, f factory) {
	t.Parallel()
	s, l := lister(t, f)
	// Created at 0, 30, 60 and 150 s past t0 (a whole minute); finished
	// 70 s after creation but the last, which is working.
	for i, sec := range []int{0, 30, 60, 150} {
		r := newTask(fmt.Sprintf("t%d", i))
		r.CreatedAt = at(time.Duration(sec) * time.Second)
		r.UpdatedAt = r.CreatedAt.Add(70 * time.Second)
		r.Status = task.Completed
		if i == 3 {
			r.Status, r.UpdatedAt = task.Working, r.CreatedAt
		}
		create(t, s, r)
	}
	got, err := l.Throughput(context.Background(), store.ThroughputParams{Since: at(59 * time.Second), Now: at(4 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// The window starts at the minute of Since (t0), and the task created
	// at t0 finished in the second minute.
	want := []store.MinuteCount{
		{Minute: at(0), Created: 2, Finished: 0},
		{Minute: at(time.Minute), Created: 1, Finished: 2},
		{Minute: at(2 * time.Minute), Created: 1, Finished: 1},
		{Minute: at(3 * time.Minute)},
		{Minute: at(4 * time.Minute)},
	}
	if len(got) != len(want) {
		t.Fatalf("Throughput = %+v, want %+v", got, want)
	}
	for i := range want {
		if !got[i].Minute.Equal(want[i].Minute) || got[i].Created != want[i].Created || got[i].Finished != want[i].Finished {
			t.Errorf("minute %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := l.Throughput(context.Background(), store.ThroughputParams{Since: at(0), Now: at(store.MaxWindow + time.Hour)}); err == nil {
		t.Error("Throughput over more than MaxThroughputWindow succeeded")
	}
}

func testQueue(t *testing.T, f factory) {
	t.Parallel()
	s, l := lister(t, f)
	now := at(time.Minute)
	held := func(r *task.Record) { r.LeaseOwner, r.LeaseExpiresAt, r.Attempt = "w1", now.Add(time.Second), 1 }
	lost := func(r *task.Record) { r.LeaseOwner, r.LeaseExpiresAt, r.Attempt = "w1", now, 1 }
	asks := func(r *task.Record) { r.Status, r.InputRequests = task.InputRequired, raws("a", reqA) }
	expire := func(r *task.Record) { r.TTL = time.Second }
	tasks := []struct {
		id    string
		at    time.Duration
		setup []func(r *task.Record)
	}{
		{"queued", 5 * time.Second, nil},
		{"lost", 2 * time.Second, []func(*task.Record){lost}}, // the oldest claimable
		{"askedlost", 3 * time.Second, []func(*task.Record){asks, lost}},
		{"running", 0, []func(*task.Record){held}},
		{"running2", time.Second, []func(*task.Record){held}},
		{"waiting", 0, []func(*task.Record){asks, held}},
		{"suspended", 0, []func(*task.Record){asks}},
		{"done", 0, []func(*task.Record){func(r *task.Record) { r.Status = task.Completed }}},
		{"expired", 0, []func(*task.Record){expire}},
		{"expiredsuspended", 0, []func(*task.Record){asks, expire}},
		{"expiredwaiting", 0, []func(*task.Record){asks, held, expire}},
	}
	for _, tt := range tasks {
		r := newTask(tt.id)
		r.CreatedAt = at(tt.at)
		for _, fn := range tt.setup {
			fn(r)
		}
		create(t, s, r)
	}
	got, err := l.Queue(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	want := store.QueueCounts{Claimable: 3, Running: 2, WaitingForInput: 1, Suspended: 1, OldestClaimable: at(2 * time.Second)}
	if !got.OldestClaimable.Equal(want.OldestClaimable) {
		t.Errorf("OldestClaimable = %v, want %v", got.OldestClaimable, want.OldestClaimable)
	}
	got.OldestClaimable = want.OldestClaimable
	if *got != want {
		t.Errorf("Queue = %+v, want %+v", *got, want)
	}
}
