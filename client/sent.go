package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// connTrace follows, through net/http's httptrace hooks, how one request
// got its connection, to tell a failure before the request could be
// written from one after. Its hooks may run on the transport's dialing
// goroutine.
type connTrace struct {
	asked     atomic.Bool // the transport looked for a connection (GetConn)
	got       atomic.Bool // it had one to write the request on (GotConn)
	tlsFailed atomic.Bool // a TLS handshake for the request failed
}

// with returns ctx carrying the hooks of tr, besides any it carries.
func (tr *connTrace) with(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) { tr.asked.Store(true) },
		GotConn: func(httptrace.GotConnInfo) { tr.got.Store(true) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err != nil {
				tr.tlsFailed.Store(true)
			}
		},
	})
}

// notSent reports whether err, the failure of a request traced by tr,
// proves that the request never reached the server: nothing of it was
// written on a connection to the server, so the server cannot have acted
// on it.
//
// net/http writes a request only on a connection it has handed to the
// request (GotConn, for HTTP/1 and HTTP/2 alike), and hands one over only
// once it is dialled and its TLS handshake done. So a request that was
// never given a connection was not sent, if it failed in dialling
// (connection refused, a DNS failure, a dial timeout), in reaching a proxy
// (net/http's "proxyconnect" errors), or in the TLS handshake (an
// untrusted certificate, an alert, a connection closed, a plain-HTTP
// server: "server gave HTTP response to HTTPS client"). A request that was
// given one is never taken as unsent, whatever the error: bytes may have
// left (a transport that tried again after a broken connection ends with
// the error of its last try). Other failures before a connection (a proxy
// that refuses the tunnel, say) are left unknown: their errors are
// opaque. Transports that do not report to httptrace are judged by the
// error alone, and only by the errors that come before any writing: a
// dial or proxy failure, a server certificate refused, a plain-HTTP
// answer to a TLS hello.
func notSent(err error, tr *connTrace) bool {
	if tr.got.Load() {
		return false
	}
	if tr.asked.Load() && tr.tlsFailed.Load() {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var cert *tls.CertificateVerificationError
	return errors.As(err, &cert) || errors.Is(err, http.ErrSchemeMismatch)
}
