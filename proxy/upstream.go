package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/internal/redact"
)

// Upstream says how to reach the upstream server: set one of Command, URL
// or Transport.
type Upstream struct {
	// Command is the argv of a server that speaks MCP over stdio. Each
	// session runs it anew, with the proxy's environment and working
	// directory, in a process group of its own (so that a Ctrl-C meant
	// for the proxy does not kill calls that the proxy drains).
	Command []string
	// Stderr receives the stderr of Command's processes (discarded if
	// nil).
	Stderr io.Writer
	// TerminateTimeout is how long closing a stdio session waits for the
	// process to exit after its stdin is closed, before SIGTERM, and
	// again before SIGKILL (go-sdk's default, 5s, if zero).
	TerminateTimeout time.Duration

	// URL is the endpoint of a server that speaks Streamable HTTP.
	URL string
	// HTTPClient sends URL's requests (http.DefaultClient if nil).
	HTTPClient *http.Client

	// Transport, if set, returns the transport of a new session, for
	// upstreams that neither Command nor URL reach (and for tests).
	Transport func() (mcp.Transport, error)

	// Name names the upstream in logs and error messages. The default is
	// the base name of Command[0], or URL without its query and user
	// information.
	Name string
	// ProtocolVersion is the protocol version asked for; empty asks for
	// go-sdk's latest. go-sdk's client negotiates down to what the
	// upstream speaks.
	ProtocolVersion string
}

func (u *Upstream) check() error {
	n := 0
	for _, set := range []bool{len(u.Command) > 0, u.URL != "", u.Transport != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("proxy: set exactly one of Upstream.Command, Upstream.URL and Upstream.Transport")
	}
	if u.URL != "" {
		x, err := url.Parse(u.URL)
		if err != nil {
			return fmt.Errorf("proxy: upstream URL: %w", err)
		}
		if x.Scheme != "http" && x.Scheme != "https" || x.Host == "" {
			return fmt.Errorf("proxy: upstream URL %q: want http://HOST/PATH or https://HOST/PATH", u.URL)
		}
	}
	return nil
}

func (u *Upstream) name() string {
	switch {
	case u.Name != "":
		return u.Name
	case len(u.Command) > 0:
		return filepath.Base(u.Command[0])
	case u.URL != "":
		if name := redact.URL(u.URL); name != "" {
			return name
		}
	}
	return "upstream"
}

// redact returns msg, the text of an error, with every URL that may carry a
// secret redacted (redact.Text), so that msg can be shown to clients and
// logged: the upstream URL (go-sdk's errors flatten the net/http errors
// that carry it, query and all), and the URL of a *url.Error in err's
// chain, if err is not nil (a redirect's target).
func (u *Upstream) redact(msg string, err error) string {
	return redact.Text(msg, err, u.URL)
}

// redactedError is an error whose text is redacted (see redact).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redacted returns err with its text redacted, nil if err is nil.
func (u *Upstream) redacted(err error) error {
	if err == nil {
		return nil
	}
	if msg := u.redact(err.Error(), err); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

// session is one client session with the upstream.
type session struct {
	cs *mcp.ClientSession
	// cancelSent, for an HTTP upstream, is closed once a
	// notifications/cancelled has been delivered.
	cancelSent chan struct{}
	// cmd is a stdio upstream's process, the leader of its own process
	// group.
	cmd *exec.Cmd
}

// connect opens a session with a new client made with copts.
func (p *Proxy) connect(ctx context.Context, copts *mcp.ClientOptions) (*session, error) {
	var t mcp.Transport
	s := &session{}
	switch u := &p.up; {
	case u.Transport != nil:
		var err error
		if t, err = u.Transport(); err != nil {
			return nil, err
		}
	case u.URL != "":
		hc := http.Client{}
		if u.HTTPClient != nil {
			hc = *u.HTTPClient
		}
		w := &cancelWatch{rt: hc.Transport, sent: make(chan struct{})}
		if w.rt == nil {
			w.rt = http.DefaultTransport
		}
		hc.Transport = w
		s.cancelSent = w.sent
		t = &mcp.StreamableClientTransport{Endpoint: u.URL, HTTPClient: &hc}
	default:
		cmd := exec.Command(u.Command[0], u.Command[1:]...)
		cmd.Stderr = u.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// A child left in the group may keep a Stderr pipe open (when
		// Stderr is not a file): Wait does not wait for it past this.
		cmd.WaitDelay = time.Second
		sent := make(chan struct{})
		t = &noticeWatch{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: u.TerminateTimeout}, sent: sent}
		s.cmd, s.cancelSent = cmd, sent
	}
	c := mcp.NewClient(p.opts.ClientInfo, copts)
	c.AddReceivingMiddleware(refuseUndeclared)
	var err error
	s.cs, err = c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: p.up.ProtocolVersion})
	if err != nil {
		s.killGroup() // go-sdk ended the process it started, not what that started
		return nil, err
	}
	return s, nil
}

// noticeWatch is the transport of a session with a stdio upstream: it
// closes sent once the session has written a notifications/cancelled.
// (Its connection has no client-side hooks of go-sdk's to hide; an HTTP
// one has, so cancelWatch watches its requests instead.)
type noticeWatch struct {
	mcp.Transport
	once sync.Once
	sent chan struct{}
}

func (w *noticeWatch) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return noticeConn{Connection: c, w: w}, nil
}

// noticeConn is the connection of a noticeWatch.
type noticeConn struct {
	mcp.Connection
	w *noticeWatch
}

func (c noticeConn) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "notifications/cancelled" {
		c.w.once.Do(func() { close(c.w.sent) })
	}
	return err
}

// cancelNoticeTimeout bounds the wait for go-sdk's notifications/cancelled
// to leave before a cancelled call's session is closed.
const cancelNoticeTimeout = 2 * time.Second

// cancelled is called when the call was cancelled. go-sdk sends
// notifications/cancelled from a goroutine of its own, which closing the
// session at once could cut off; over HTTP that notice is the only way a
// stateful upstream learns of it (a stateless one reads the end of the
// request), and a stdio upstream that finishes its requests when its
// input ends would run on until killed. So wait until it has been written,
// for a bounded time (not for an upstream of Upstream.Transport).
func (s *session) cancelled() {
	if s.cancelSent == nil {
		return
	}
	t := time.NewTimer(cancelNoticeTimeout)
	defer t.Stop()
	select {
	case <-s.cancelSent:
	case <-t.C:
	}
}

// cancelWatch is the HTTP transport of a session with an HTTP upstream: it
// closes sent once a notifications/cancelled has been delivered.
type cancelWatch struct {
	rt   http.RoundTripper
	once sync.Once
	sent chan struct{}
}

func (w *cancelWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	notice := false
	if r.Method == http.MethodPost && r.GetBody != nil {
		if b, err := r.GetBody(); err == nil {
			// A notification's method comes first: {"jsonrpc":"2.0","method":...
			head := make([]byte, 128)
			n, _ := io.ReadFull(b, head)
			b.Close()
			notice = bytes.Contains(head[:n], []byte(`"notifications/cancelled"`))
		}
	}
	resp, err := w.rt.RoundTrip(r)
	if notice {
		w.once.Do(func() { close(w.sent) })
	}
	if resp != nil && resp.Body != nil {
		// A blank line ends an SSE event; in any other reply (one JSON
		// message) it is only whitespace, and the whole body counts.
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		resp.Body = &messageLimit{rc: resp.Body, max: maxUpstreamMessage, whole: mt != "text/event-stream"}
	}
	return resp, err
}

// maxUpstreamMessage bounds one message from an HTTP upstream: a JSON
// reply, or one event of an SSE stream. go-sdk bounds a stdio upstream's
// messages the same way (mcp.DefaultMaxLineLength), and reads an HTTP
// reply whole.
const maxUpstreamMessage = mcp.DefaultMaxLineLength

// errMessageTooLarge is returned when an upstream message passes
// maxUpstreamMessage.
var errMessageTooLarge = fmt.Errorf("a message from the upstream is larger than %d bytes", maxUpstreamMessage)

// messageLimit reads an HTTP upstream's reply body, and fails once one
// message (the bytes since the last blank line, which ends an SSE event;
// the whole body if whole) passes max bytes.
type messageLimit struct {
	rc    io.ReadCloser
	max   int
	whole bool // not an SSE stream: one message
	n     int  // bytes of the current message
	last  byte // the byte before the current one: two newlines end an event
}

func (l *messageLimit) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, errMessageTooLarge
	}
	if len(p) > l.max-l.n+1 {
		p = p[:l.max-l.n+1]
	}
	n, err := l.rc.Read(p)
	for _, c := range p[:n] {
		switch {
		case c == '\n' && l.last == '\n' && !l.whole:
			l.n = 0
		case c != '\r':
			l.n++
		}
		if c != '\r' {
			l.last = c
		}
	}
	if l.n > l.max {
		return n, errMessageTooLarge
	}
	return n, err
}

func (l *messageLimit) Close() error { return l.rc.Close() }

// close ends the session. For a stdio upstream it waits for the process
// and returns how it ended if that was not a clean exit (an
// *exec.ExitError). The process has exited once the session's Close
// returns (go-sdk ends it, in the end with SIGKILL); what it started and
// left in its process group (the server a wrapper such as "npx" or "sh -c"
// runs, and its children) is killed then too, so that a hung one does not
// outlive the call.
func (s *session) close() error {
	err := s.cs.Close()
	s.killGroup()
	return err
}

// killGroup kills what is left of a stdio upstream's process group.
func (s *session) killGroup() {
	if s.cmd != nil && s.cmd.Process != nil && s.cmd.Process.Pid > 0 {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // ESRCH: none left
	}
}

func (s *session) protocolVersion() string {
	if r := s.cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// refuseUndeclared answers the upstream's sampling and roots requests with
// an error: the proxy declares neither capability and has no one to
// forward them to. (go-sdk's client would answer roots/list with an empty
// list.)
func refuseUndeclared(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "sampling/createMessage", "roots/list":
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("mcptasks proxy does not forward %s to its clients", method)}
		}
		return next(ctx, method, req)
	}
}
