package upstream

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"

	"golang.org/x/net/http2"
)

// h2Conn is the HTTP/2 round tripper of one target: one connection at a
// time, shared by concurrent requests, replaced when it can take no more
// streams. It calls http2.ClientConn.RoundTrip itself instead of
// http2.Transport.RoundTrip, whose loop transparently resends a request
// that got REFUSED_STREAM or was cut by a GOAWAY: an origin attempt the
// attempt loop would not count (ATT-3, ATT-4), and, against an origin
// that refuses every stream, a retry storm that ends in a timeout instead
// of a connect failure (ATT-5 INT).
type h2Conn struct {
	t    *http2.Transport
	dial func(ctx context.Context) (net.Conn, error)

	mu sync.Mutex
	cc *http2.ClientConn
	nc net.Conn // cc's connection
}

// RoundTrip implements http.RoundTripper: exactly one request on the wire.
// It reports the connection to the request's httptrace GotConn hook, as
// http2.Transport does (the caller learns the IP and that it connected).
//
// The one case it takes another connection for is a connection that turned
// unusable before the request was sent (closed meanwhile): nothing reached
// the origin, so that is not an attempt.
func (h *h2Conn) RoundTrip(req *http.Request) (*http.Response, error) {
	for tries := 0; ; tries++ {
		cc, nc, reused, err := h.conn(req.Context())
		if err != nil {
			return nil, err
		}
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: nc, Reused: reused})
		}
		resp, err := cc.RoundTrip(req)
		if err != nil && tries < 3 && err.Error() == errUnusable {
			h.forget(cc)
			continue
		}
		return resp, err
	}
}

// errUnusable is x/net's error (unexported) for a request refused by a
// connection before anything was sent.
const errUnusable = "http2: client conn not usable"

// forget drops cc as the current connection.
func (h *h2Conn) forget(cc *http2.ClientConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cc == cc {
		h.cc, h.nc = nil, nil
	}
}

// conn returns a connection with a stream reserved for the caller,
// dialling a new one when the current one cannot take it. The dial runs
// outside the lock, under the caller's context only: a slow dial never
// holds up another request's own connect timeout.
func (h *h2Conn) conn(ctx context.Context) (cc *http2.ClientConn, nc net.Conn, reused bool, err error) {
	h.mu.Lock()
	if h.cc != nil && h.cc.ReserveNewRequest() {
		cc, nc = h.cc, h.nc
		h.mu.Unlock()
		return cc, nc, true, nil
	}
	h.mu.Unlock()

	nc, err = h.dial(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	cc, err = h.t.NewClientConn(nc)
	if err != nil {
		nc.Close()
		return nil, nil, false, fmt.Errorf("h2 connection: %w", err)
	}
	if !cc.ReserveNewRequest() {
		cc.Close()
		return nil, nil, false, fmt.Errorf("h2 connection: a new connection takes no request")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Install it unless another request installed a usable connection
	// meanwhile (then this one serves this request and closes when idle).
	// A replaced connection is not closed here: requests may hold
	// reservations on it; it closes when idle (IdleConnTimeout) or broken.
	if h.cc == nil || !h.cc.CanTakeNewRequest() {
		h.cc, h.nc = cc, nc
	}
	return cc, nc, false, nil
}

// CloseIdleConnections closes the connection if it carries no stream, and
// otherwise lets its streams finish and closes it then.
func (h *h2Conn) CloseIdleConnections() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cc == nil {
		return
	}
	h.cc.SetDoNotReuse()
	if h.cc.State().StreamsActive == 0 {
		h.cc.Close()
	}
	h.cc, h.nc = nil, nil
}
