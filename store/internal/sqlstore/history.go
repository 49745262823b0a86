package sqlstore

import (
	"time"

	"github.com/segmentio/encoding/json"

	"github.com/mcptasks/mcptasks/task"
)

// historyEvent is the JSON of a task.HistoryEvent in the history column:
// times in Unix milliseconds, zero fields left out. The Postgres claim
// statement writes the same shape in SQL. It is encoded with
// segmentio/encoding/json (as the MCP fast path is): every read of a task
// decodes its history, and that decoder takes a quarter of the time of
// encoding/json's.
type historyEvent struct {
	Seq     int              `json:"seq"`
	At      int64            `json:"at"`
	Kind    task.HistoryKind `json:"kind"`
	Attempt int              `json:"attempt,omitempty"`
	Worker  string           `json:"worker,omitempty"`
	Lost    bool             `json:"lost,omitempty"`
	Status  task.Status      `json:"status,omitempty"`
	Message string           `json:"message,omitempty"`
	Keys    []string         `json:"keys,omitempty"`
}

// EncodeHistory returns the column value of h: a JSON array, or NULL when
// h is empty.
func EncodeHistory(h []task.HistoryEvent) (any, error) {
	if len(h) == 0 {
		return nil, nil
	}
	evs := make([]historyEvent, len(h))
	for i, e := range h {
		evs[i] = historyEvent{
			Seq: e.Seq, At: e.At.UnixMilli(), Kind: e.Kind, Attempt: e.Attempt, Worker: e.Worker,
			Lost: e.Lost, Status: e.Status, Message: e.Message, Keys: e.Keys,
		}
	}
	b, err := json.Marshal(evs)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// DecodeHistory is the inverse of [EncodeHistory]: nil when b is NULL or
// empty.
func DecodeHistory(b []byte) ([]task.HistoryEvent, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var evs []historyEvent
	if err := json.Unmarshal(b, &evs); err != nil {
		return nil, err
	}
	h := make([]task.HistoryEvent, len(evs))
	for i, e := range evs {
		h[i] = task.HistoryEvent{
			Seq: e.Seq, At: time.UnixMilli(e.At).UTC(), Kind: e.Kind, Attempt: e.Attempt, Worker: e.Worker,
			Lost: e.Lost, Status: e.Status, Message: e.Message, Keys: e.Keys,
		}
	}
	return h, nil
}
