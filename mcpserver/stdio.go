package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ServeStdio serves MCP over stdio: newline-delimited JSON-RPC messages
// read from in, and the server's messages written to out, one per line.
//
// Each message is handed to the handler of [Server.Handler] as the POST a
// Streamable HTTP client would send, with the headers its era needs (for
// 2026-07-28: MCP-Protocol-Version, Mcp-Method and Mcp-Name from the
// message; for 2025-11-25: the version and the Mcp-Session-Id that
// initialize returned), and every message of the reply, JSON or SSE, is
// written to out. So stdio serves both eras exactly as HTTP does, one
// connection being one session: a task subscription's events are lines
// too. Requests are served concurrently; notifications/cancelled stops the
// request it names (an inline call, a subscriptions/listen), which is then
// answered no more.
//
// Call [Server.Start] first. When in ends (the client's way to shut the
// server down), ServeStdio answers the requests still in flight and then
// returns; the streams that follow a task (subscriptions/listen, and the
// 2025-11-25 tasks/result, whose questions could no longer be answered)
// are ended at once, unanswered. It returns without waiting when ctx is
// done (a host that will not wait sends SIGTERM), once out fails (nobody
// reads it), or when reading in fails: requests still in flight are then
// stopped, and their tasks live on in the store. A line longer than
// Options.MaxBodyBytes is answered with a JSON-RPC error and skipped, as
// HTTP answers such a body with 413. The goroutine that reads in ends when
// in does, and the one that writes out when its last write returns: a
// write that blocks (a host that stops reading without closing the pipe)
// does not hold ServeStdio.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	b := newStdioBridge(ctx, s.Handler(), out, stop)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop() // runs before wg.Wait: in-flight requests end
	// The streams that follow a task, which end when in does.
	streams, endStreams := context.WithCancel(ctx)
	defer endStreams()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		readErr <- readLines(ctx, in, s.opts.MaxBodyBytes, lines, b)
	}()
	for {
		var line []byte
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case line, ok = <-lines:
		}
		if !ok {
			break
		}
		if serve := b.accept(ctx, streams, line); serve != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve()
			}()
		}
	}
	err := <-readErr
	if err != nil {
		stop()
	}
	endStreams()
	wg.Wait() // the requests in flight are answered, or stopped with ctx
	if err != nil && !errors.Is(err, io.ErrClosedPipe) {
		return fmt.Errorf("mcpserver: stdio: %w", err)
	}
	return nil
}

// readLines sends the non-empty lines of in, trimmed, to lines until in
// ends (nil at EOF) or ctx is done. A line longer than max is skipped and
// answered through b with a JSON-RPC error.
func readLines(ctx context.Context, in io.Reader, max int64, lines chan<- []byte, b *stdioBridge) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(br, max)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if tooLong {
			b.write(json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request too large: a line of more than %d bytes"}}`, max)))
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			select {
			case lines <- line:
			case <-ctx.Done():
				return nil
			}
		}
		if err != nil { // io.EOF
			return nil
		}
	}
}

// readLine reads the next line of br, newline included; a line of more
// than max bytes is read to its end and dropped (tooLong).
func readLine(br *bufio.Reader, max int64) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if int64(len(line)+len(chunk)) > max+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...) // chunk is br's: copied
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// stdioBridge turns stdio messages into HTTP requests of one session.
type stdioBridge struct {
	h http.Handler

	out     chan<- outLine  // to writeLines
	stopped <-chan struct{} // the connection has ended: nothing more is written

	mu      sync.Mutex
	session string // the Mcp-Session-Id of initialize, if any
	version string // the protocol version initialize negotiated, if any

	calls cancellable // the requests in flight, by idKey
}

// accept takes one line of the client, in the order they were read, so
// that a notifications/cancelled right behind its request finds it: it
// answers a line that is not JSON, cancels what a notifications/cancelled
// names, and returns the serving of any other message, to run on a
// goroutine of its own (nil when there is nothing more to do). A request
// is served in ctx; a subscriptions/listen or a 2025-11-25 tasks/result in
// streams, which ends with in.
func (b *stdioBridge) accept(ctx, streams context.Context, line []byte) (serve func()) {
	if !json.Valid(line) {
		b.write(json.RawMessage(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not a JSON-RPC message"}}`))
		return nil
	}
	m := readStdioMessage(line)
	if m.method == "notifications/cancelled" {
		b.calls.cancel(idKey(m.requestID))
		return nil
	}
	done := func() {}
	if m.method == methodListen || m.method == methodResult {
		ctx = streams
	}
	if m.method != "" && m.id != nil {
		ctx, done = b.calls.track(ctx, idKey(m.id))
	}
	return func() {
		defer done()
		b.handle(ctx, line, m)
	}
}

// handle serves the message m of the client, line, in ctx: the request's
// own if it is one (see accept).
func (b *stdioBridge) handle(ctx context.Context, line []byte, m stdioMessage) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/mcp", bytes.NewReader(line))
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	b.mu.Lock()
	session, version := b.session, b.version
	b.mu.Unlock()
	switch {
	case m.method == "initialize":
	case session != "" || version != "":
		h.Set("MCP-Protocol-Version", version)
		if session != "" {
			h.Set("Mcp-Session-Id", session)
		}
	case m.version != "":
		// The headers HTTP requires, made from the message (TASKS-SPEC
		// §2.13: on stdio the message alone counts).
		h.Set("MCP-Protocol-Version", m.version)
		h.Set("Mcp-Method", m.method)
		if m.hasName {
			h.Set("Mcp-Name", stdioHeaderValue(m.name))
		}
	}
	b.roundTrip(req, m.id, m.notification, m.method == "initialize")
}

// stdioMessage is what the bridge reads of a message.
type stdioMessage struct {
	id           json.RawMessage
	method       string
	notification bool            // a method and no id: nothing is written back
	version      string          // _meta's protocolVersion
	name         string          // the params member that Mcp-Name carries over HTTP
	hasName      bool            // the method has one, and it is a string
	requestID    json.RawMessage // of notifications/cancelled
}

// readStdioMessage reads a JSON line as the guard reads an HTTP body,
// member names as they are spelled; each part is read apart, so that one
// of another shape leaves the others readable (the server behind answers
// for it, under the message's id).
func readStdioMessage(line []byte) stdioMessage {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if decodeJSON(line, &env) != nil {
		return stdioMessage{} // not an object: the server refuses it
	}
	m := stdioMessage{id: env.ID, notification: env.Method != nil && env.ID == nil}
	_ = decodeJSON(env.Method, &m.method)
	var meta struct {
		Meta struct {
			ProtocolVersion json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if decodeJSON(env.Params, &meta) == nil {
		_ = decodeJSON(meta.Meta.ProtocolVersion, &m.version)
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Name      json.RawMessage `json:"name"`
		URI       json.RawMessage `json:"uri"`
		TaskID    json.RawMessage `json:"taskId"`
	}
	_ = decodeJSON(env.Params, &p)
	m.requestID = p.RequestID
	var name json.RawMessage
	switch m.method {
	case "tools/call", "prompts/get":
		name = p.Name
	case "resources/read":
		name = p.URI
	case methodGet, methodUpdate, methodCancel:
		name = p.TaskID
	}
	m.hasName = decodeJSON(name, &m.name) == nil
	return m
}

// idKey returns the key of a request id among the requests in flight: the
// id as replies carry it (see replyID), so that a cancellation naming it
// in another form (escaped, -0) finds it.
func idKey(id json.RawMessage) string {
	if c, ok := replyID(id); ok {
		return string(c)
	}
	return string(id)
}

// roundTrip serves req and writes the messages of its reply, until req's
// context ends: a request cancelled (notifications/cancelled, or the end
// of ServeStdio) is answered no more. For initialize it keeps the session
// id and version of the reply.
func (b *stdioBridge) roundTrip(req *http.Request, id json.RawMessage, notification, initialize bool) {
	pr, pw := io.Pipe()
	rw := &pipeResponse{header: http.Header{}, status: http.StatusOK, pw: pw, started: make(chan struct{})}
	go func() {
		b.h.ServeHTTP(rw, req)
		rw.start()
		pw.Close()
	}()
	<-rw.started
	defer pr.Close()
	if notification {
		_, _ = io.Copy(io.Discard, pr) // a notification is never answered (TASKS-SPEC §2.2)
		return
	}
	if sid := rw.header.Get("Mcp-Session-Id"); initialize && sid != "" {
		// Before the reply is written: the client's next request may
		// follow it at once.
		b.mu.Lock()
		b.session = sid
		b.mu.Unlock()
	}
	mt, _, _ := mime.ParseMediaType(rw.header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		br := bufio.NewReader(pr)
		var data []byte
		for {
			line, err := br.ReadBytes('\n')
			line = bytes.TrimRight(line, "\r\n")
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimSpace(d)...)
			} else if len(line) == 0 && len(data) > 0 {
				b.reply(req.Context(), data, initialize)
				data = nil
			}
			if err != nil {
				return
			}
		}
	case "application/json":
		body, _ := io.ReadAll(pr)
		b.reply(req.Context(), body, initialize)
	default:
		body, _ := io.ReadAll(pr)
		if id == nil || rw.status < 300 {
			return // an accepted notification or response
		}
		// An HTTP error in plain text (go-sdk's transport refusing the
		// request): the client gets it as a JSON-RPC error, under the id
		// as every reply carries it.
		id, _ = replyID(id)
		msg, _ := encodeResponse(id, "error", nil, &jsonrpc.Error{Code: codeInvalidRequest, Message: strings.TrimSpace(string(body))})
		b.reply(req.Context(), msg, false)
	}
}

// reply writes one message of a reply to the request of ctx, unless that
// request was cancelled; the result of initialize tells the version of the
// session.
func (b *stdioBridge) reply(ctx context.Context, msg []byte, initialize bool) {
	if ctx.Err() != nil {
		return
	}
	if initialize {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &r) == nil && r.Result.ProtocolVersion != "" {
			b.mu.Lock()
			b.version = r.Result.ProtocolVersion
			b.mu.Unlock()
		}
	}
	b.write(msg)
}

// newStdioBridge returns the bridge of one connection, serving with h and
// writing to out until ctx is done; a write to out that fails calls gone,
// which must end ctx (nobody reads).
func newStdioBridge(ctx context.Context, h http.Handler, out io.Writer, gone context.CancelFunc) *stdioBridge {
	lines := make(chan outLine)
	go writeLines(ctx, out, lines, gone)
	return &stdioBridge{h: h, out: lines, stopped: ctx.Done()}
}

// outLine is one line for out, and the channel closed once it is written.
type outLine struct {
	b       []byte
	written chan struct{}
}

// writeLines writes the lines it receives to out, one at a time and in
// order, until ctx is done.
func writeLines(ctx context.Context, out io.Writer, lines <-chan outLine, gone context.CancelFunc) {
	for {
		select {
		case <-ctx.Done():
			return
		case l := <-lines:
			if _, err := out.Write(l.b); err != nil {
				gone()
			}
			close(l.written)
		}
	}
}

// write writes msg on one line of out, and returns once it is written or
// the connection has ended.
func (b *stdioBridge) write(msg []byte) {
	var buf bytes.Buffer
	if json.Compact(&buf, msg) != nil {
		return
	}
	buf.WriteByte('\n')
	l := outLine{b: buf.Bytes(), written: make(chan struct{})}
	select {
	case b.out <- l:
	case <-b.stopped:
		return
	}
	select {
	case <-l.written:
	case <-b.stopped:
	}
}

// pipeResponse is an http.ResponseWriter whose body streams through a
// pipe; started is closed when the header is written.
type pipeResponse struct {
	header  http.Header
	status  int
	pw      *io.PipeWriter
	once    sync.Once
	started chan struct{}
}

func (p *pipeResponse) Header() http.Header { return p.header }

func (p *pipeResponse) WriteHeader(status int) {
	p.once.Do(func() {
		p.status = status
		close(p.started)
	})
}

func (p *pipeResponse) start() { p.WriteHeader(http.StatusOK) }

func (p *pipeResponse) Write(b []byte) (int, error) {
	p.start()
	return p.pw.Write(b)
}

// Flush lets handlers stream: every Write already reaches the reader.
func (p *pipeResponse) Flush() {}

// stdioHeaderValue is the Mcp-Name value of name: as it is, or in the
// =?base64?…?= form when it is not plain ASCII.
func stdioHeaderValue(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e {
			return base64Prefix + base64.StdEncoding.EncodeToString([]byte(name)) + base64Suffix
		}
	}
	return name
}
