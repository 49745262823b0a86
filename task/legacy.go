package task

import (
	"encoding/json"
)

// LegacyProtocolVersion is the MCP revision of the experimental in-core
// tasks that came before the extension: tasks created by its requests are
// served to it only, in its wire shapes.
const LegacyProtocolVersion = "2025-11-25"

// MetaRelatedTask is the _meta key that ties a 2025-11-25 message to its
// task: on the tasks/result response and on the server's input requests.
const MetaRelatedTask = "io.modelcontextprotocol/related-task"

// LegacyTask is the 2025-11-25 Task object: what tasks/get, tasks/cancel,
// tasks/list and notifications/tasks/status carry, and what a
// CreateTaskResult nests under "task".
type LegacyTask struct {
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is always present (the TypeScript SDK's schema requires the
	// key); null means no limit.
	TTL          *Millis `json:"ttl"`
	PollInterval *Millis `json:"pollInterval,omitempty"`
}

// LegacyCreateResult is the 2025-11-25 CreateTaskResult: the task, nested,
// and no resultType.
type LegacyCreateResult struct {
	Task LegacyTask `json:"task"`
}

// LegacyStatus returns r's status as 2025-11-25 reports it: a task whose
// tool returned isError is failed there (completed in the extension).
func (r *Record) LegacyStatus() Status {
	if r.Status == Completed && resultIsError(r.Result) {
		return Failed
	}
	return r.Status
}

// Legacy returns the 2025-11-25 Task object for r.
func (r *Record) Legacy() LegacyTask {
	in := r.Info()
	lt := LegacyTask{
		TaskID: in.TaskID, Status: r.LegacyStatus(), StatusMessage: in.StatusMessage,
		CreatedAt: in.CreatedAt, LastUpdatedAt: in.LastUpdatedAt,
		TTL: in.TTLMs, PollInterval: in.PollIntervalMs,
	}
	if lt.Status == Failed && lt.StatusMessage == "" {
		lt.StatusMessage = "The tool returned an error"
		if r.Status == Failed {
			lt.StatusMessage = "The request failed"
		}
	}
	return lt
}

// LegacyResult returns what tasks/result answers for a terminal task: the
// tool result, without the extension's resultType and with the
// related-task _meta, for a task that completed (isError or not); the
// JSON-RPC error for a failed one. Cancelled tasks have neither.
func (r *Record) LegacyResult() (json.RawMessage, *Error) {
	switch r.Status {
	case Completed:
		return withRelatedTask(r.Result, r.ID), nil
	case Failed:
		if r.Error != nil {
			return nil, r.Error
		}
		return nil, &Error{Code: CodeInternalError, Message: "task failed"}
	}
	return nil, nil
}

// withRelatedTask returns the result object res without resultType and
// with _meta[MetaRelatedTask] = {taskId: id}, other _meta kept.
func withRelatedTask(res json.RawMessage, id string) json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(res, &m) // a stored result is an object
	delete(m, "resultType")
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	meta[MetaRelatedTask], _ = json.Marshal(map[string]string{"taskId": id})
	m["_meta"], _ = json.Marshal(meta)
	b, _ := json.Marshal(m) // maps of raw JSON always encode
	return b
}

// resultIsError reports whether a CallToolResult JSON has isError true.
func resultIsError(res json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &r) == nil && r.IsError
}
