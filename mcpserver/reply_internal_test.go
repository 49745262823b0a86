package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcptasks/mcptasks/task"
)

// TestReplyEncoding: the replies that writeMember encodes with
// segmentio/encoding are the bytes encoding/json makes of them: HTML
// characters, U+2028, invalid UTF-8 and raw JSON with spaces included.
func TestReplyEncoding(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 123e6, time.UTC)
	odd := "a <b> & \"c\" \u2028 \xff é\n"
	raw := json.RawMessage(" { \"x\" : \"<&>\", \"y\": [1, 2.50, null] } ")
	rec := func(st task.Status) *task.Record {
		return &task.Record{
			ID: "t1", Status: st, StatusMessage: odd, CreatedAt: at, UpdatedAt: at,
			TTL: time.Hour, PollInterval: time.Second,
			InputRequests: map[string]json.RawMessage{"b": raw, "a": json.RawMessage(`{"method":"elicitation/create"}`)},
			Result:        raw,
			Error:         &task.Error{Code: -32000, Message: odd, Data: raw},
		}
	}
	values := []any{
		&CreateTaskResult{CreateResult: rec(task.Working).CreateResult()},
		&AckResult{ResultType: task.ResultTypeComplete},
		&jsonrpc.Error{Code: codeInvalidParams, Message: odd},
	}
	for _, st := range []task.Status{task.Working, task.InputRequired, task.Completed, task.Failed, task.Cancelled} {
		values = append(values, &GetTaskResult{Detailed: rec(st).Detailed()})
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encoding/json: %T: %v", v, err)
		}
		got, err := segjson.Marshal(v)
		if err != nil {
			t.Fatalf("segmentio: %T: %v", v, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%T:\nsegmentio     %s\nencoding/json %s", v, got, want)
		}
	}
}
