package mcpserver

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// fastPathVersion is the protocol version the fast path serves; requests
// of any other go through go-sdk.
const fastPathVersion = task.ProtocolVersion

// serveTaskMethod answers tasks/get, tasks/update and tasks/cancel without
// go-sdk's per-request session, which costs about half a millisecond and
// half a megabyte per request: polling is the hot path of every deployment.
// It takes only requests that are well-formed in every respect go-sdk
// checks (host, media types, protocol version header and _meta, method
// header) and reports false for all others, which then go through go-sdk
// and get its answers. What it answers, it answers exactly as the go-sdk
// path would, apart from replying with application/json instead of an SSE
// stream (clients must accept both). principal is the request's, as the
// guard decided it.
func (s *Server) serveTaskMethod(w http.ResponseWriter, r *http.Request, principal string, m *message, h *held) bool {
	if s.opts.DisableFastPath || !s.fastEligible(r, m) {
		return false
	}
	res, err := s.serveTask(r.Context(), &taskCall{
		method:         m.Method,
		declared:       DeclaresTasks(fastPathVersion, m.Params.Meta.ClientCapabilities),
		principal:      principal,
		taskID:         m.Params.TaskID,
		inputResponses: m.Params.InputResponses,
		header:         r.Header,
		meta:           m.Params.Meta,
		held:           h,
	})
	if err != nil {
		writeRPCError(w, m.ID, err)
		return true
	}
	s.writeResult(w, m.ID, res)
	return true
}

// serveCreate answers a tools/call that creates a task without go-sdk, on
// the same terms as serveTaskMethod. It takes only calls that the
// middleware would turn into a task at once or refuse (admit decides for
// both): a task-capable tool, a client that declares the extension, no
// Prepare step, no MRTR fields and no Mcp-Param-* headers to check.
// Everything else (sync calls, MRTR rounds, unknown tools) goes through
// go-sdk.
func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, principal string, m *message) bool {
	t := s.tools[m.Params.Name]
	if s.opts.DisableFastPath || t == nil || t.opts.Prepare != nil || t.paramHeaders ||
		m.Params.InputResponses != nil || m.Params.RequestState != nil ||
		!s.fastEligible(r, m) || r.Header.Get("Mcp-Name") != m.Params.Name {
		return false
	}
	caps := m.Params.Meta.ClientCapabilities
	has := parseCaps(caps).has()
	if !has.declaresTasks(fastPathVersion) {
		return false
	}
	args := m.Params.Arguments
	asTask, err := s.admit(r.Context(), t, fastPathVersion, has, args)
	if err != nil {
		writeRPCError(w, m.ID, err)
		return true
	}
	if !asTask {
		return false
	}
	key, err := idempotencyKey(m.Params.Meta.IdempotencyKey)
	if err != nil {
		writeRPCError(w, m.ID, err)
		return true
	}
	res, err := s.createTask(r.Context(), t, &taskRequest{args: args, caps: caps, meta: rawMeta(m.body), key: key,
		principal: principal, header: r.Header, trace: m.Params.Meta})
	if err != nil {
		writeRPCError(w, m.ID, err)
		return true
	}
	s.writeResult(w, m.ID, res)
	return true
}

// fastEligible reports whether go-sdk would accept r and m up to dispatch.
func (s *Server) fastEligible(r *http.Request, m *message) bool {
	if m.JSONRPC != "2.0" || m.ID == nil || m.Params.Meta == nil { // the guard has checked the id
		return false
	}
	h := r.Header
	if h.Get("MCP-Protocol-Version") != fastPathVersion || h.Get("Mcp-Method") != m.Method {
		return false
	}
	var v string
	if decodeJSON(m.Params.Meta.ProtocolVersion, &v) != nil || v != fastPathVersion {
		return false
	}
	// _meta's values as go-sdk decodes them (validateRequestMeta): what
	// does not fit its types it refuses with -32602.
	if ci := m.Params.Meta.ClientInfo; ci != nil && (!isJSONObject(ci) || decodeJSON(ci, new(mcp.Implementation)) != nil) {
		return false
	}
	var caps sdkCaps
	if !isJSONObject(m.Params.Meta.ClientCapabilities) || decodeJSON(m.Params.Meta.ClientCapabilities, &caps) != nil ||
		!objectOrNull(caps.Experimental) || !objectOrNull(caps.Extensions) {
		return false
	}
	// A member given twice: go-sdk takes the last params (or _meta)
	// whole, where one decode merges them. Rare enough to leave to go-sdk
	// whenever the name appears twice, in a string or not.
	if bytes.Count(m.body, []byte(`"params"`)) > 1 || bytes.Count(m.body, []byte(`"_meta"`)) > 1 {
		return false
	}
	if m.stray {
		return false
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		// go-sdk's test: the media type as mime parses it, parameters
		// and all (a parameter without a value is refused).
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return false
		}
	}
	if !acceptsJSON(h.Values("Accept")) {
		return false
	}
	return true
}

// sdkCaps has the shape go-sdk decodes clientCapabilities into (its
// clientCapabilitiesV2); its two maps are read raw, and objectOrNull checks
// them.
type sdkCaps struct {
	Experimental json.RawMessage `json:"experimental"`
	Extensions   json.RawMessage `json:"extensions"`
	Roots        *struct {
		ListChanged bool `json:"listChanged"`
	} `json:"roots"`
	Sampling *struct {
		Context *struct{} `json:"context"`
		Tools   *struct{} `json:"tools"`
	} `json:"sampling"`
	Elicitation *struct {
		Form *struct{} `json:"form"`
		URL  *struct{} `json:"url"`
	} `json:"elicitation"`
}

// objectOrNull reports whether b is absent, null or a JSON object: what a
// Go map decodes.
func objectOrNull(b json.RawMessage) bool {
	return len(b) == 0 || string(b) == "null" || isJSONObject(b)
}

// acceptsJSON reports whether the Accept values name both JSON and SSE, as
// go-sdk requires.
func acceptsJSON(values []string) bool {
	var jsonOK, sseOK bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK && sseOK
}
