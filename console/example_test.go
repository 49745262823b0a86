package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"time"

	"github.com/mcptasks/mcptasks/console"
	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/task"
)

// Example serves the console of a store to the local operator (no tokens:
// loopback only) and lists its tasks waiting for input.
func Example() {
	st := memory.New()
	now := time.Now().UTC().Truncate(time.Millisecond)
	err := st.Create(context.Background(), &task.Record{
		ID: task.NewIDAt(now), Principal: "alice", Tool: "export_report",
		Status: task.InputRequired, StatusMessage: "Overwrite report.csv?", CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(st, nil, &engine.Options{Workers: -1}) // it runs nothing; the console cancels through it
	if err != nil {
		panic(err)
	}
	con, err := console.New(st, eng, nil)
	if err != nil {
		panic(err)
	}

	res := httptest.NewRecorder()
	con.ServeHTTP(res, httptest.NewRequest("GET", "http://127.0.0.1:8090/tasks?status=input_required", nil))
	fmt.Println(res.Code, res.Header().Get("Content-Type"))
	for _, m := range regexp.MustCompile(`<td class="message">([^<]*)</td>`).FindAllStringSubmatch(res.Body.String(), -1) {
		fmt.Println(strings.TrimSpace(m[1]))
	}
	// Output:
	// 200 text/html; charset=utf-8
	// Overwrite report.csv?
}
