package mcpserver

//lint:file-ignore SA1019 sampling and roots are deprecated features, but still input a task may ask for

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// Errors of the input helpers when the request that created the task did
// not declare what the input needs; nothing is asked then (TASKS-SPEC §2.9,
// §3.17: a task asks only for the kinds of input its originating request
// declared). A tool that always asks declares the capability in
// [ToolOptions.Requires] instead, and such requests never become tasks.
var (
	// ErrElicitationNotDeclared: the client did not declare elicitation in
	// the mode asked for (form, or url).
	ErrElicitationNotDeclared = errors.New("the client did not declare the elicitation capability")
	// ErrSamplingNotDeclared: the client did not declare sampling.
	ErrSamplingNotDeclared = errors.New("the client did not declare the sampling capability")
	// ErrRootsNotDeclared: the client did not declare roots.
	ErrRootsNotDeclared = errors.New("the client did not declare the roots capability")
)

// Elicit asks the client one question and returns the answer: a form
// (p.RequestedSchema) or, with p.Mode "url", a URL for the user to open
// (p.URL, p.ElicitationID), as the client declared it can show. ctx is the
// context of a handler added with [AddTool].
//
// Inside a task, the task becomes input_required with the question in its
// inputRequests, and Elicit waits for the answer, which arrives through
// tasks/update on any replica. key must be unique for the task's life; a
// key answered before (by an earlier run of the task) returns the stored
// answer without asking again. If ctx ends first while the task goes on
// (a deadline the handler set on its question), the question is taken
// back: clients no longer see it, and the task is working again.
//
// In a synchronous call, Elicit is an MRTR round: if the client's retry of
// the call carries the answer (in inputResponses, or from an earlier round
// in requestState), Elicit returns it; otherwise it returns
// [ErrInputRequired] and the call answers with an input_required result
// asking the question. The client calls again with the answer, which runs
// the handler again from the start: work done before the question is
// repeated. The answers of earlier rounds travel in requestState, signed
// with the server's session key and bound to the principal, the tool and
// its arguments.
//
// Either way, a client that did not declare the kind of elicitation asked
// for is not asked: Elicit returns [ErrElicitationNotDeclared]. A handler
// may go on without the answer; if it returns the error, a synchronous call
// answers -32021 naming the capability, and a task completes with a tool
// error (it exists already). A handler must not ask from several
// goroutines at once.
func Elicit(ctx context.Context, key string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	res, err := ElicitAll(ctx, map[string]*mcp.ElicitParams{key: p})
	if err != nil {
		return nil, err
	}
	return res[key], nil
}

// ElicitAll is [Elicit] for several questions asked at once; a task stays
// input_required until all are answered.
func ElicitAll(ctx context.Context, ps map[string]*mcp.ElicitParams) (map[string]*mcp.ElicitResult, error) {
	reqs := make(mcp.InputRequestMap, len(ps))
	for k, p := range ps {
		reqs[k] = p
	}
	msg := "Waiting for input"
	if len(ps) == 1 {
		for _, p := range ps {
			msg = p.Message
		}
	}
	return askAs[*mcp.ElicitResult](ctx, reqs, msg)
}

// CreateMessage asks the client to sample an LLM (sampling/createMessage)
// and returns the message, as [Elicit] returns an answer.
func CreateMessage(ctx context.Context, key string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	res, err := askAs[*mcp.CreateMessageResult](ctx, mcp.InputRequestMap{key: p}, "Waiting for a sampled message")
	if err != nil {
		return nil, err
	}
	return res[key], nil
}

// ListRoots asks the client for its roots (roots/list) and returns them,
// as [Elicit] returns an answer.
func ListRoots(ctx context.Context, key string) (*mcp.ListRootsResult, error) {
	res, err := askAs[*mcp.ListRootsResult](ctx, mcp.InputRequestMap{key: &mcp.ListRootsParams{}}, "Waiting for the client's roots")
	if err != nil {
		return nil, err
	}
	return res[key], nil
}

// askAs asks for reqs and decodes each answer into a new R.
func askAs[R any](ctx context.Context, reqs mcp.InputRequestMap, statusMessage string) (map[string]R, error) {
	answers, err := ask(ctx, reqs, statusMessage)
	if err != nil {
		return nil, err
	}
	out := make(map[string]R, len(answers))
	for k, a := range answers {
		var r R
		if err := json.Unmarshal(a, &r); err != nil {
			return nil, fmt.Errorf("mcpserver: the answer to %q is not a %s result: %w", k, methodOf(reqs[k]), err)
		}
		out[k] = r
	}
	return out, nil
}

// ask is the one implementation behind the input helpers: it checks that
// the call's request declared what each request needs, then asks for all
// of them at once, through the task or as an MRTR round, and returns the
// answers, by key.
func ask(ctx context.Context, reqs mcp.InputRequestMap, statusMessage string) (map[string]json.RawMessage, error) {
	c := CallFrom(ctx)
	if c == nil {
		return nil, ErrNotInCall
	}
	if !c.InTask() && c.req.ProtocolVersion() < task.ProtocolVersion {
		return nil, fmt.Errorf("%w: a synchronous call of MCP %s cannot carry a question (MRTR needs %s)", ErrElicitationNotDeclared, c.req.ProtocolVersion(), task.ProtocolVersion)
	}
	have := parseCaps(c.caps).has()
	for _, k := range slices.Sorted(maps.Keys(reqs)) {
		missing := inputNeeds(reqs[k]).minus(have)
		if err := notDeclared(missing); err != nil {
			c.missing = c.missing.union(missing)
			return nil, err
		}
	}
	wire := make(map[string]json.RawMessage, len(reqs))
	for k, r := range reqs {
		b, err := encodeInputRequest(r)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: input request %q: %w", k, err)
		}
		wire[k] = b
	}
	if !c.InTask() {
		return c.askInline(reqs, wire)
	}
	return c.run.RequestInput(ctx, wire, statusMessage)
}

// notDeclaredError reports whether err is an input helper's error for a
// capability the request did not declare.
func notDeclaredError(err error) bool {
	return errors.Is(err, ErrElicitationNotDeclared) || errors.Is(err, ErrSamplingNotDeclared) || errors.Is(err, ErrRootsNotDeclared)
}

// notDeclared returns the error of an input helper whose request needs the
// capabilities missing, or nil if none is.
func notDeclared(missing needs) error {
	switch {
	case missing.form:
		return fmt.Errorf("%w (form mode)", ErrElicitationNotDeclared)
	case missing.url:
		return fmt.Errorf("%w (url mode)", ErrElicitationNotDeclared)
	case missing.sampling:
		return ErrSamplingNotDeclared
	case missing.roots:
		return ErrRootsNotDeclared
	}
	return nil
}

// encodeInputRequest returns r in its wire shape, {"method", "params"},
// byte for byte as go-sdk's mcp.InputRequestMap encodes it (an elicitation
// without a mode gets the one go-sdk infers), without the map and the
// second pass that encoding r through an InputRequestMap costs. The params
// are encoded by encoding/json, as go-sdk does: a handler's schema is any
// value, and encoding/json refuses one that refers to itself. Like go-sdk,
// it knows the four kinds of request of go-sdk v1.8.0.
func encodeInputRequest(r mcp.InputRequest) (json.RawMessage, error) {
	switch p := r.(type) {
	case *mcp.ElicitParams:
		if p != nil && p.Mode == "" {
			inferred := *p
			inferred.Mode = elicitMode(p)
			r = &inferred
		}
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams, *mcp.ListRootsParams:
	default:
		return nil, fmt.Errorf("unsupported type: %T", r)
	}
	params, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	method := methodOf(r)
	b := make([]byte, 0, len(`{"method":"","params":}`)+len(method)+len(params))
	b = append(b, `{"method":"`...)
	b = append(b, method...)
	b = append(b, `","params":`...)
	b = append(b, params...)
	return append(b, '}'), nil
}

// methodOf returns the method of an input request.
func methodOf(r mcp.InputRequest) string {
	switch r.(type) {
	case *mcp.ElicitParams:
		return "elicitation/create"
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling/createMessage"
	case *mcp.ListRootsParams:
		return "roots/list"
	}
	return fmt.Sprintf("%T", r)
}
