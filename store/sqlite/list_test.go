package sqlite

import (
	"strings"
	"testing"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/storetest"
	"github.com/mcptasks/mcptasks/task"
)

// TestListPlans checks that each list query walks the index it is meant
// to, and sorts nothing but its page. The store never runs ANALYZE, so the
// plans on an empty database are those on a large one.
func TestListPlans(t *testing.T) {
	t.Parallel()
	s := openTemp(t)
	defer s.Close()
	for _, c := range storetest.ListCases(1000, syntheticEnd) {
		want := "tasks_created"
		switch {
		case c.Params.Principal != "":
			want = "tasks_principal"
		case c.Params.Status == task.Working:
			want = "tasks_claimable"
		case c.Params.Status != "":
			want = "tasks_status"
		}
		t.Run(c.Name, func(t *testing.T) {
			q, err := c.Params.Query()
			if err != nil {
				t.Fatal(err)
			}
			sq := dialect.List(q, columns)
			page := explain(t, s, sq.Page, sq.PageArgs...)
			boundary := explain(t, s, sq.Boundary, sq.BoundaryArgs...)
			for _, plan := range [][]string{page, boundary} {
				walk := ""
				for i, step := range plan {
					if strings.Contains(step, "INDEX "+want) {
						walk = step
					}
					if strings.Contains(step, "TEMP B-TREE") && (i != len(plan)-1 || step != "USE TEMP B-TREE FOR ORDER BY") {
						t.Errorf("plan sorts more than the page: %q", plan)
					}
				}
				if walk == "" {
					t.Errorf("plan does not walk %s: %q", want, plan)
				}
			}
		})
	}
	claimAll, claimArgs := claimQuery(store.ClaimParams{Owner: "w", Limit: 10})
	claimTools, toolArgs := claimQuery(store.ClaimParams{Owner: "w", Tools: []string{"a", "b"}})
	for _, q := range []struct {
		name, sql, want string
		args            []any
	}{
		// Claims leave suspended tasks out by the index they walk.
		{"Claim", claimAll, "tasks_claimable", claimArgs},
		{"ClaimTools", claimTools, "tasks_claimable", toolArgs},
		{"CountTasks", countTasksSQL, "tasks_finished", []any{0, 0}},
		{"Throughput", throughputSQL, "tasks_finished", []any{0, 0}},
		{"ThroughputCreated", throughputSQL, "tasks_created", []any{0, 0}},
		{"Queue", queueSQL, "tasks_claimable", []any{0}},
		{"QueueWaiting", queueSQL, "tasks_status", []any{0}},
	} {
		t.Run(q.name, func(t *testing.T) {
			plan := explain(t, s, q.sql, q.args...)
			if !strings.Contains(strings.Join(plan, "\n"), "INDEX "+q.want) {
				t.Errorf("plan does not read %s: %q", q.want, plan)
			}
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN tasks") && !strings.Contains(step, "INDEX") {
					t.Errorf("plan scans the table: %q", plan)
				}
			}
		})
	}
}
