package mcpserver

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"
)

// The reply writers of the requests the server answers itself (the guard's
// refusals and the fast path): one JSON-RPC response as application/json.

// writeError writes a JSON-RPC error response.
func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	writeJSON(w, status, id, "error", &jsonrpc.Error{Code: code, Message: msg})
}

// writeRPCError writes err, a JSON-RPC error, with the HTTP status go-sdk
// gives its code.
func writeRPCError(w http.ResponseWriter, id json.RawMessage, err error) {
	je := rpcError(err)
	writeJSON(w, errorStatus(je.Code), id, "error", je)
}

// writeJSON writes a JSON-RPC response whose member key ("result" or
// "error") holds v. A nil id (one that could not be read) is left out.
func writeJSON(w http.ResponseWriter, status int, id json.RawMessage, key string, v any) {
	writeMember(w, status, id, key, nil, v)
}

// writeResult writes the JSON-RPC result v, a struct encoded as an object,
// with the _meta every result carries (the serverInfo), encoded once.
func (s *Server) writeResult(w http.ResponseWriter, id json.RawMessage, v any) {
	writeMember(w, http.StatusOK, id, "result", s.resultMeta, v)
}

// writeMember writes a JSON-RPC response whose member key is v, with meta
// as its first member _meta if not nil (see encodeResponse).
func writeMember(w http.ResponseWriter, status int, id json.RawMessage, key string, meta json.RawMessage, v any) {
	buf, ok := encodeResponse(id, key, meta, v)
	if !ok {
		status = http.StatusOK
	}
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf)
}

// encodeResponse returns the JSON-RPC response whose member key is v, with
// meta as its first member _meta if not nil. The id is written as it is, as
// go-sdk writes ids (see replyID); a nil id (one that could not be read) is
// left out. ok is false if v could not be encoded: the response is then an
// internal error.
//
// v is encoded by segmentio/encoding, as requests are decoded (see
// decodeJSON): the same JSON as encoding/json's, in half the time.
func encodeResponse(id json.RawMessage, key string, meta json.RawMessage, v any) (_ []byte, ok bool) {
	body, err := segjson.Marshal(v)
	ok = err == nil
	if !ok {
		key = "error"
		body, _ = json.Marshal(&jsonrpc.Error{Code: codeInternalError, Message: "cannot encode the result"})
	}
	buf := make([]byte, 0, len(body)+64)
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	if id != nil {
		buf = append(buf, `,"id":`...)
		buf = append(buf, id...)
	}
	buf = append(buf, `,"`...)
	buf = append(buf, key...)
	buf = append(buf, `":`...)
	if meta != nil && len(body) >= 2 && body[0] == '{' {
		buf = append(buf, `{"_meta":`...)
		buf = append(buf, meta...)
		if len(body) > 2 {
			buf = append(buf, ',')
		}
		body = body[1:]
	}
	buf = append(buf, body...)
	return append(buf, '}'), ok
}
