package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// taskServer answers tools/call with a new task t1, t2, … and tasks/get
// with working until the task has been polled workingPolls times.
type taskServer struct {
	mu      sync.Mutex
	created int
	polls   map[string]int
}

const workingPolls = 3

func (s *taskServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var id, status string
	switch req.Method {
	case "tools/call":
		s.created++
		id, status = fmt.Sprintf("t%d", s.created), "working"
	case "tasks/get":
		id = req.Params.TaskID
		s.polls[id]++
		status = "working"
		if s.polls[id] > workingPolls {
			status = "input_required"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"resultType":"task","taskId":%q,"status":%q}}`, req.ID, id, status)
}

// TestSettle: a create run with Settle polls the last task of each worker
// until it is no longer working, and counts that time; without it, no
// task is polled.
func TestSettle(t *testing.T) {
	for _, tt := range []struct {
		settle bool
		polled int // tasks polled: one per worker with Settle
	}{
		{false, 0},
		{true, 2},
	} {
		t.Run(fmt.Sprint("Settle=", tt.settle), func(t *testing.T) {
			s := &taskServer{polls: map[string]int{}}
			srv := httptest.NewServer(s)
			defer srv.Close()
			r, err := Run(context.Background(), Config{URL: srv.URL, Mode: ModeCreate, Concurrency: 2, Requests: 12, Tool: "ask", Settle: tt.settle})
			if err != nil {
				t.Fatal(err)
			}
			if r.Ops != 12 || r.Errors != 0 {
				t.Fatalf("ops %d, errors %d (%s); want 12, 0", r.Ops, r.Errors, r.FirstError)
			}
			var polled []string
			for id, n := range s.polls {
				polled = append(polled, id)
				if n != workingPolls+1 {
					t.Errorf("task %s polled %d times, want %d", id, n, workingPolls+1)
				}
			}
			// The last operation of each worker started once every
			// operation before the last two had ended.
			slices.Sort(polled)
			if len(polled) != tt.polled || slices.ContainsFunc(polled, func(id string) bool { return !slices.Contains([]string{"t9", "t10", "t11", "t12"}, id) }) {
				t.Errorf("polled %v, want %d of the last tasks created (t9 to t12)", polled, tt.polled)
			}
			if wantReqs := int64(12 + tt.polled*(workingPolls+1)); r.Requests != wantReqs {
				t.Errorf("%d requests, want %d", r.Requests, wantReqs)
			}
			if (r.Settle > 0) != tt.settle || r.Settle > r.Elapsed {
				t.Errorf("settle %v of %v elapsed, want it counted only with Settle", r.Settle, r.Elapsed)
			}
		})
	}
}
