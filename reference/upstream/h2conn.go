package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// h2Conn is the HTTP/2 round tripper of one target (PRT-4: connections
// reused per origin and Host): one connection at a time, shared by every
// concurrent request, with requests beyond the origin's
// SETTINGS_MAX_CONCURRENT_STREAMS waiting on it for a stream (under their
// own context) rather than opening more connections. A new connection is
// dialled only when the current one is going away (GOAWAY, closed, broken)
// and then exactly once: the requests that need it wait for that one dial
// (a singleflight) instead of each dialling its own, which after a GOAWAY
// used to leave dozens of single-request connections idle (issue #12 item
// 6). Connections going away drain their streams and close; at most
// maxConns are open at once, a dial beyond that waiting for one to close.
//
// It calls http2.ClientConn.RoundTrip itself instead of
// http2.Transport.RoundTrip, whose loop transparently resends a request
// that got REFUSED_STREAM or was cut by a GOAWAY: an origin attempt the
// attempt loop would not count (ATT-3, ATT-4), and, against an origin
// that refuses every stream, a retry storm that ends in a timeout instead
// of a connect failure (ATT-5 INT).
//
// The current connection is closed once it has carried no stream for idle
// (our timer, not x/net's IdleConnTimeout: x/net re-arms its idle timer
// when a closed connection's last stream is forgotten, which kept every
// closed connection and its buffers reachable for that long; see
// TestH2ClosedConnectionsCollected).
type h2Conn struct {
	t        *http2.Transport // StrictMaxConcurrentStreams: see above
	dial     func(ctx context.Context) (net.Conn, error)
	maxConns int
	idle     time.Duration

	mu        sync.Mutex
	cc        *http2.ClientConn
	nc        *countedConn // cc's connection
	ccSince   time.Time    // when cc became current
	dialing   *h2Dial      // the dial in flight, shared by all who need it
	idleTimer *time.Timer  // armed while there is a current connection
	lastEnd   atomic.Int64 // UnixNano when a stream last ended (h2Body)

	// openMu guards open and closed; it is taken under mu, never the other
	// way round: a connection's Close, which x/net calls from its own
	// goroutines and locks, takes only openMu.
	openMu sync.Mutex
	open   int           // connections open: cc, those going away, the dial
	closed chan struct{} // closed and replaced when a connection closes
}

// h2Dial is one dial in flight; done is closed when cc/nc or err is set.
type h2Dial struct {
	done chan struct{}
	cc   *http2.ClientConn
	nc   *countedConn
	err  error
	// canceled: the dial failed because its dialler's context ended, which
	// says nothing about the origin; a waiter with time left dials again.
	canceled bool
}

func newH2Conn(t *http2.Transport, maxConns int, idle time.Duration, dial func(ctx context.Context) (net.Conn, error)) *h2Conn {
	t.StrictMaxConcurrentStreams = true
	t.IdleConnTimeout = 0 // h2Conn's own (see above)
	h := &h2Conn{t: t, dial: dial, maxConns: maxConns, idle: idle, closed: make(chan struct{})}
	h.idleTimer = time.AfterFunc(time.Hour, h.reapIdle)
	h.idleTimer.Stop()
	return h
}

// setCurrentLocked makes cc the current connection and arms the idle
// timer. h.mu must be held.
func (h *h2Conn) setCurrentLocked(cc *http2.ClientConn, nc *countedConn) {
	h.cc, h.nc, h.ccSince = cc, nc, time.Now()
	if h.idle > 0 {
		h.idleTimer.Reset(h.idle)
	}
}

// reapIdle is the idle timer: it closes the current connection if it has
// carried no stream for h.idle, else looks again when it could have.
func (h *h2Conn) reapIdle() {
	h.mu.Lock()
	cc := h.cc
	if cc == nil {
		h.mu.Unlock()
		return
	}
	st := cc.State()
	since := h.ccSince
	if end := time.Unix(0, h.lastEnd.Load()); end.After(since) {
		since = end // x/net's LastIdle is kept only with its own idle timer
	}
	idleFor := time.Since(since)
	switch {
	case st.Closed || st.Closing:
		h.cc, h.nc = nil, nil
		h.mu.Unlock()
		return
	case st.StreamsActive > 0 || st.StreamsReserved > 0:
		h.idleTimer.Reset(h.idle) // busy: it can be idle long enough no sooner
		h.mu.Unlock()
		return
	case idleFor < h.idle:
		h.idleTimer.Reset(h.idle - idleFor)
		h.mu.Unlock()
		return
	}
	h.cc, h.nc = nil, nil // no request takes it from now on
	h.mu.Unlock()
	cc.Close()
}

// RoundTrip implements http.RoundTripper: exactly one request on the wire.
// It reports the connection to the request's httptrace GotConn hook, as
// http2.Transport does (the caller learns the IP and that it connected).
//
// The one case it takes another connection for is a connection that turned
// unusable before the request was sent (closed meanwhile, or GOAWAY while
// the request waited for a stream): nothing reached the origin, so that is
// not an attempt.
//
// A connection that sent nothing back while an attempt on it waited out
// its connectTimeout is not given new requests (see silent).
func (h *h2Conn) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, _, _, err := h.roundTrip(req)
	return resp, err
}

// roundTrip is RoundTrip, which also says which origin IP the request went
// to (ip) and whether it had a connection (connected, for classify).
func (h *h2Conn) roundTrip(req *http.Request) (_ *http.Response, ip string, connected bool, _ error) {
	for tries := 0; ; tries++ {
		cc, nc, reused, err := h.conn(req.Context())
		if err != nil {
			return nil, "", false, err
		}
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: nc, Reused: reused})
		}
		reads := nc.reads.Load()
		resp, err := cc.RoundTrip(req)
		if err != nil && tries < 3 && err.Error() == errUnusable {
			h.forget(cc)
			continue
		}
		if err != nil {
			h.streamEnded()
			if silent(req.Context(), nc, reads) {
				h.forget(cc)
				retire(cc)
			}
			return nil, nc.ip, true, err
		}
		resp.Body = &h2Body{ReadCloser: resp.Body, h: h}
		return resp, nc.ip, true, nil
	}
}

func (h *h2Conn) streamEnded() { h.lastEnd.Store(time.Now().UnixNano()) }

// h2Body tells its h2Conn when the stream ended, for the idle timer.
type h2Body struct {
	io.ReadCloser
	h *h2Conn
}

func (b *h2Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.h.streamEnded()
	}
	return n, err
}

func (b *h2Body) Close() error {
	b.h.streamEnded()
	return b.ReadCloser.Close()
}

// silent reports whether an attempt that failed was cut by its connect
// timeout (TMO-1: no response headers in connectTimeout) on a connection
// that received nothing at all meanwhile, reads being the connection's
// read count when the attempt took it. Such a connection may lead nowhere:
// the origin went away without a FIN or RST (a host or a network path
// gone), and TCP only retransmits into the void, backing off. Left current,
// it would take every next request of a returned origin too, each waiting
// for the next retransmission (seconds) instead of a fresh connect
// (deploy/multihost's recovery test caught that). A connection that read
// anything meanwhile is alive, its origin just slow on this request, and
// stays. An attempt cut for another reason (the client gone) says nothing
// about the connection.
func silent(ctx context.Context, nc *countedConn, reads uint64) bool {
	return errors.Is(context.Cause(ctx), ErrConnectTimeout) && nc.reads.Load() == reads
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

// conn returns a connection with a stream reserved for the caller: the
// current one if it can take requests, else the one being dialled (the
// caller waits for it under its own context), else one the caller dials.
// The dial runs outside the lock, under the dialler's context: a waiter
// whose dialler gave up (its context ended) dials again itself, so a slow
// or abandoned dial never decides another request's outcome beyond that
// request's own deadline.
func (h *h2Conn) conn(ctx context.Context) (cc *http2.ClientConn, nc *countedConn, reused bool, err error) {
	for {
		h.mu.Lock()
		if h.cc != nil && h.cc.ReserveNewRequest() {
			cc, nc = h.cc, h.nc
			h.mu.Unlock()
			return cc, nc, true, nil
		}
		if d := h.dialing; d != nil {
			h.mu.Unlock()
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, nil, false, context.Cause(ctx)
			}
			if d.err != nil && !d.canceled {
				return nil, nil, false, d.err
			}
			continue // take the new connection (or dial again) under the lock
		}
		h.openMu.Lock()
		full, wait := h.open >= h.maxConns, h.closed
		if !full {
			h.open++
		}
		h.openMu.Unlock()
		if full {
			// The bound: wait for a connection going away to close.
			h.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, nil, false, fmt.Errorf("h2 connection: %d connections to this origin already open (all going away): %w", h.maxConns, context.Cause(ctx))
			}
			continue
		}
		d := &h2Dial{done: make(chan struct{})}
		h.dialing = d
		h.mu.Unlock()

		d.cc, d.nc, d.err = h.newConn(ctx)
		d.canceled = d.err != nil && ctx.Err() != nil

		h.mu.Lock()
		h.dialing = nil
		if d.err == nil {
			h.setCurrentLocked(d.cc, d.nc)
		}
		reserved := d.err == nil && d.cc.ReserveNewRequest()
		h.mu.Unlock()
		close(d.done)
		switch {
		case d.err != nil:
			return nil, nil, false, d.err
		case reserved:
			return d.cc, d.nc, false, nil
		}
		// Gone away already: go round again.
	}
}

// newConn dials and starts an h2 connection whose close is counted (a
// failed dial counts as closed at once).
func (h *h2Conn) newConn(ctx context.Context) (*http2.ClientConn, *countedConn, error) {
	raw, err := h.dial(ctx)
	if err != nil {
		h.connClosed()
		return nil, nil, err
	}
	nc := &countedConn{Conn: raw, onClose: h.connClosed, ip: remoteIP(raw)}
	cc, err := h.t.NewClientConn(nc)
	if err != nil {
		nc.Close() // counted once, whether or not x/net closed it already
		return nil, nil, fmt.Errorf("h2 connection: %w", err)
	}
	return cc, nc, nil
}

func (h *h2Conn) connClosed() {
	h.openMu.Lock()
	defer h.openMu.Unlock()
	h.open--
	close(h.closed)
	h.closed = make(chan struct{})
}

// openConns is the number of connections open (for tests).
func (h *h2Conn) openConns() int {
	h.openMu.Lock()
	defer h.openMu.Unlock()
	return h.open
}

// CloseIdleConnections closes the connection if it carries no stream, and
// otherwise lets its streams finish and closes it then.
func (h *h2Conn) CloseIdleConnections() {
	h.mu.Lock()
	cc := h.cc
	h.cc, h.nc = nil, nil
	h.idleTimer.Stop() // a timer firing now finds no connection
	h.mu.Unlock()
	if cc != nil {
		retire(cc)
	}
}

// retirePing bounds the PING that tells a retired connection that still
// counts streams whether the origin is there at all.
const retirePing = 2 * time.Second

// retire lets cc's streams finish and closes it: now if it carries none,
// else as the last one ends (x/net closes a connection it may not reuse
// then, but only if that was after SetDoNotReuse). x/net counts a stream it
// reset while the connection was silent as active until a PING is answered,
// which on a dead connection never happens: so a PING decides, within
// retirePing. Unanswered, the connection is closed (its streams were going
// nowhere); answered, it is closed if it is idle by then.
func retire(cc *http2.ClientConn) {
	cc.SetDoNotReuse()
	if cc.State().StreamsActive == 0 {
		cc.Close()
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), retirePing)
		defer cancel()
		if err := cc.Ping(ctx); err != nil || cc.State().StreamsActive == 0 {
			cc.Close()
		}
	}()
}

// countedConn reports its first Close (x/net closes a connection when its
// reader ends, whatever ended it), and keeps the TLS state visible to
// x/net (the response's TLS field).
type countedConn struct {
	net.Conn
	once    sync.Once
	onClose func()
	reads   atomic.Uint64 // reads that returned bytes
	ip      string        // the origin's IP (remoteIP)
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.onClose)
	return err
}

// ConnectionState is the TLS state of the connection, if it is TLS.
func (c *countedConn) ConnectionState() tls.ConnectionState {
	if tc, ok := c.Conn.(*tls.Conn); ok {
		return tc.ConnectionState()
	}
	return tls.ConnectionState{}
}

// NetConn is the connection under the TLS layer.
func (c *countedConn) NetConn() net.Conn {
	if u, ok := c.Conn.(interface{ NetConn() net.Conn }); ok {
		return u.NetConn()
	}
	return c.Conn
}
