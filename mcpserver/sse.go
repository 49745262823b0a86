package mcpserver

import (
	"encoding/json"
	"net/http"
)

// sseStream writes JSON-RPC messages as the events of a text/event-stream
// reply, flushing each: the stream of a 2025-11-25 tasks/result.
type sseStream struct {
	w http.ResponseWriter
}

// startSSE sends the headers of an SSE reply on w.
func startSSE(w http.ResponseWriter) *sseStream {
	setSSEHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	return &sseStream{w: w}
}

// send writes a message whose member key is v: a response (id and
// "result" or "error"), or a notification (method and "params").
func (st *sseStream) send(id json.RawMessage, method, key string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		return
	}
	m := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), key: body}
	if id != nil {
		m["id"] = id
	}
	if method != "" {
		m["method"], _ = json.Marshal(method)
	}
	st.event(m)
}

// request writes a server-to-client request.
func (st *sseStream) request(id, method string, params json.RawMessage) {
	m := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`), "params": params}
	m["id"], _ = json.Marshal(id)
	m["method"], _ = json.Marshal(method)
	st.event(m)
}

// event writes the message m as one event.
func (st *sseStream) event(m map[string]json.RawMessage) {
	b, _ := json.Marshal(m) // a map of raw JSON always encodes
	_ = writeSSE(st.w, b)
}

// comment writes an SSE comment, which keeps the connection alive.
func (st *sseStream) comment(text string) {
	_, _ = st.w.Write([]byte(": " + text + "\n\n"))
	_ = http.NewResponseController(st.w).Flush()
}

// setSSEHeaders sets the headers of an SSE reply, with those that keep
// proxies from caching, transforming or buffering it.
func setSSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
}

// writeSSE writes one JSON-RPC message as an SSE event, as go-sdk frames
// it, and flushes.
func writeSSE(w http.ResponseWriter, msg []byte) error {
	buf := make([]byte, 0, len(msg)+32)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, msg...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}
