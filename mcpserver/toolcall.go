package mcpserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/task"
)

// Causes of a task handler's ctx cancellation, for errors.Is on
// context.Cause(ctx): they are the engine's (the same values as
// engine.ErrCancelRequested, engine.ErrLeaseLost and engine.ErrShutdown).
var (
	// ErrCancelRequested: the user (tasks/cancel) or an operator
	// cancelled the task; it ends cancelled whatever the handler returns.
	ErrCancelRequested = engine.ErrCancelRequested
	// ErrShutdown: the server is draining ([Server.Shutdown]) and its
	// deadline passed; the task is re-run or failed elsewhere under the
	// tool's RetryPolicy.
	ErrShutdown = engine.ErrShutdown
	// ErrLeaseLost: this process lost its claim on the task; another
	// worker may run it.
	ErrLeaseLost = engine.ErrLeaseLost
)

// ErrInputRequired is returned by [Elicit] and the other input helpers in
// a synchronous call when the client has not answered yet: the call then
// answers with an MRTR round asking for it, and the client calls again
// with the answer, which runs the handler again. A handler returns it (or
// any error) as it is; whatever it returns, the round is the answer.
var ErrInputRequired = errors.New("mcpserver: the call returns an input_required round; the client calls again with the answers")

// ErrNotInCall is returned by the input helpers and [SetStatus] when ctx
// is not the context of a handler added with [AddTool].
var ErrNotInCall = errors.New("mcpserver: not called from the handler of a tool added with mcpserver.AddTool")

// requestStateTTL is how long an MRTR round's requestState stays valid:
// the time a person has to answer one question of a synchronous call.
const requestStateTTL = time.Hour

// Call is one call of a tool added with [AddTool], as its handler sees it:
// a synchronous call, or the run of a task. [CallFrom] returns it from the
// handler's ctx.
type Call struct {
	s         *Server
	tool      *toolEntry
	req       *mcp.CallToolRequest
	run       *engine.Run
	principal string
	caps      json.RawMessage // the request's client capabilities
	now       func() time.Time

	// An inline call's answers, from its requestState and inputResponses
	// (loaded on the first question), the questions still without one,
	// and an error that ends the call (a bad requestState or answer).
	answers map[string]json.RawMessage
	loaded  bool
	pending mcp.InputRequestMap
	failed  error
	// missing are the capabilities that questions needed and the request
	// did not declare.
	missing needs
}

type callKey struct{}

// CallFrom returns the call whose handler ctx belongs to, or nil outside
// the handler of a tool added with [AddTool].
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// Request returns go-sdk's request of the call. Inside a task it is
// rebuilt from the task: its Session is nil, and Params.Meta holds the
// _meta of the call that created the task, but its progress token.
func (c *Call) Request() *mcp.CallToolRequest { return c.req }

// InTask reports whether the call runs as a task (rather than inline).
func (c *Call) InTask() bool { return c.run.InTask() }

// TaskID returns the id of the call's task, or "" for a synchronous call.
func (c *Call) TaskID() string { return c.run.ID() }

// Attempt returns the run's attempt: 1 for a task's first run, more when
// it is run again after a lost worker or a graceful release; 0 inline.
func (c *Call) Attempt() int { return c.run.Attempt() }

// Principal returns who made the call (see [Options.Principal]).
func (c *Call) Principal() string { return c.principal }

// Run returns the engine's view of the call: the task's run, or an inline
// run that runs outside any task.
func (c *Call) Run() *engine.Run { return c.run }

// SetStatus sets the status message of ctx's task, which clients see on
// their next tasks/get. In a synchronous call it does nothing.
func SetStatus(ctx context.Context, msg string) error {
	c := CallFrom(ctx)
	if c == nil {
		return ErrNotInCall
	}
	return c.run.SetStatus(ctx, msg)
}

// inlineCall returns the Call of a synchronous tools/call.
func (s *Server) inlineCall(t *toolEntry, req *mcp.CallToolRequest) *Call {
	caps := rawClientCapabilities(sdkMeta(req))
	return &Call{
		s: s, tool: t, req: req, caps: caps, now: time.Now,
		run:       engine.NewInlineRun(t.tool.Name, req.Params.Arguments, caps),
		principal: s.opts.Principal(req.GetExtra()),
	}
}

// taskCall returns the Call of a task's run, with go-sdk's request rebuilt
// from the task: the protocol version of its era and the client
// capabilities of the call that created it.
func (s *Server) taskCall(t *toolEntry, r *engine.Run) *Call {
	version := task.ProtocolVersion
	if !DeclaresTasks(task.ProtocolVersion, r.ClientCapabilities()) {
		version = task.LegacyProtocolVersion // only 2025-11-25 tasks do not declare the extension
	}
	meta := mcp.Meta{}
	if kept := r.Meta(); kept != nil {
		_ = json.Unmarshal(kept, &meta) // an object, checked by taskMeta
	}
	meta[mcp.MetaKeyProtocolVersion] = version
	var caps any
	if json.Unmarshal(r.ClientCapabilities(), &caps) == nil && caps != nil {
		meta[metaClientCapabilities] = caps
	}
	req := &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Meta: meta, Name: t.tool.Name, Arguments: r.Args()},
		Extra:  &mcp.RequestExtra{},
	}
	return &Call{s: s, tool: t, req: req, run: r, principal: r.Principal(), caps: r.ClientCapabilities(), now: time.Now}
}

// MaxTaskMetaBytes bounds what a task keeps of its request's _meta (see
// taskMeta), and, apart, the client capabilities it keeps: past either,
// the create is refused with -32602.
const MaxTaskMetaBytes = 64 << 10

// taskMeta returns what a task keeps of a tools/call's params._meta, raw:
// the members that a handler of the task's runs finds in its request's
// _meta again, as it would in an inline call. Left out are the protocol
// version and the client capabilities, which every run is given anew (the
// task keeps the capabilities apart), and the progress token, since a run
// has nobody to report progress to. The members kept are copied byte for
// byte, in their order, into a new buffer (raw may point into a request
// body). It returns nil if nothing is kept, and a -32602 error if raw is
// not an object or what is kept is over MaxTaskMetaBytes.
func taskMeta(raw json.RawMessage) (json.RawMessage, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var tok segjson.Tokenizer // a scan, not a decode: a create pays for it
	tok.Reset(raw)
	if !tok.Next() || tok.Delim != '{' {
		return nil, invalidParams("params._meta must be an object")
	}
	kept := make([]byte, 0, len(raw))
	for tok.Next() && tok.Depth > 0 { // the object's closing brace is at depth 0
		if !tok.IsKey {
			continue // a comma
		}
		key := tok.Value
		if !tok.Next() || tok.Delim != ':' || !tok.Next() || (tok.Delim != 0 && tok.Delim != '{' && tok.Delim != '[') {
			return nil, invalidParams("params._meta is not valid JSON")
		}
		start := len(raw) - tok.Remaining() - len(tok.Value)
		if d := tok.Depth; tok.Delim == '{' || tok.Delim == '[' {
			for tok.Next() && (tok.Depth != d || (tok.Delim != '}' && tok.Delim != ']')) {
			}
		}
		if tok.Err != nil || droppedMetaKey(key) {
			continue
		}
		if len(kept) == 0 {
			kept = append(kept, '{')
		} else {
			kept = append(kept, ',')
		}
		kept = append(append(append(kept, key...), ':'), raw[start:len(raw)-tok.Remaining()]...)
	}
	if tok.Err != nil {
		return nil, invalidParams("params._meta: %v", tok.Err)
	}
	if len(kept) == 0 {
		return nil, nil
	}
	if len(kept)+1 > MaxTaskMetaBytes {
		return nil, invalidParams("params._meta holds %d bytes besides the protocol version and client capabilities; a task keeps at most %d (MaxTaskMetaBytes): send large values in the arguments", len(kept)+1, MaxTaskMetaBytes)
	}
	return append(kept, '}'), nil
}

// droppedMetaKey reports whether the _meta member of the quoted key is one
// that a task does not keep (see taskMeta).
func droppedMetaKey(quoted []byte) bool {
	k := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		var s string
		if decodeJSON(quoted, &s) != nil {
			return false
		}
		k = []byte(s)
	}
	switch string(k) {
	case mcp.MetaKeyProtocolVersion, metaClientCapabilities, metaProgressToken:
		return true
	}
	return false
}

// metaProgressToken is the _meta key of a request's progress token.
const metaProgressToken = "progressToken"

// round returns what ends an inline call instead of the handler's own
// result: an MRTR round asking the questions that found no answer, or the
// error of a bad requestState or answer.
func (c *Call) round() (*mcp.CallToolResult, error) {
	switch {
	case c.failed != nil:
		return nil, c.failed
	case len(c.pending) == 0:
		return nil, nil
	}
	state, err := c.s.signState(&requestState{
		Principal: c.principal, Tool: c.tool.tool.Name, Args: argsDigest(c.req.Params.Arguments),
		Expires: c.now().Add(requestStateTTL).UnixMilli(), Answers: c.answers,
	})
	if err != nil {
		return nil, internalError("tool %q: requestState: %v", c.tool.tool.Name, err)
	}
	return &mcp.CallToolResult{InputRequests: c.pending, RequestState: state}, nil
}

// askInline answers reqs from the call's inputResponses and the answers
// its requestState carries from earlier rounds. The questions without an
// answer are kept for the round that ends the call, and ErrInputRequired
// is returned.
func (c *Call) askInline(reqs mcp.InputRequestMap, wire map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if c.failed != nil {
		return nil, c.failed
	}
	if !c.loaded {
		c.loaded = true
		if c.failed = c.loadAnswers(); c.failed != nil {
			return nil, c.failed
		}
	}
	out := make(map[string]json.RawMessage, len(reqs))
	for k, r := range reqs {
		a, ok := c.answers[k]
		if !ok {
			if c.pending == nil {
				c.pending = mcp.InputRequestMap{}
			}
			c.pending[k] = r
			continue
		}
		if err := checkAnswer(k, wire[k], a); err != nil {
			delete(c.answers, k) // ask again, as a task keeps the key open
			c.failed = invalidParams("params.inputResponses[%q]: %v", k, err)
			return nil, c.failed
		}
		out[k] = a
	}
	if len(out) < len(reqs) {
		return nil, ErrInputRequired
	}
	return out, nil
}

// loadAnswers reads the answers of earlier rounds from the request's
// requestState, if this server issued it, and this round's from its
// inputResponses.
func (c *Call) loadAnswers() error {
	c.answers = map[string]json.RawMessage{}
	p := c.req.Params
	if strings.HasPrefix(p.RequestState, requestStatePrefix) {
		st, err := c.s.verifyState(p.RequestState, c.now())
		if err != nil || st.Principal != c.principal || st.Tool != c.tool.tool.Name || st.Args != argsDigest(p.Arguments) {
			return invalidParams("params.requestState was not issued for this call by this server, or has expired; call the tool again without it")
		}
		maps.Copy(c.answers, st.Answers)
	}
	for k, r := range p.InputResponses {
		b, err := json.Marshal(r)
		if err != nil {
			return invalidParams("params.inputResponses[%q]: %v", k, err)
		}
		c.answers[k] = b
	}
	return nil
}

// requestState is what an inline call's MRTR round carries to the next
// round: the answers so far, bound to the principal, the tool and its
// arguments, until Expires (Unix ms). It is signed with the server's
// session key, so that a client cannot forge answers (TASKS-SPEC §2.9).
type requestState struct {
	Principal string                     `json:"p"`
	Tool      string                     `json:"t"`
	Args      string                     `json:"d"`
	Expires   int64                      `json:"e"`
	Answers   map[string]json.RawMessage `json:"a,omitempty"`
}

const requestStatePrefix = "mcptasks.mrtr."

func (s *Server) signState(st *requestState) (string, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	body := requestStatePrefix + base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(s.sessionKey, body)), nil
}

func (s *Server) verifyState(v string, now time.Time) (*requestState, error) {
	i := strings.LastIndexByte(v, '.')
	bad := errors.New("bad requestState")
	if i < len(requestStatePrefix) {
		return nil, bad
	}
	mac, err := base64.RawURLEncoding.DecodeString(v[i+1:])
	if err != nil || !hmac.Equal(mac, sessionMAC(s.sessionKey, v[:i])) {
		return nil, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(v[len(requestStatePrefix):i])
	if err != nil {
		return nil, bad
	}
	var st requestState
	if json.Unmarshal(b, &st) != nil || now.UnixMilli() > st.Expires {
		return nil, bad
	}
	return &st, nil
}

// argsDigest is a digest of a call's arguments as JSON values, so that a
// client that re-encodes them between rounds still matches.
func argsDigest(args json.RawMessage) string {
	var v any
	if json.Unmarshal(args, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			args = b
		}
	}
	sum := sha256.Sum256(args)
	return fmt.Sprintf("%x", sum[:16])
}

// Step runs fn as the durable step name of ctx's task and returns its
// result: the first run stores the result with the task, and a re-run of
// the task (after an answer that resumed it, a restart or a lost worker)
// gets the stored result back without calling fn. A step whose result was
// not stored before a crash runs again: steps run at least once. In a
// synchronous call Step just calls fn. See [engine.Step] for the bounds.
func Step[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	c := CallFrom(ctx)
	if c == nil {
		var zero T
		return zero, ErrNotInCall
	}
	return engine.Step(ctx, c.run, name, fn)
}
