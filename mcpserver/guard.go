package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/mcptasks/mcptasks/task"
)

// bodyChunk is what a request takes from the in-flight budget before its
// body arrives, at most (less when its Content-Length says less): the
// buffer that the usual body is read into in one allocation.
const bodyChunk = 16 << 10

// errBodyBusy ends the read of a body whose bytes no longer fit the
// in-flight budget.
var errBodyBusy = errors.New("request bytes in flight beyond the budget")

// readBody reads r's body, at most Options.MaxBodyBytes of it, into a
// buffer that grows as the bytes arrive (doubling, up to the declared
// Content-Length), and takes the buffer's size from h as it grows. It
// returns errBodyBusy when the budget has no room for it, and a
// *http.MaxBytesError for a body past the bound (at once when its
// Content-Length says so). Reserving a declared Content-Length before
// reading let a few connections that declared large bodies and sent one
// byte hold the whole budget, and so refuse every other request, for as
// long as the read timeout let them.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, h *held) ([]byte, error) {
	most := s.opts.MaxBodyBytes
	if r.ContentLength > most {
		return nil, &http.MaxBytesError{Limit: most}
	}
	if r.ContentLength >= 0 {
		most = r.ContentLength
	}
	rd := http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	var body []byte
	for {
		if len(body) == cap(body) && int64(cap(body)) < most {
			n := min(max(2*int64(cap(body)), bodyChunk), most)
			if !h.take(n - int64(cap(body))) {
				return nil, errBodyBusy
			}
			body = append(make([]byte, 0, n), body...)
		}
		var n int
		var err error
		if len(body) < cap(body) {
			n, err = rd.Read(body[len(body):cap(body)])
		} else { // all that may come has: only the end, or too much, follows
			var b [1]byte
			_, err = rd.Read(b[:])
		}
		body = body[:len(body)+n]
		if err != nil {
			h.keep(int64(len(body)))
			if err == io.EOF {
				return body, nil
			}
			return nil, err
		}
	}
}

// guard checks what go-sdk does not, before anything else runs: the
// request's Origin (else HTTP 403, see checkOrigin), its principal (an
// empty one gets HTTP 500: see Options.Principal), the limits on the work
// a body may cause (limits.go), the Mcp-Name header of
// tasks/get, tasks/update and tasks/cancel, which must equal params.taskId
// (else HTTP 400 and -32020), and a body that is not one JSON-RPC message
// gets a JSON-RPC error body, not plain text. Every other request passes
// through untouched. The body is read once, bounded, and handed on.
func (s *Server) guard(next http.Handler) http.Handler {
	return s.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Who sends the request, decided once for all that serves it.
		principal := s.httpPrincipal(r)
		if principal == "" {
			// Authenticated, but as nobody: with no principal to bind its
			// tasks to, the request is not served.
			s.log.Error("refused a request without a principal: its TokenInfo has no UserID, or Options.Principal returned \"\"")
			writeError(w, http.StatusInternalServerError, nil, codeInternalError, "The server cannot tell who sends this request: its authentication names no user")
			return
		}
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		// A POST has no stream to resume: the header is ignored (TASKS-SPEC
		// §2.12), where go-sdk would refuse the request.
		r.Header.Del("Last-Event-ID")
		// The body's bytes come out of the in-flight budget until the
		// request is answered, as they arrive: a body that a client
		// declares and never sends holds no more than its first
		// bodyChunk (see readBody).
		h := &held{b: s.inflight, principal: principal}
		defer h.release()
		body, err := s.readBody(w, r, h)
		if err != nil {
			var tooBig *http.MaxBytesError
			switch {
			case errors.Is(err, errBodyBusy):
				writeBusy(w, nil, "Server busy: too many request bytes in flight; try again")
			case errors.As(err, &tooBig):
				writeError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest, "Request body too large")
			default:
				writeError(w, http.StatusBadRequest, nil, codeParseError, "Cannot read request body")
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		// Before anything decodes the body: deep nesting makes decoding
		// and validation slow beyond its size (see limits.go).
		if err := s.limits.checkDepth("the request", body); err != nil {
			writeRPCError(w, nil, err)
			return
		}
		if s.serveLegacy(w, r, principal, body, h, next) {
			return
		}
		var msg message
		if code, err := msg.parse(body); err != "" {
			writeError(w, http.StatusBadRequest, nil, code, err)
			return
		}
		if msg.Method == "tools/call" {
			if err := s.limits.checkArguments(msg.Params.Name, msg.Params.Arguments); err != nil {
				writeRPCError(w, msg.ID, err)
				return
			}
		}
		switch msg.Method {
		case methodListen:
			// A task subscription, on either route (see serveTaskListen).
			if n := msg.Params.Notifications; n != nil && present(n.TaskIDs) {
				s.serveTaskListen(w, r, principal, &msg, n.TaskIDs, h, next)
				return
			}
			// Any other listen stays open too, holding its body (go-sdk
			// serves it): it is admitted as a stream, counted against
			// MaxStreams, not MaxSubscriptions: a go-sdk client keeps one
			// open for its whole session.
			release, ok := s.openStream(w, h, msg.ID, len(body))
			if !ok {
				return
			}
			defer release()
		case methodGet, methodUpdate, methodCancel:
			var id string
			name, ok := headerValue(r.Header, "Mcp-Name")
			if decodeJSON(msg.Params.TaskID, &id) == nil && (!ok || name != id) {
				writeError(w, http.StatusBadRequest, msg.ID, codeHeaderMismatch,
					"Mcp-Name header must equal params.taskId for "+msg.Method)
				return
			}
			if msg.Method == methodGet && !s.pollAllowed(w, msg.ID, principal, id) {
				return
			}
			if s.serveTaskMethod(w, r, principal, &msg, h) {
				return
			}
		case "tools/call", "resources/read", "prompts/get":
			if msg.Method == "tools/call" && s.serveCreate(w, r, principal, &msg) {
				return
			}
			// go-sdk compares this header with the body without decoding
			// the =?base64?…?= form; hand it the decoded value.
			if raw := r.Header.Get("Mcp-Name"); strings.HasPrefix(strings.TrimSpace(raw), base64Prefix) {
				if name, ok := headerValue(r.Header, "Mcp-Name"); ok {
					r.Header.Set("Mcp-Name", name)
				}
			}
		}
		if msg.ID != nil && r.Header.Get("MCP-Protocol-Version") == task.LegacyProtocolVersion && r.Context().Value(requestKey{}) == nil {
			// A 2025-11-25 request over HTTP, which its session's
			// notifications/cancelled may end, and nothing else (see
			// legacyCallKey).
			ctx, done := s.legacyCalls.track(context.WithoutCancel(r.Context()), legacyCallKey(principal, r.Header.Get("Mcp-Session-Id"), msg.ID))
			defer done()
			r = r.WithContext(ctx)
		}
		// go-sdk's handlers find the request's share of the budget in its
		// context.
		r = r.WithContext(context.WithValue(r.Context(), heldKey{}, h))
		// go-sdk answers some bad requests with a plain-text 400; a client
		// must get a JSON-RPC error body on every 400, for notifications too.
		rw := &replyWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		rw.finish(msg.ID)
	}))
}

// serveTaskListen serves a task subscription: it checks its ids and the
// principal's bounds, then serves it on the fast path when go-sdk would
// accept it up to dispatch, or hands it to go-sdk's route (the middleware)
// with the writer its events go to. Either way a request that does not
// declare the Tasks extension gets -32021 (TASKS-SPEC §3.2, §3.12): here,
// or in the middleware once go-sdk has read its _meta (go-sdk itself knows
// nothing of taskIds and would acknowledge it).
func (s *Server) serveTaskListen(w http.ResponseWriter, r *http.Request, principal string, m *message, raw json.RawMessage, h *held, next http.Handler) {
	ids, err := listenTaskIDs(raw, s.opts.MaxSubscribedTasks)
	if err != nil {
		writeRPCError(w, m.ID, err)
		return
	}
	fast := !s.opts.DisableFastPath && s.fastEligible(r, m)
	if fast && !DeclaresTasks(fastPathVersion, m.Params.Meta.ClientCapabilities) {
		writeRPCError(w, m.ID, listenUndeclared())
		return
	}
	if !s.admitStream(w, h, m.ID, len(m.body), s.maxStreamBody()) {
		return
	}
	if !s.subs.take(principal, len(ids)) {
		s.subs.writeTooManySubscriptions(w, m.ID)
		return
	}
	defer s.subs.release(principal, len(ids))
	rw := &replyWriter{ResponseWriter: w}
	c := &listenCall{id: m.ID, principal: principal, ids: ids, w: rw}
	if fast {
		s.serveListen(rw, r, c)
		return
	}
	next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), listenKey{}, c)))
	rw.finish(m.ID)
}

// listenUndeclared returns the refusal of a task subscription whose
// request does not declare the Tasks extension.
func listenUndeclared() error {
	return missingTasksCapability("subscriptions/listen with notifications.taskIds")
}

// replyWriter is the writer go-sdk answers through: it holds back a
// plain-text 400 so that it can be sent as a JSON-RPC error instead, and
// marks an SSE stream X-Accel-Buffering: no, so that proxies such as nginx
// pass each event on at once (TASKS-SPEC §2.12). Everything else passes
// through.
type replyWriter struct {
	http.ResponseWriter
	wrote bool // the header is written (or held)
	held  bool
	text  bytes.Buffer
}

func (p *replyWriter) WriteHeader(code int) {
	if p.wrote {
		return
	}
	p.wrote = true
	h := p.Header()
	if code == http.StatusBadRequest && strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		p.held = true
		return
	}
	if strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		h.Set("X-Accel-Buffering", "no")
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *replyWriter) Write(b []byte) (int, error) {
	if !p.wrote {
		p.WriteHeader(http.StatusOK)
	}
	if p.held {
		return p.text.Write(b)
	}
	return p.ResponseWriter.Write(b)
}

// Flush lets go-sdk stream SSE through the wrapper.
func (p *replyWriter) Flush() {
	if !p.wrote {
		p.WriteHeader(http.StatusOK)
	}
	if f, ok := p.ResponseWriter.(http.Flusher); ok && !p.held {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (p *replyWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// finish sends a held plain-text 400 as a JSON-RPC error for the request
// id (nil for a notification: the error has no id then).
func (p *replyWriter) finish(id json.RawMessage) {
	if !p.held {
		return
	}
	p.Header().Del("X-Content-Type-Options")
	writeError(p.ResponseWriter, http.StatusBadRequest, id, codeInvalidRequest, "Invalid request: "+strings.TrimSpace(p.text.String()))
}

// The markers of a header value in the base64 form.
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// headerValue returns the decoded value of an Mcp-* header: surrounding
// whitespace trimmed, and the =?base64?…?= form decoded.
func headerValue(h http.Header, name string) (string, bool) {
	vs := h.Values(name)
	if len(vs) != 1 {
		return "", false
	}
	v := strings.TrimSpace(vs[0])
	if strings.HasPrefix(v, base64Prefix) && strings.HasSuffix(v, base64Suffix) && len(v) >= len(base64Prefix+base64Suffix) {
		b, err := base64.StdEncoding.DecodeString(v[len(base64Prefix) : len(v)-len(base64Suffix)])
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	return v, true
}

// requestKey is the context key of the context that ends a 2025-11-25
// request when the client cancels it: over stdio, the request's own, which
// the bridge ends on notifications/cancelled; over HTTP, the one
// legacyCalls ends on the session's notifications/cancelled (a
// disconnection is no cancellation in that era's transport). go-sdk runs
// the handlers of that era on a context that keeps the request's values
// but not its cancellation, and the middleware ties them to this one (see
// [Server.middleware]). A 2026-07-28 handler is tied to its request by
// go-sdk itself (PropagateRequestCancellation).
type requestKey struct{}
