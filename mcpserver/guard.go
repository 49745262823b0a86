package mcpserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// guard checks what go-sdk does not, before anything else runs: the
// request's Origin (else HTTP 403, see checkOrigin), the Mcp-Name header of
// tasks/get, tasks/update and tasks/cancel, which must equal params.taskId
// (else HTTP 400 and -32020), and a body that is not one JSON-RPC message
// gets a JSON-RPC error body, not plain text. Every other request passes
// through untouched. The body is read once, bounded, and handed on.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refused := s.checkOrigin(r); refused != "" {
			writeError(w, http.StatusForbidden, nil, codeInvalidRequest, refused)
			return
		}
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		// Sized from Content-Length, so that the usual body is read in one
		// allocation; MaxBytesReader bounds it whatever the header says.
		size := min(max(r.ContentLength, 0), s.opts.MaxBodyBytes) + bytes.MinRead
		buf := bytes.NewBuffer(make([]byte, 0, size))
		_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
		body := buf.Bytes()
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest, "Request body too large")
				return
			}
			writeError(w, http.StatusBadRequest, nil, codeParseError, "Cannot read request body")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg message
		if code, err := msg.parse(body); err != "" {
			writeError(w, http.StatusBadRequest, nil, code, err)
			return
		}
		switch msg.Method {
		case methodGet, methodUpdate, methodCancel:
			var id string
			name, ok := headerValue(r.Header, "Mcp-Name")
			if decodeJSON(msg.Params.TaskID, &id) == nil && (!ok || name != id) {
				writeError(w, http.StatusBadRequest, msg.ID, codeHeaderMismatch,
					"Mcp-Name header must equal params.taskId for "+msg.Method)
				return
			}
			if s.polls != nil && msg.Method == methodGet {
				if ok, wait := s.polls.allow(s.httpPrincipal(r), id); !ok {
					writeTooFast(w, msg.ID, wait)
					return
				}
			}
			if s.serveTaskMethod(w, r, &msg) {
				return
			}
		case "tools/call", "resources/read", "prompts/get":
			if msg.Method == "tools/call" && s.serveCreate(w, r, &msg) {
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
		if msg.ID != nil {
			// go-sdk answers some bad requests with a plain-text 400; a
			// client must get a JSON-RPC error body on every 400.
			pw := &plainErrorWriter{ResponseWriter: w}
			next.ServeHTTP(pw, r)
			pw.finish(msg.ID)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// plainErrorWriter holds back a plain-text 400 so that it can be sent as a
// JSON-RPC error instead; everything else passes through.
type plainErrorWriter struct {
	http.ResponseWriter
	held bool
	text bytes.Buffer
}

func (p *plainErrorWriter) WriteHeader(code int) {
	if code == http.StatusBadRequest && strings.HasPrefix(p.Header().Get("Content-Type"), "text/plain") {
		p.held = true
		return
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *plainErrorWriter) Write(b []byte) (int, error) {
	if p.held {
		return p.text.Write(b)
	}
	return p.ResponseWriter.Write(b)
}

// Flush lets go-sdk stream SSE through the wrapper.
func (p *plainErrorWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && !p.held {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (p *plainErrorWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

func (p *plainErrorWriter) finish(id json.RawMessage) {
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
