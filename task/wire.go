package task

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ResultType values of the results this package describes.
const (
	// ResultTypeTask marks a CreateTaskResult.
	ResultTypeTask = "task"
	// ResultTypeComplete marks every other result, tasks/* included.
	ResultTypeComplete = "complete"
)

// TimeFormat is the layout of createdAt and lastUpdatedAt: RFC 3339 in UTC
// with milliseconds, e.g. 2026-07-28T10:30:00.000Z.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Info is the wire form of the extension's Task object: the fields common to
// CreateTaskResult and every DetailedTask variant.
type Info struct {
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is always present; null means no limit.
	TTLMs          *Millis `json:"ttlMs"`
	PollIntervalMs *Millis `json:"pollIntervalMs,omitempty"`
}

// Millis is a number of milliseconds, as ttlMs and pollIntervalMs carry
// it. It encodes as an integer and decodes from any JSON number: the schema
// says integer, but servers also send 900000.0 (FastMCP does). A fraction
// is rounded to the millisecond.
type Millis int64

// UnmarshalJSON decodes a JSON number. Anything else, or a number out of
// range, is a *json.UnmarshalTypeError, which encoding/json completes with
// the field's name.
func (m *Millis) UnmarshalJSON(b []byte) error {
	s := string(b)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*m = Millis(n)
		return nil
	}
	if len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		if f, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(f) < 1<<62 {
			*m = Millis(math.Round(f))
			return nil
		}
		return &json.UnmarshalTypeError{Value: "number " + s, Type: reflect.TypeFor[Millis]()}
	}
	return &json.UnmarshalTypeError{Value: jsonKind(s), Type: reflect.TypeFor[Millis]()}
}

// jsonKind names the kind of the JSON value s, as json.UnmarshalTypeError
// does.
func jsonKind(s string) string {
	switch {
	case strings.HasPrefix(s, `"`):
		return "string " + s
	case s == "true" || s == "false":
		return "bool"
	case strings.HasPrefix(s, "{"):
		return "object"
	case strings.HasPrefix(s, "["):
		return "array"
	}
	return s
}

// CreateResult is the body of a CreateTaskResult, without _meta.
type CreateResult struct {
	ResultType string `json:"resultType"`
	Info
}

// Detailed is the body of a GetTaskResult (a DetailedTask with
// resultType "complete"), without _meta. Exactly one of InputRequests,
// Result and Error is set, as the status requires.
type Detailed struct {
	ResultType string `json:"resultType"`
	Info
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *Error                     `json:"error,omitempty"`
}

// Info returns the wire Task fields of r.
func (r *Record) Info() Info {
	in := Info{
		TaskID:        r.ID,
		Status:        r.Status,
		StatusMessage: r.StatusMessage,
		CreatedAt:     FormatTime(r.CreatedAt),
		LastUpdatedAt: FormatTime(r.UpdatedAt),
	}
	if r.TTL > 0 {
		ms := Millis(r.TTL.Milliseconds())
		in.TTLMs = &ms
	}
	if r.PollInterval > 0 {
		ms := Millis(r.PollInterval.Milliseconds())
		in.PollIntervalMs = &ms
	}
	return in
}

// CreateResult returns the CreateTaskResult body of r as it was created:
// working, without a status message, last updated when created. A create
// replayed by its idempotency key later in the task's life answers with
// the same body as the first; the client polls for what changed since.
func (r *Record) CreateResult() CreateResult {
	c := *r
	c.Status, c.StatusMessage, c.UpdatedAt = Working, "", r.CreatedAt
	return CreateResult{ResultType: ResultTypeTask, Info: c.Info()}
}

// Detailed returns the DetailedTask variant for r's status, as tasks/get
// returns it.
func (r *Record) Detailed() Detailed {
	d := Detailed{ResultType: ResultTypeComplete, Info: r.Info()}
	switch r.Status {
	case InputRequired:
		d.InputRequests = r.InputRequests
	case Completed:
		d.Result = r.Result
	case Failed:
		d.Error = r.Error
		if d.Error == nil {
			d.Error = &Error{Code: CodeInternalError, Message: "task failed"}
		}
	}
	return d
}

// CodeInternalError is the JSON-RPC internal error code, used for failed
// tasks that have no error of their own (lost workers, expiry).
const CodeInternalError = -32603

// FormatTime formats t in [TimeFormat], in UTC.
func FormatTime(t time.Time) string {
	return t.UTC().Format(TimeFormat)
}
