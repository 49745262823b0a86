package client

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// Values of resultType.
const (
	resultComplete      = task.ResultTypeComplete
	resultInputRequired = "input_required"
	resultTask          = task.ResultTypeTask
)

// CallResult is the outcome of a tools/call: exactly one of Result (the
// server answered at once) and Task (the server made the call a task)
// is set.
type CallResult struct {
	Result *mcp.CallToolResult
	Task   *Task
}

// CallTool calls the tool name with args (anything that marshals to a
// JSON object; nil for none). MRTR rounds (input_required) are answered
// through the InputHandler and retried, up to Options.MaxInputRounds.
//
// If the server makes the call a task, the task is recorded in the
// Journal before CallTool returns its handle. If the journal fails, the
// handle is returned together with an error wrapping [ErrJournal]: the
// task exists and runs on the server either way.
//
// Every call carries a new idempotency key in _meta
// ([task.MetaIdempotencyKey]). When the outcome of a request is unknown
// (a transport error, HTTP 5xx, -32603: the task may have been created
// and its reply lost), CallTool asks server/discover whether the server
// honours keys and, if it does, sends the request again with the same
// key, up to Options.CreateRetries times: the server then answers with the
// task the first request made instead of making a second one. (A call the
// server answers synchronously is not kept, and may run again.) A call
// refused for its Mcp-Param-* headers ([ErrHeaderMismatch]: the tool's
// x-mcp-header annotations are unknown, or changed since it was listed)
// lists the tools and goes once more, with the headers they declare and
// the same key.
//
// With a Journal, the call is saved in it before it is sent, as a pending
// create ([Entry.Pending]) that the task's entry replaces; if it cannot
// be saved, nothing is sent and the error wraps [ErrJournal]. It is removed
// once the server answered every request of the call without a task, or
// the call failed before it reached the server (a connection that could
// not be opened, a failed TLS handshake, a plain-HTTP server at an https://
// URL: the error is returned as it is), and kept when the outcome is
// unknown (a request whose reply was lost, or that was on the wire when ctx
// ended or the program did): then [Client.Pending] lists it and
// [Client.Resend] sends it again with its key.
func (c *Client) CallTool(ctx context.Context, name string, args any) (*CallResult, error) {
	return c.callTool(ctx, name, args, c.opts.InputHandler, nil, "")
}

// CallToolWithKey is CallTool with the idempotency key given rather than
// a new one. A program that may make a call again after it lost the
// outcome of the first (a restart, a re-run of its own work) derives key
// from what identifies the call: a server that honours keys then answers
// with the task the first call made, while that task lives (its TTL) and
// for the same principal, instead of making a second one. The same key
// with another tool or other arguments is refused while that task lives
// (an error wrapping [ErrInvalidParams]); a key is 1 to 255 printable
// ASCII characters. A server that does not honour keys, one that speaks
// 2025-11-25 (whose requests carry no key), or a client without the
// Tasks extension runs the call again. Two calls must not share a key at
// once.
func (c *Client) CallToolWithKey(ctx context.Context, key, name string, args any) (*CallResult, error) {
	if key == "" {
		return nil, fmt.Errorf("tools/call %s: the idempotency key is empty", name)
	}
	return c.callTool(ctx, name, args, c.opts.InputHandler, nil, key)
}

// callTool is CallTool with the InputHandler h of its MRTR rounds; it
// sends the pending create resend again, if not nil (args are its Args),
// and else carries the idempotency key given, if not "".
func (c *Client) callTool(ctx context.Context, name string, args any, h InputHandler, resend *Entry, given string) (res *CallResult, err error) {
	p := map[string]any{"name": name}
	key := ""
	if !c.noTasks {
		switch {
		case resend != nil:
			key = resend.IdempotencyKey
		case given != "":
			key = given
		default:
			key = newKey()
		}
		p["_meta"] = map[string]string{task.MetaIdempotencyKey: key}
	}
	var argsJSON json.RawMessage
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("tools/call %s: encode arguments: %w", name, err)
		}
		if string(b) != "null" {
			argsJSON = b
			p["arguments"] = argsJSON
		}
	}
	k, err := newCall("tools/call", p)
	if err != nil {
		return nil, err
	}
	k.keyed = !c.noTasks
	c.mu.Lock()
	bindings := c.tools[name]
	c.mu.Unlock()
	k.extra = paramHeaderValues(bindings, argsJSON)
	leg, known, err := c.knownProtocol(ctx)
	if err != nil {
		return nil, err
	}
	if leg == nil && k.keyed && c.opts.Journal != nil {
		// A resent call may have made its task before: its outcome is
		// unknown until the server answers with the task.
		unknown := resend != nil
		k.unknown = &unknown
		pending := resend
		if pending == nil {
			t := now()
			pending = &Entry{ServerURL: c.url, Tool: name, Args: argsJSON, ArgsDigest: digest(argsJSON),
				IdempotencyKey: key, SeenAt: t, CreatedAt: t}
			if err := c.opts.Journal.Save(ctx, *pending); err != nil {
				// Sent unrecorded, a task whose reply is lost (or
				// whose client crashes) could not be found again.
				return nil, fmt.Errorf("tools/call %s: %w: save the call before sending it: %w", name, ErrJournal, err)
			}
		}
		defer func() { c.settlePending(ctx, *pending, unknown, res, err) }()
	}
	var (
		raw json.RawMessage
		rt  string
	)
	if leg == nil {
		// Sent as 2026-07-28 until the server says otherwise: a server
		// that speaks an earlier protocol gets the call again in it,
		// asking for a task if the tool allows one.
		k.noSwitch = !known
		raw, rt, err = c.roundTrip(ctx, k, name, h)
		if errors.Is(err, ErrHeaderMismatch) {
			// The tool mirrors arguments into Mcp-Param-* headers
			// (x-mcp-header), which tools/list tells. Listed again
			// (also when listed before: a redeployed server may have
			// changed them), the call goes again once with the headers
			// it now declares and its key (a resent call finds the task
			// its first request made); with the same headers as sent,
			// the refusal stands.
			if extra, lerr := c.paramHeadersOf(ctx, name, argsJSON); lerr == nil && !maps.Equal(extra, k.extra) {
				k.extra = extra
				raw, rt, err = c.roundTrip(ctx, k, name, h)
			}
		}
		var te *TransportError
		if err != nil && !known && !errors.As(err, &te) && ctx.Err() == nil {
			if leg, _ = c.protocol(ctx); leg == nil {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
	}
	if leg != nil && resend != nil {
		// Sent again without its key, it could make a second task.
		return nil, fmt.Errorf("tools/call %s: %w: the server speaks %s, without idempotency keys", name, ErrOutcomeUnknown, LegacyProtocolVersion)
	}
	if leg != nil {
		// 2025-11-25 requests carry no _meta, and its servers know no
		// idempotency key: the call is not retried.
		delete(k.params, "_meta")
		k.noSwitch, k.keyed = false, false
		if support, err := leg.taskSupport(ctx, c, name); err != nil {
			return nil, err
		} else if support == "optional" || support == "required" {
			k.params["task"] = json.RawMessage(`{}`)
		}
		if raw, rt, err = c.roundTrip(ctx, k, name, h); err != nil {
			return nil, err
		}
	}
	var st *TaskStatus
	switch {
	case rt == resultTask:
		var cr task.CreateResult
		if err := json.Unmarshal(raw, &cr); err != nil {
			return nil, invalidResult(k.method, "CreateTaskResult: %v", err)
		}
		if cr.TaskID == "" {
			return nil, invalidResult(k.method, "a task result without a taskId: %s", snippet(raw))
		}
		st = statusFromInfo(&cr.Info)
	case leg != nil && k.params["task"] != nil:
		var cr task.LegacyCreateResult
		if err := json.Unmarshal(raw, &cr); err != nil || cr.Task.TaskID == "" {
			return nil, invalidResult(k.method, "a CreateTaskResult without task.taskId: %s", snippet(raw))
		}
		st = statusFromLegacy(&cr.Task)
	}
	if st != nil {
		t := c.newTask(st.TaskID, name, st)
		entry := &Entry{
			TaskID: st.TaskID, ServerURL: c.url, Tool: name, Args: argsJSON, ArgsDigest: digest(argsJSON),
			Status: st.Status, StatusMessage: st.StatusMessage, CreatedAt: st.CreatedAt, SeenAt: st.seenAt,
		}
		if leg != nil {
			entry.Protocol = LegacyProtocolVersion
		} else if k.keyed {
			entry.IdempotencyKey = key // its Save replaces the pending create
		}
		t.entry = entry
		if c.opts.Journal != nil {
			if err := c.opts.Journal.Save(ctx, *entry); err != nil {
				return &CallResult{Task: t}, fmt.Errorf("tools/call %s: task %s: %w: %w", name, st.TaskID, ErrJournal, err)
			}
		}
		c.log.Debug("task created", "task", st.TaskID, "tool", name)
		return &CallResult{Task: t}, nil
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, invalidResult(k.method, "%v", err)
	}
	return &CallResult{Result: &out}, nil
}

// paramHeadersOf lists the server's tools and returns the Mcp-Param-*
// headers that a call of tool with args carries.
func (c *Client) paramHeadersOf(ctx context.Context, tool string, args json.RawMessage) (map[string]string, error) {
	if _, err := c.ListTools(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return paramHeaderValues(c.tools[tool], args), nil
}

// settlePending ends the pending create e of a call that returned res and
// err. The task's entry replaced it already, unless the journal failed (it
// then stays: Resend gets the task with its key). It stays too when the
// call failed after a request whose outcome was unknown, unless the server
// refused the call with a JSON-RPC error (it refuses the same arguments
// the same way, so the first request made nothing either), but for a
// header mismatch (-32020: the headers may differ). Otherwise the
// server answered every request of the call without a task (a result, an
// error, a question), or the call went out again without the key (to a
// 2025-11-25 server): it is removed.
func (c *Client) settlePending(ctx context.Context, e Entry, unknown bool, res *CallResult, err error) {
	var refused *Error
	switch {
	case res != nil && res.Task != nil && res.Task.entry != nil && res.Task.entry.IdempotencyKey == e.IdempotencyKey:
		return
	case err != nil && unknown && !(errors.As(err, &refused) && !transient(err) && !errors.Is(err, ErrHeaderMismatch)):
		// A header mismatch says nothing of the first request, which
		// carried headers of its own.
		return
	}
	if rerr := c.opts.Journal.Remove(context.WithoutCancel(ctx), e); rerr != nil {
		c.log.Warn("journal: remove a pending create", "tool", e.Tool, "err", rerr)
	}
}

// roundTrip sends k and answers its MRTR rounds. It returns the final
// result and its resultType: "complete", or "task" for tools/call. tool
// names the tool for the InputHandler h (nil: input is an
// *InputRequiredError).
func (c *Client) roundTrip(ctx context.Context, k *call, tool string, h InputHandler) (json.RawMessage, string, error) {
	base := k.params
	k.handler = h
	for round := 0; ; round++ {
		raw, err := c.doKeyed(ctx, k)
		if err != nil {
			return nil, "", err
		}
		var env struct {
			ResultType    *string                    `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  *string                    `json:"requestState"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			return nil, "", invalidResult(k.method, "%v", err)
		}
		rt := resultComplete // a result without resultType is complete
		if env.ResultType != nil {
			rt = *env.ResultType
		}
		switch rt {
		case resultComplete:
			return raw, rt, nil
		case resultTask:
			if k.method != "tools/call" {
				return nil, "", invalidResult(k.method, "resultType \"task\" is allowed only on tools/call")
			}
			return raw, rt, nil
		case resultInputRequired:
		default:
			return nil, "", invalidResult(k.method, "unknown resultType %q", rt)
		}
		if round+1 >= c.opts.MaxInputRounds {
			return nil, "", fmt.Errorf("%s: %w (%d)", k.method, ErrTooManyRounds, round+1)
		}
		if env.InputRequests == nil && env.RequestState == nil {
			return nil, "", invalidResult(k.method, "input_required without inputRequests or requestState")
		}
		reqs, err := decodeInputRequests(env.InputRequests, tool, "")
		if err != nil {
			return nil, "", invalidResult(k.method, "%v", err)
		}
		answers := map[string]json.RawMessage{}
		if len(reqs) > 0 {
			if h == nil {
				return nil, "", &InputRequiredError{Requests: reqs}
			}
			for _, key := range sortedKeys(reqs) {
				a, err := answerWith(ctx, h, key, reqs[key])
				if err != nil {
					return nil, "", fmt.Errorf("%s: %w", k.method, err)
				}
				answers[key] = a
			}
		}
		// The retry: the same params, a new id (send draws one), this
		// round's answers and the echoed requestState; nothing of an
		// earlier round.
		next := &call{method: k.method, params: make(map[string]json.RawMessage, len(base)+2), extra: k.extra, keyed: k.keyed, unknown: k.unknown}
		for key, v := range base {
			next.params[key] = v
		}
		delete(next.params, "inputResponses")
		delete(next.params, "requestState")
		if len(answers) > 0 {
			next.params["inputResponses"], _ = json.Marshal(answers)
		}
		if env.RequestState != nil {
			next.params["requestState"], _ = json.Marshal(*env.RequestState)
		}
		k = next
	}
}

// doKeyed is do, and for a request that carries an idempotency key, sends
// it again once its outcome is unknown (see unknownOutcome) and the server
// honours keys, up to Options.CreateRetries times, after a pause that
// doubles each time. A retry that cannot reach the server (a refused
// connection while it restarts) leaves the first outcome unknown: the
// retries go on.
func (c *Client) doKeyed(ctx context.Context, k *call) (json.RawMessage, error) {
	raw, err := c.do(ctx, k)
	if !k.keyed || err == nil || !unknownOutcome(err) {
		return raw, err
	}
	if k.unknown != nil {
		*k.unknown = true // whatever the retries get: a task may exist
	}
	for try := 1; err != nil && try <= c.opts.CreateRetries && transient(err); try++ {
		honours, derr := c.honoursKeys(ctx)
		if derr == nil && !honours {
			return raw, err
		}
		t := time.NewTimer(backoff(try, createRetryDelay, maxCreateRetryDelay))
		select {
		case <-ctx.Done():
			t.Stop()
			return raw, err
		case <-t.C:
		}
		if derr != nil {
			continue // the server could not say: ask again after the pause
		}
		c.log.Info("sending a request again with its idempotency key", "method", k.method, "try", try, "err", err)
		raw, err = c.do(ctx, k)
	}
	return raw, err
}

// unknownOutcome reports whether the server may have acted on a request
// that failed with err: a transient failure, other than one that proves
// the request never reached the server (see notSent: a connection that
// could not be opened, a TLS handshake that failed, a plain-HTTP server
// at an https:// URL).
func unknownOutcome(err error) bool {
	var te *TransportError
	return transient(err) && !(errors.As(err, &te) && te.notSent)
}

// honoursKeys reports whether the server says in server/discover that it
// honours idempotency keys; the answer is kept. A server without
// server/discover (-32601, HTTP 404 or 405) honours none. Any other error
// means the server could not say (it is unreachable or busy, refuses this
// client, or answered something else): it is returned, and nothing kept.
func (c *Client) honoursKeys(ctx context.Context) (bool, error) {
	c.mu.Lock()
	known := c.keys
	c.mu.Unlock()
	if known != 0 {
		return known > 0, nil
	}
	d, err := c.Discover(ctx)
	var he *HTTPError
	if err != nil && !errors.Is(err, ErrMethodNotFound) &&
		!(errors.As(err, &he) && (he.StatusCode == http.StatusNotFound || he.StatusCode == http.StatusMethodNotAllowed)) {
		return false, err
	}
	var ok bool
	if err == nil && d.Capabilities != nil {
		_, ok = d.Capabilities.Experimental[task.MetaIdempotencyKey]
	}
	c.mu.Lock()
	c.keys = map[bool]int{true: 1, false: -1}[ok]
	c.mu.Unlock()
	return ok, nil
}

// newKey returns a new idempotency key: 128 random bits, base64url.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// digest returns the hex SHA-256 of the arguments JSON ("" for none).
func digest(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// now is time.Now, truncated to milliseconds for stable journal output.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
