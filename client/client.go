package client

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// ProtocolVersion is the MCP revision the client speaks.
const ProtocolVersion = task.ProtocolVersion

// Keys of the per-request _meta.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
)

// Defaults for the zero values of [Options].
const (
	DefaultMaxReplyBytes   = 16 << 20
	DefaultMaxInputRounds  = 8
	DefaultPollInterval    = time.Second
	DefaultMinPollInterval = 100 * time.Millisecond
	DefaultMaxPollInterval = 5 * time.Minute
	DefaultMaxInFlight     = 4
	DefaultCreateRetries   = 5
	DefaultListenBackstop  = 30 * time.Second
	// DefaultRetryBudget covers a restart or a deploy of the server: a
	// drain (10 s by default for "mcptasks serve") and the start of the
	// next process, with room to spare.
	DefaultRetryBudget = 2 * time.Minute

	// DefaultMaxConsecutiveFails was the default of
	// Options.MaxConsecutiveFailures.
	//
	// Deprecated: a wait no longer counts failures unless told to; it
	// retries for Options.RetryBudget (DefaultRetryBudget).
	DefaultMaxConsecutiveFails = 5
)

// maxRetryDelay bounds the pause between the retries of a wait whose
// requests fail (unless the task's poll interval is longer): a server
// back from a restart is seen within about this long.
const maxRetryDelay = 5 * time.Second

// createRetryDelay is the pause before the first retry of a tools/call
// whose outcome is unknown; it doubles at each retry, up to
// maxCreateRetryDelay, each spread by ±20% (see backoff).
const (
	createRetryDelay    = 250 * time.Millisecond
	maxCreateRetryDelay = 4 * time.Second
)

// Options configure a [Client]. The zero value is usable.
type Options struct {
	// HTTPClient sends the requests (http.DefaultClient if nil). Set its
	// Timeout, or use contexts, to bound requests.
	HTTPClient *http.Client
	// Token, if set, is sent as "Authorization: Bearer Token".
	Token string
	// ClientInfo is sent as _meta clientInfo (name "mcptasks-client" if
	// nil).
	ClientInfo *mcp.Implementation
	// Capabilities are the client capabilities declared on every request.
	// The Tasks extension is always added. If nil, form elicitation is
	// declared, and nothing else: a client answers forms through its
	// InputHandler or, without one, with [Task.Update] after a wait
	// returns an *[InputRequiredError] (or during a wait with
	// [ManualInput]). Set Capabilities to declare other kinds of input
	// (URL elicitation, sampling, roots) or none.
	Capabilities *mcp.ClientCapabilities
	// InputHandler answers the server's input requests: MRTR rounds of
	// tools/call, and the inputRequests of tasks.
	InputHandler InputHandler
	// Journal records tasks so that they survive a restart of the
	// program; nil records nothing.
	Journal Journal
	// Logger receives the client's logs (discarded if nil).
	Logger *slog.Logger
	// OnNotification, if set, receives the notifications that arrive on
	// an SSE reply before its response. It must not block.
	OnNotification func(method string, params json.RawMessage)

	// MaxReplyBytes bounds a JSON reply or one SSE event
	// (DefaultMaxReplyBytes if zero).
	MaxReplyBytes int64
	// MaxInputRounds bounds the MRTR rounds of one call
	// (DefaultMaxInputRounds if zero).
	MaxInputRounds int
	// DefaultPollInterval is used when a task has no pollIntervalMs
	// (DefaultPollInterval if zero).
	DefaultPollInterval time.Duration
	// MinPollInterval and MaxPollInterval clamp the server's
	// pollIntervalMs (DefaultMinPollInterval and DefaultMaxPollInterval
	// if zero).
	MinPollInterval, MaxPollInterval time.Duration
	// MaxInFlight bounds the tasks/get requests [Client.WaitAll] has in
	// flight at once (DefaultMaxInFlight if zero).
	MaxInFlight int
	// RetryBudget is how long a wait goes on retrying the requests of a
	// task that fail transiently (transport errors such as a refused
	// connection, HTTP 5xx and 429, -32603), counted from the first
	// failure after the last round that succeeded: long enough to ride out
	// a restart or a deploy of the server (DefaultRetryBudget if zero;
	// negative: the first failure ends the wait). The pauses between
	// retries start at the task's poll interval and double, up to 5 s (or
	// the poll interval, if longer), each spread by ±20% at random so that
	// the clients of a restarted server do not all come back at once. A
	// wait that gives up returns an *[UnavailableError]: the task may
	// still be running, and a later wait takes it up.
	RetryBudget time.Duration
	// MaxConsecutiveFailures, if positive, ends a wait also after that
	// many transient failures in a row, even within RetryBudget, with an
	// *[UnavailableError].
	//
	// Deprecated: a count of failures says little about time once the
	// retries back off (and zero no longer means 5): use RetryBudget.
	MaxConsecutiveFailures int
	// CreateRetries is how many times CallTool sends a tools/call again,
	// with the same idempotency key, when its outcome is unknown (a
	// transport error, HTTP 5xx, -32603) and the server honours keys
	// (DefaultCreateRetries if zero, none if negative). The pauses
	// between tries double from 250 ms, up to 4 s.
	CreateRetries int
	// RequestTimeout, if set, bounds each request from its sending to the
	// end of its reply, and the wait for the acknowledgement of a
	// subscriptions/listen (whose stream then stays open as long as the
	// wait). A poll that times out is retried like any transient failure.
	// It does not bound a tools/call, which may run its tool inline for as
	// long as the tool takes (and which, timed out, would be sent again),
	// nor a 2025-11-25 tasks/result, which waits for the task's end: ctx
	// bounds those. Prefer it to HTTPClient.Timeout, which would cut
	// subscriptions short.
	RequestTimeout time.Duration
	// ListenBackstop is how often a wait that receives notifications/tasks
	// still reads its tasks with tasks/get, in case a notification was
	// lost (DefaultListenBackstop if zero).
	ListenBackstop time.Duration
	// ProtocolVersion is the MCP revision to speak: ProtocolVersion
	// (2026-07-28, the Tasks extension), LegacyProtocolVersion
	// (2025-11-25, the experimental tasks of the TypeScript SDK v1 and
	// mcp-go: a session opened with initialize, params.task, tasks/get
	// and tasks/result), or "" to find out with the first request:
	// server/discover, and 2025-11-25 if the server does not answer it.
	ProtocolVersion string
}

// Client sends requests to one MCP endpoint. It is safe for concurrent use.
type Client struct {
	url  string
	opts Options
	http *http.Client
	log  *slog.Logger
	// meta is the per-request _meta, encoded once.
	meta   map[string]json.RawMessage
	nextID atomic.Int64

	mu    sync.Mutex
	tools map[string][]paramHeader // x-mcp-header bindings from tools/list; nil until listed
	// keys is whether the server honours idempotency keys, as its
	// server/discover said: 0 not asked yet, 1 yes, -1 no.
	keys int

	// noPush is set once the server has shown that it does not offer
	// notifications/tasks: waits then poll without asking.
	noPush atomic.Bool

	// noTasks omits the Tasks extension from the declared capabilities
	// (tests of servers' -32021 replies).
	noTasks bool

	protoMu    sync.Mutex
	protoKnown bool    // the protocol has been decided
	leg        *legacy // the 2025-11-25 session; nil for 2026-07-28
}

// New returns a client of the MCP endpoint at url.
func New(url string, opts *Options) *Client {
	c := &Client{url: url}
	if opts != nil {
		c.opts = *opts
	}
	o := &c.opts
	o.MaxReplyBytes = cmp.Or(o.MaxReplyBytes, DefaultMaxReplyBytes)
	o.MaxInputRounds = cmp.Or(o.MaxInputRounds, DefaultMaxInputRounds)
	o.DefaultPollInterval = cmp.Or(o.DefaultPollInterval, DefaultPollInterval)
	o.MinPollInterval = cmp.Or(o.MinPollInterval, DefaultMinPollInterval)
	o.MaxPollInterval = cmp.Or(o.MaxPollInterval, DefaultMaxPollInterval)
	o.MaxInFlight = cmp.Or(o.MaxInFlight, DefaultMaxInFlight)
	o.RetryBudget = cmp.Or(o.RetryBudget, DefaultRetryBudget)
	o.CreateRetries = max(cmp.Or(o.CreateRetries, DefaultCreateRetries), 0)
	o.ListenBackstop = cmp.Or(o.ListenBackstop, DefaultListenBackstop)
	c.http = o.HTTPClient
	if c.http == nil {
		c.http = http.DefaultClient
	}
	c.log = o.Logger
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.buildMeta()
	return c
}

// encodeCaps marshals caps without the empty "roots" object that the v1
// ClientCapabilities struct always emits: roots (deprecated in
// 2026-07-28) is declared only with listChanged.
func encodeCaps(caps *mcp.ClientCapabilities) json.RawMessage {
	b, _ := json.Marshal(caps)
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	if string(m["roots"]) == "{}" {
		delete(m, "roots")
	}
	b, _ = json.Marshal(m)
	return b
}

func (c *Client) buildMeta() {
	var caps mcp.ClientCapabilities
	if c.opts.Capabilities != nil {
		caps = *c.opts.Capabilities
	} else {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
	}
	ext := make(map[string]any, len(caps.Extensions)+1)
	for k, v := range caps.Extensions {
		ext[k] = v
	}
	if c.noTasks {
		delete(ext, task.ExtensionID)
	} else {
		ext[task.ExtensionID] = map[string]any{}
	}
	caps.Extensions = ext
	if len(ext) == 0 {
		caps.Extensions = nil
	}
	info := c.opts.ClientInfo
	if info == nil {
		info = &mcp.Implementation{Name: "mcptasks-client", Version: "0.1.0"}
	}
	capsJSON := encodeCaps(&caps)
	infoJSON, _ := json.Marshal(info)
	c.meta = map[string]json.RawMessage{
		MetaProtocolVersion:    json.RawMessage(`"` + ProtocolVersion + `"`),
		MetaClientCapabilities: capsJSON,
		MetaClientInfo:         infoJSON,
	}
}

// URL returns the endpoint the client talks to.
func (c *Client) URL() string { return c.url }

// Request sends one request of any method and decodes its result into
// result (if non-nil). params is marshalled to a JSON object (nil means
// {}); the client adds _meta. It does not handle MRTR rounds or tasks.
func (c *Client) Request(ctx context.Context, method string, params, result any) error {
	k, err := newCall(method, params)
	if err != nil {
		return err
	}
	raw, err := c.do(ctx, k)
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return invalidResult(method, "%v", err)
	}
	return nil
}

func newCall(method string, params any) (*call, error) {
	k := &call{method: method, params: map[string]json.RawMessage{}}
	if params == nil {
		return k, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: encode params: %w", method, err)
	}
	if string(b) == "null" {
		return k, nil
	}
	if err := json.Unmarshal(b, &k.params); err != nil {
		return nil, fmt.Errorf("%s: params must encode to a JSON object: %w", method, err)
	}
	return k, nil
}

// completeResult decodes a result that must have resultType "complete"
// (or none, as from a pre-2026 server).
func completeResult(method string, raw json.RawMessage, out any) error {
	var rt struct {
		ResultType *string `json:"resultType"`
	}
	if err := json.Unmarshal(raw, &rt); err != nil {
		return invalidResult(method, "%v", err)
	}
	if rt.ResultType != nil && *rt.ResultType != task.ResultTypeComplete {
		return invalidResult(method, "resultType %q where only \"complete\" is allowed", *rt.ResultType)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return invalidResult(method, "%v", err)
	}
	return nil
}

// Discover sends server/discover and returns the server's versions and
// capabilities.
func (c *Client) Discover(ctx context.Context) (*mcp.DiscoverResult, error) {
	raw, err := c.do(ctx, &call{method: "server/discover"})
	if err != nil {
		return nil, err
	}
	var r mcp.DiscoverResult
	if err := completeResult("server/discover", raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// maxPages bounds the pages a list method follows.
const maxPages = 1000

// list follows nextCursor through every page of a list method.
func list[T any](ctx context.Context, c *Client, method string, items func(*T) int) ([]*T, error) {
	var out []*T
	cursor := ""
	for range maxPages {
		k := &call{method: method, params: map[string]json.RawMessage{}}
		if cursor != "" {
			k.params["cursor"], _ = json.Marshal(cursor)
		}
		raw, err := c.do(ctx, k)
		if err != nil {
			return nil, err
		}
		var page T
		if err := completeResult(method, raw, &page); err != nil {
			return nil, err
		}
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(raw, &next)
		out = append(out, &page)
		if next.NextCursor == "" || items(&page) == 0 {
			return out, nil
		}
		cursor = next.NextCursor
	}
	return nil, fmt.Errorf("%s: more than %d pages", method, maxPages)
}

// ListTools returns every tool of the server, following pagination. Tools
// with an invalid x-mcp-header annotation are left out (and logged), as
// the transport requires. The x-mcp-header bindings of the listed tools
// are remembered, so that later calls mirror those arguments into
// Mcp-Param-* headers.
func (c *Client) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	pages, err := list(ctx, c, "tools/list", func(p *mcp.ListToolsResult) int { return len(p.Tools) })
	if err != nil {
		return nil, err
	}
	var tools []*mcp.Tool
	bindings := map[string][]paramHeader{}
	for _, p := range pages {
		for _, t := range p.Tools {
			if t == nil {
				continue
			}
			b, err := paramHeaders(t.InputSchema)
			if err != nil {
				c.log.Warn("leaving out a tool with an invalid x-mcp-header", "tool", t.Name, "err", err)
				continue
			}
			bindings[t.Name] = b
			tools = append(tools, t)
		}
	}
	c.mu.Lock()
	c.tools = bindings
	c.mu.Unlock()
	return tools, nil
}

// ListResources returns every resource of the server.
func (c *Client) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	pages, err := list(ctx, c, "resources/list", func(p *mcp.ListResourcesResult) int { return len(p.Resources) })
	if err != nil {
		return nil, err
	}
	var out []*mcp.Resource
	for _, p := range pages {
		out = append(out, p.Resources...)
	}
	return out, nil
}

// ListPrompts returns every prompt of the server.
func (c *Client) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	pages, err := list(ctx, c, "prompts/list", func(p *mcp.ListPromptsResult) int { return len(p.Prompts) })
	if err != nil {
		return nil, err
	}
	var out []*mcp.Prompt
	for _, p := range pages {
		out = append(out, p.Prompts...)
	}
	return out, nil
}

// ReadResource reads the resource at uri, answering MRTR rounds through
// the InputHandler.
func (c *Client) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	k, err := newCall("resources/read", map[string]any{"uri": uri})
	if err != nil {
		return nil, err
	}
	raw, _, err := c.roundTrip(ctx, k, "", c.opts.InputHandler)
	if err != nil {
		return nil, err
	}
	var r mcp.ReadResourceResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, invalidResult(k.method, "%v", err)
	}
	return &r, nil
}

// GetPrompt gets the prompt name with args, answering MRTR rounds through
// the InputHandler.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	k, err := newCall("prompts/get", p)
	if err != nil {
		return nil, err
	}
	raw, _, err := c.roundTrip(ctx, k, "", c.opts.InputHandler)
	if err != nil {
		return nil, err
	}
	var r mcp.GetPromptResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, invalidResult(k.method, "%v", err)
	}
	return &r, nil
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
