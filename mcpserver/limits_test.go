package mcpserver_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mcptasks/mcptasks/mcpserver"
)

// deepBody returns a tools/call of tool whose arguments hold arrays nested
// depth levels deep: 195 KiB for 100,000 levels.
func deepBody(tool string, depth int) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":$META,"name":"` + tool +
		`","arguments":{"seconds":1,"label":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}}`
}

// TestLimits_DeepBodiesWhilePolling sends bodies nested 100,000 levels
// deep, to a task tool and to a go-sdk tool, from several clients at once,
// while another polls a task: every deep body is refused with -32602
// naming the limit, and every poll is answered. (Before the limit, each
// such body took minutes of CPU; BenchmarkDeepBody measures the refusal.)
func TestLimits_DeepBodiesWhilePolling(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{})
	id := c.createTask(t, "", "slow_compute", `{"seconds":60,"label":"poll me"}`)
	const senders, bodies, polls = 4, 5, 40
	var wg sync.WaitGroup
	for i := range senders {
		tool := []string{"slow_compute", "json_schema_2020_12_tool"}[i%2]
		wg.Go(func() {
			for range bodies {
				resp := c.rpc(t, "", "tools/call", tool, deepBody(tool, 100_000))
				rep := resp.reply(t)
				if resp.status != http.StatusBadRequest || rep.Error == nil || rep.Error.Code != -32602 ||
					!strings.Contains(rep.Error.Message, "more than 64 levels deep; the limit is 64 levels (MaxJSONDepth)") {
					t.Errorf("deep body to %s: HTTP %d %s", tool, resp.status, rep.raw)
				}
			}
		})
	}
	for range polls {
		if _, rep := c.getTask(t, "", id); rep.Error != nil {
			t.Errorf("tasks/get while deep bodies arrive: %s", rep.raw)
		}
	}
	wg.Wait()
}

// BenchmarkDeepBody measures how long the server takes to refuse a
// task-creating tools/call whose arguments nest 10,000 and 100,000 levels
// deep (20 and 195 KiB), handler only, through the guard's scan.
func BenchmarkDeepBody(b *testing.B) {
	h := benchHandler(b, nil)
	for _, depth := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			body := expandMeta(deepBody("wait", depth))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if rec := postRequest(h, "tools/call", "wait", body); rec.Code != http.StatusBadRequest {
					b.Fatalf("HTTP %d: %.200s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// TestLimits_Counts: bodies of many tiny members are refused with -32602
// naming the bound before they are decoded: a tasks/update of more than
// 1024 answers, a subscription of more than four times MaxSubscribedTasks
// ids. A 2025-11-25 task's arguments are bounded by MaxArgumentsBytes as
// a 2026-07-28 call's are.
func TestLimits_Counts(t *testing.T) {
	t.Parallel()
	c := startServer(t, serverConfig{maxArgumentsBytes: 100, tokens: mcpserver.Tokens{"a-token": "alice"}})
	id := c.createTask(t, "a-token", "confirm_delete", `{"filename":"notes.txt"}`)
	c.waitStatus(t, "a-token", id, "input_required", nil)
	members := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ",")
	}
	answers := members(1025, func(i int) string { return fmt.Sprintf(`"k%d":{}`, i) })
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"_meta":$META,"taskId":%q,"inputResponses":{%s}}}`, id, answers)
	if rep := c.rpc(t, "a-token", "tasks/update", id, body).reply(t); rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, "more than 1024 responses") {
		t.Errorf("tasks/update of 1025 answers: %s", rep.raw)
	}
	ids := members(4001, func(i int) string { return fmt.Sprintf(`"id%d"`, i) })
	body = `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"_meta":$META,"notifications":{"taskIds":[` + ids + `]}}}`
	if rep := c.rpc(t, "a-token", "subscriptions/listen", "", body).reply(t); rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, "at most 1000 task ids") {
		t.Errorf("subscriptions/listen of 4001 ids: %s", rep.raw)
	}
	s := initialize(t, c, "a-token")
	rep := s.call("tools/call", `{"name":"slow_compute","arguments":{"seconds":1,"label":"`+strings.Repeat("x", 200)+`"},"task":{}}`)
	if rep.Error == nil || rep.Error.Code != -32602 || !strings.Contains(rep.Error.Message, "the limit is 100 (MaxArgumentsBytes)") {
		t.Errorf("a 2025-11-25 task's arguments over the limit: %s", rep.raw)
	}
}
