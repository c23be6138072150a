// Package wire defines what the emulator's protocol servers (HTTP/1.1 in
// package http1, h2 in package h2) share: the request as received, with its
// header fields in arrival order, and a response writer that can also end an
// exchange the way a broken origin does (a TCP reset, a close short of the
// declared length, an h2 RST_STREAM or GOAWAY).
//
// The servers write exactly the header fields the handler sets: they add no
// Date, never drop or repair a malformed value, and add only the framing the
// protocol needs (HTTP/1.1 chunked encoding when no Content-Length is set).
// That is what lets the emulator omit or corrupt headers on purpose.
package wire

import (
	"errors"

	"github.com/edgeconform/edgeconform/emulators/fault"
	"net"
	"net/http"
	"time"
)

// ConnInfo describes one accepted connection. The listener fills it before
// handing the connection to a protocol server.
type ConnInfo struct {
	ID          uint64
	Listener    string
	Peer        net.Addr
	Local       net.Addr
	SNI         string   // TLS server name the client sent; empty without TLS or SNI
	OfferedALPN []string // ALPN protocols the client offered
	ALPN        string   // negotiated ALPN protocol; empty when none
	TLSVersion  string   // "TLS 1.3", ...; empty without TLS
	Opened      time.Time
}

// HeaderField is one header field as it arrived on the wire, name spelled as
// the client sent it (h2 names are lower case by protocol).
type HeaderField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Request is one request as the emulator received it.
type Request struct {
	// Request has the method, URL, Host, canonicalised Header, Body (it
	// streams) and Trailer. Its context ends when the client goes away
	// (connection closed, or h2 RST_STREAM from the client).
	*http.Request
	// Fields are the request's header fields in arrival order. For h2 they
	// include the pseudo-header fields (":method", ":path", ...) first.
	Fields []HeaderField
	// Conn is the connection the request arrived on.
	Conn *ConnInfo
	// StreamID is the h2 stream id; 0 for HTTP/1.x.
	StreamID uint32
}

// AbortKind is how an exchange ends abnormally: one of the fault.Ends
// whose Abort is true.
type AbortKind = fault.End

// The abort kinds, named as the servers see them.
const (
	// AbortClose closes the connection at once (TCP FIN, no TLS
	// close_notify): bytes written so far reach the client, and a body short
	// of its declared length shows as truncated.
	AbortClose = fault.Truncated
	// AbortReset resets the TCP connection (RST, SO_LINGER 0).
	AbortReset = fault.Reset
	// AbortRSTStream sends RST_STREAM with the given code on this stream
	// (h2 only); the connection stays usable.
	AbortRSTStream = fault.RSTStream
	// AbortGoAway sends GOAWAY with the given code and the highest stream
	// id processed so far, then closes the connection (h2 only).
	AbortGoAway = fault.GoAway
)

// ErrUnsupported is returned by Abort for a kind the protocol does not have
// (RST_STREAM and GOAWAY on HTTP/1.x).
var ErrUnsupported = errors.New("wire: abort kind not supported on this protocol")

// ErrAborted is returned by Write and Flush after the exchange was aborted.
var ErrAborted = errors.New("wire: exchange aborted")

// ResponseWriter is an http.ResponseWriter (so http.ServeContent works on it)
// that can also abort the exchange.
type ResponseWriter interface {
	http.ResponseWriter
	// Flush sends buffered header and body bytes to the client now.
	Flush() error
	// Abort ends the exchange abnormally after flushing what was written.
	// code is the h2 error code for AbortRSTStream and AbortGoAway and is
	// ignored otherwise.
	Abort(kind AbortKind, code uint32) error
	// BodyBytes is the number of body bytes handed to the connection so far.
	BodyBytes() int64
}

// Handler serves one request. When ServeWire returns, the exchange is
// complete unless it was aborted.
type Handler interface {
	ServeWire(w ResponseWriter, r *Request)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(w ResponseWriter, r *Request)

// ServeWire calls f(w, r).
func (f HandlerFunc) ServeWire(w ResponseWriter, r *Request) { f(w, r) }

// ResetConn closes c with a TCP RST where it can (SO_LINGER 0 on the
// connection under any TLS layer) and plainly otherwise. Layers are
// unwrapped with NetConn until one has SetLinger, so a wrapper of the TCP
// connection that implements SetLinger is closed itself.
func ResetConn(c net.Conn) error {
	c = under(c)
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	return c.Close()
}

// CloseConn closes c at once without a TLS close_notify: the connection
// under any TLS layer is closed with a FIN.
func CloseConn(c net.Conn) error { return under(c).Close() }

// under unwraps TLS (anything with NetConn) down to the transport.
func under(c net.Conn) net.Conn {
	for {
		nc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return c
		}
		c = nc.NetConn()
	}
}
