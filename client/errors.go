package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/internal/redact"
	"github.com/mcptasks/mcptasks/task"
)

// JSON-RPC error codes the client gives a meaning to.
const (
	CodeMethodNotFound        = -32601
	CodeInvalidParams         = -32602
	CodeInternalError         = -32603
	CodeHeaderMismatch        = -32020
	CodeMissingCapability     = -32021
	CodeUnsupportedVersion    = -32022
	codeInvalidRequest        = -32600
	maxErrorBodyInDescription = 200
)

// Sentinel errors, for errors.Is. A *[Error] matches the sentinel of its
// code; an HTTP 401 or 403 reply matches [ErrUnauthorized] or
// [ErrForbidden] whatever its body.
var (
	// ErrMethodNotFound: -32601, the server does not implement the method.
	ErrMethodNotFound = errors.New("method not found (-32601)")
	// ErrInvalidParams: -32602. Unknown, expired and foreign task ids
	// produce it, as do unknown tools and bad arguments.
	ErrInvalidParams = errors.New("invalid params (-32602)")
	// ErrInternal: -32603, the server failed.
	ErrInternal = errors.New("internal error (-32603)")
	// ErrHeaderMismatch: -32020, an HTTP header does not match the body.
	ErrHeaderMismatch = errors.New("header mismatch (-32020)")
	// ErrMissingCapability: -32021, the request needs a client capability
	// that was not declared; see [Error.RequiredCapabilities].
	ErrMissingCapability = errors.New("missing required client capability (-32021)")
	// ErrUnsupportedVersion: -32022, the server does not speak the
	// protocol version.
	ErrUnsupportedVersion = errors.New("unsupported protocol version (-32022)")
	// ErrUnauthorized: HTTP 401, the request lacks valid credentials.
	ErrUnauthorized = errors.New("unauthorized (HTTP 401)")
	// ErrForbidden: HTTP 403.
	ErrForbidden = errors.New("forbidden (HTTP 403)")

	// ErrTaskFailed matches a *[TaskError] of a failed task.
	ErrTaskFailed = errors.New("task failed")
	// ErrTaskCancelled matches a *[TaskError] of a cancelled task.
	ErrTaskCancelled = errors.New("task cancelled")
	// ErrInputRequired matches an *[InputRequiredError]: the server asks
	// for input and the client has no [InputHandler].
	ErrInputRequired = errors.New("input required")
	// ErrInvalidResult is wrapped by errors about replies that break the
	// protocol: an unknown resultType, a task where none may be, a result
	// that cannot be decoded.
	ErrInvalidResult = errors.New("invalid result")
	// ErrTooManyRounds: the server kept asking for input (MRTR) beyond
	// Options.MaxInputRounds.
	ErrTooManyRounds = errors.New("too many input rounds")
	// ErrReplyTooLarge: a reply exceeded Options.MaxReplyBytes.
	ErrReplyTooLarge = errors.New("reply too large")
	// ErrJournal is wrapped by errors of the [Journal].
	ErrJournal = errors.New("journal")
	// ErrOutcomeUnknown: [Client.Resend] cannot learn whether a pending
	// create made a task, because the server does not honour idempotency
	// keys.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrNotAsked is the cause of an [InputHandler]'s context that ended
	// because the server no longer asks the question (it took it back, or
	// the task moved on or ended).
	ErrNotAsked = errors.New("the server no longer asks this question")
)

// Error is a JSON-RPC error returned by the server.
type Error struct {
	// Code, Message and Data are the JSON-RPC error object.
	Code    int64
	Message string
	Data    json.RawMessage
	// HTTPStatus is the status of the HTTP reply that carried the error
	// (0 for the error of a failed task).
	HTTPStatus int
	// Method is the method of the request that failed, if known.
	Method string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Method != "" {
		b.WriteString(e.Method)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%s (%d)", e.Message, e.Code)
	if e.HTTPStatus != 0 && e.HTTPStatus != http.StatusOK {
		fmt.Fprintf(&b, ", HTTP %d", e.HTTPStatus)
	}
	return b.String()
}

// Is reports whether target is the sentinel of e's code or HTTP status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrMethodNotFound:
		return e.Code == CodeMethodNotFound
	case ErrInvalidParams:
		return e.Code == CodeInvalidParams
	case ErrInternal:
		return e.Code == CodeInternalError
	case ErrHeaderMismatch:
		return e.Code == CodeHeaderMismatch
	case ErrMissingCapability:
		return e.Code == CodeMissingCapability
	case ErrUnsupportedVersion:
		return e.Code == CodeUnsupportedVersion
	case ErrUnauthorized:
		return e.HTTPStatus == http.StatusUnauthorized
	case ErrForbidden:
		return e.HTTPStatus == http.StatusForbidden
	}
	return false
}

// RequiredCapabilities decodes data.requiredCapabilities of a -32021
// error: the capabilities the server needs the client to declare. It
// returns nil if e has none.
func (e *Error) RequiredCapabilities() *mcp.ClientCapabilities {
	if e.Code != CodeMissingCapability || len(e.Data) == 0 {
		return nil
	}
	var d struct {
		RequiredCapabilities *mcp.ClientCapabilities `json:"requiredCapabilities"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return nil
	}
	return d.RequiredCapabilities
}

// SupportedVersions decodes data.supported of a -32022 error.
func (e *Error) SupportedVersions() []string {
	if e.Code != CodeUnsupportedVersion || len(e.Data) == 0 {
		return nil
	}
	var d struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return nil
	}
	return d.Supported
}

// HTTPError is an HTTP reply that carries no JSON-RPC message.
type HTTPError struct {
	StatusCode int
	// Body is the start of the reply body, for diagnostics.
	Body   string
	Method string
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.Method, e.StatusCode)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Is reports whether target is ErrUnauthorized (401) or ErrForbidden (403).
func (e *HTTPError) Is(target error) bool {
	return target == ErrUnauthorized && e.StatusCode == http.StatusUnauthorized ||
		target == ErrForbidden && e.StatusCode == http.StatusForbidden
}

// TransportError is a failure to send a request or read its reply: the
// connection, a malformed reply, a context ended. Unwrap gives the cause.
type TransportError struct {
	Method string
	// URL is the server's URL as the client was given it, credentials
	// and all; Error leaves out what may carry a secret (its user
	// information, query and fragment), as its text is logged.
	URL string
	Err error

	// notSent: the request is known never to have reached the server
	// (see notSent).
	notSent bool
}

func (e *TransportError) Error() string {
	cause := "<nil>"
	if e.Err != nil {
		cause = redact.Text(e.Err.Error(), e.Err, e.URL)
	}
	return fmt.Sprintf("%s %s: %s", e.Method, redact.URL(e.URL), cause)
}

func (e *TransportError) Unwrap() error { return e.Err }

// TaskError is the outcome of a task that ended failed or cancelled.
type TaskError struct {
	TaskID        string
	Status        task.Status
	StatusMessage string
	// Err is the JSON-RPC error a failed task carries; nil when cancelled.
	Err *Error
}

func (e *TaskError) Error() string {
	msg := fmt.Sprintf("task %s %s", e.TaskID, e.Status)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	} else if e.StatusMessage != "" {
		msg += ": " + e.StatusMessage
	}
	return msg
}

// Is reports whether target is ErrTaskFailed or ErrTaskCancelled, as the
// status says.
func (e *TaskError) Is(target error) bool {
	return target == ErrTaskFailed && e.Status == task.Failed ||
		target == ErrTaskCancelled && e.Status == task.Cancelled
}

// Unwrap returns the task's JSON-RPC error, if any.
func (e *TaskError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// UnavailableError ends a wait that gave up on a task whose server kept
// failing: its requests failed transiently (the server unreachable, as
// while it restarts; HTTP 5xx; -32603) for Options.RetryBudget, or
// Options.MaxConsecutiveFailures times in a row. It says nothing of the
// task, which may still be running: wait for it again once the server is
// back, with [Task.Wait] on Task (from another process, on a handle from
// [Client.Task] or [Client.Resume]). Unwrap gives the last failure.
type UnavailableError struct {
	// TaskID is the task waited for, and Task its handle.
	TaskID string
	Task   *Task
	// Failures is how many requests failed in a row, over For: from the
	// first of them to the last.
	Failures int
	For      time.Duration
	// Err is the last failure.
	Err error
}

func (e *UnavailableError) Error() string {
	d := e.For.Round(time.Second)
	if e.For < time.Second {
		d = e.For.Round(time.Millisecond)
	}
	return fmt.Sprintf("task %s: stopped waiting after %d failed requests in %s; the task may still be running: %v", e.TaskID, e.Failures, d, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// InputRequiredError reports input the server asked for when the client
// has no [InputHandler] to answer it. For a task, answer with
// [Task.Update] on Task and Wait again (or wait with [ManualInput]); for
// a tools/call (MRTR) there is nothing to resume: give the client an
// InputHandler.
type InputRequiredError struct {
	// TaskID is the task that waits, or "" for an MRTR round.
	TaskID string
	// Task is the handle of the task that waits, or nil for an MRTR round.
	Task     *Task
	Requests map[string]*InputRequest
}

func (e *InputRequiredError) Error() string {
	keys := sortedKeys(e.Requests)
	if e.TaskID != "" {
		return fmt.Sprintf("task %s needs input %v and no InputHandler is set", e.TaskID, keys)
	}
	return fmt.Sprintf("the server needs input %v and no InputHandler is set", keys)
}

// Is reports whether target is ErrInputRequired.
func (e *InputRequiredError) Is(target error) bool { return target == ErrInputRequired }

func invalidResult(method, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", method, ErrInvalidResult, fmt.Sprintf(format, args...))
}

// transient reports whether err is worth retrying in a polling loop:
// transport failures, HTTP 5xx and 429 without a JSON-RPC body, and
// -32603.
func transient(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return !errors.Is(err, ErrReplyTooLarge)
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return he.StatusCode >= 500 || he.StatusCode == http.StatusTooManyRequests
	}
	var re *Error
	if errors.As(err, &re) {
		return re.Code == CodeInternalError || re.HTTPStatus == http.StatusTooManyRequests
	}
	return false
}
