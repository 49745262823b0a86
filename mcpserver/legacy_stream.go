package mcpserver

import (
	"encoding/json"
	"net/http"
)

// sseStream writes JSON-RPC messages as the events of a text/event-stream
// reply, flushing each.
type sseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE sends the headers of an SSE reply on w.
func startSSE(w http.ResponseWriter) *sseStream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	st := &sseStream{w: w, rc: http.NewResponseController(w)}
	_ = st.rc.Flush()
	return st
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

func (st *sseStream) event(m map[string]json.RawMessage) {
	b, _ := json.Marshal(m) // a map of raw JSON always encodes
	buf := make([]byte, 0, len(b)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	_, _ = st.w.Write(buf)
	_ = st.rc.Flush()
}

// comment writes an SSE comment, which keeps the connection alive.
func (st *sseStream) comment(text string) {
	_, _ = st.w.Write([]byte(": " + text + "\n\n"))
	_ = st.rc.Flush()
}
