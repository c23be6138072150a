package receive

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// errCalm is what net/http reads from an h2c connection whose client
// passed the reset limit.
var errCalm = errors.New("receive: h2 client passed the reset-stream limit (GOAWAY ENHANCE_YOUR_CALM sent)")

// calmGrace bounds the wait for a frame boundary on the server's side
// before the GOAWAY; after it the connection is closed without one.
const calmGrace = time.Second

// Listener wraps ln so that every connection's incoming bytes pass the
// receive step's raw checks before net/http parses them: HTTP/1.1 heads
// (RFC 9112 framing, obs-fold, the head limits) and, for h2c with prior
// knowledge, the reset-stream limit and trailers. Use it with Configure
// on the same Limits: a refused HTTP/1.1 head reaches net/http as a
// placeholder request that the configured handler answers.
// log (nil: slog.Default) gets a record for each connection ended at
// the reset limit.
func Listener(ln net.Listener, l Limits, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.Default()
	}
	return &listener{Listener: ln, lim: l, log: log}
}

type listener struct {
	net.Listener
	lim Limits
	log *slog.Logger
}

func (ln *listener) Accept() (net.Conn, error) {
	c, err := ln.Listener.Accept()
	if err != nil {
		return nil, err
	}
	token := rand.Text()
	return &conn{Conn: c, h1: newH1(ln.lim, token), lim: ln.lim, token: token, log: ln.log}, nil
}

// conn is one client connection under the receive step. Reads come from
// one goroutine at a time (net/http's), writes from another (h2's
// writer), so the read side keeps its state unlocked and shares only
// what wmu guards.
type conn struct {
	net.Conn
	lim  Limits
	log  *slog.Logger
	h1   *h1scan
	h2   *h2in // set once the connection is h2c
	in   []byte
	out  []byte // released bytes not yet read by net/http
	off  int
	rerr error // a read error to return once out is drained

	token    string // on the placeholder of a refused head (RejectHeader)
	mu       sync.Mutex
	rejected *Error // a refused HTTP/1.1 head, for the placeholder's handler

	isH2     atomic.Bool
	wmu      sync.Mutex
	wout     h2out
	calm     bool // GOAWAY due
	gone     bool // GOAWAY sent (or given up on) and the connection closed
	draining bool // after the GOAWAY: reading and dropping until closed
	calmL    uint32
}

func (c *conn) Read(p []byte) (int, error) {
	if c.off == len(c.out) && c.rerr == nil {
		// Body bytes (HTTP/1.1 Content-Length or chunk data, h2 frame
		// payloads) need no look: straight into p, with no copy.
		if n := c.direct(); n > 0 {
			m, err := c.Conn.Read(p[:min(len(p), n)])
			c.passed(m)
			return m, err
		}
	}
	for c.off == len(c.out) {
		if c.rerr != nil {
			err := c.rerr
			if !errors.Is(err, errCalm) {
				c.rerr = nil
			}
			return 0, err
		}
		if c.in == nil {
			c.in = make([]byte, 8<<10)
		}
		c.out, c.off = c.out[:0], 0
		if cap(c.out) > 2*len(c.in) {
			c.out = nil // a released head's buffer is not kept for the connection's life
		}
		n, err := c.Conn.Read(c.in)
		c.scan(c.in[:n])
		if err != nil && c.rerr == nil {
			c.rerr = err
		}
	}
	n := copy(p, c.out[c.off:])
	c.off += n
	return n, nil
}

// direct is how many of the next bytes may go to net/http unlooked at.
func (c *conn) direct() int {
	if c.h2 != nil {
		if c.h2.skip == 0 && c.h2.hn == 0 {
			return int(c.h2.remain)
		}
		return 0
	}
	switch c.h1.state {
	case sPass:
		return math.MaxInt
	case sBody, sChunkData:
		return int(min(c.h1.remain, math.MaxInt32))
	}
	return 0
}

// passed accounts for n bytes read straight through (direct).
func (c *conn) passed(n int) {
	if c.h2 != nil {
		c.h2.remain -= uint32(n)
		return
	}
	s := c.h1
	switch s.state {
	case sBody:
		if s.remain -= int64(n); s.remain == 0 {
			s.state = sHead
		}
	case sChunkData:
		if s.remain -= int64(n); s.remain == 0 {
			s.state, s.buf = sChunkEnd, s.buf[:0]
		}
	}
}

// scan runs incoming bytes through the HTTP/1.1 or h2 follower.
func (c *conn) scan(in []byte) {
	if c.h2 == nil {
		var rej *Error
		var h2 bool
		c.out, rej, h2, in = c.h1.feed(in, c.out)
		if rej != nil {
			c.mu.Lock()
			c.rejected = rej
			c.mu.Unlock()
		}
		if !h2 {
			return
		}
		c.h2 = newH2in(c.lim, len("SM\r\n\r\n"))
		c.h1 = nil
		c.isH2.Store(true)
	}
	var calm bool
	c.out, calm = c.h2.feed(in, c.out)
	if calm {
		c.rerr = errCalm
		c.log.Warn("h2 client passed the reset-stream limit: GOAWAY ENHANCE_YOUR_CALM, connection closed",
			"remote", c.RemoteAddr().String(), "max_resets", c.lim.H2MaxResets, "window", c.lim.H2ResetWindow.String(),
			"last_stream", c.h2.maxStream)
		c.enhanceYourCalm(c.h2.maxStream)
	}
}

// enhanceYourCalm sends GOAWAY ENHANCE_YOUR_CALM at the next frame
// boundary of the server's output and closes the connection.
func (c *conn) enhanceYourCalm(last uint32) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.calm, c.calmL = true, last
	if c.wout.between() {
		c.sendCalm()
		return
	}
	time.AfterFunc(calmGrace, func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if !c.gone {
			c.gone = true
			c.Conn.Close()
		}
	})
}

// sendCalm writes the GOAWAY and ends the connection; wmu is held. The
// client's bytes still arriving are read and dropped for calmGrace after a
// FIN, so that closing does not reset the connection (which could discard
// the GOAWAY before the client reads it).
func (c *conn) sendCalm() {
	c.gone = true
	_ = c.Conn.SetWriteDeadline(time.Now().Add(calmGrace))
	_, _ = c.Conn.Write(goAway(c.calmL))
	tc, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok || tc.CloseWrite() != nil {
		c.Conn.Close()
		return
	}
	c.draining = true
	nc := c.Conn
	time.AfterFunc(calmGrace, func() { nc.Close() }) // whatever deadlines net/http sets meanwhile
	go func() {
		_, _ = io.Copy(io.Discard, nc)
		nc.Close()
	}()
}

// Close closes the connection, unless it is draining after a GOAWAY (then
// the drain closes it).
func (c *conn) Close() error {
	if c.isH2.Load() {
		c.wmu.Lock()
		draining := c.draining
		c.wmu.Unlock()
		if draining {
			return nil
		}
	}
	return c.Conn.Close()
}

func (c *conn) Write(p []byte) (int, error) {
	if !c.isH2.Load() {
		return c.Conn.Write(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.gone {
		return 0, errCalm
	}
	if !c.calm {
		c.wout.advance(p)
		return c.Conn.Write(p)
	}
	k := c.wout.boundary(p)
	n, err := c.Conn.Write(p[:k])
	c.wout.advance(p[:n])
	if err != nil {
		return n, err
	}
	if c.wout.between() {
		c.sendCalm()
		return n, errCalm
	}
	return n, nil // the frame goes on in the next write
}

// takeRejected returns and clears the connection's refused head.
func (c *conn) takeRejected() *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.rejected
	c.rejected = nil
	return e
}

type connKey struct{}

// stashed is the refusal r stands for when r is the placeholder of a head
// refused by a server that parses heads itself (WithRejection) or by
// Listener (it carries its connection's token), a 400 when r carries
// RejectHeader otherwise, else nil.
func stashed(r *http.Request) *Error {
	if e := Rejection(r.Context()); e != nil {
		return e
	}
	tok, ok := r.Header[RejectHeader]
	if !ok {
		return nil
	}
	if c, ok := r.Context().Value(connKey{}).(*conn); ok && len(tok) == 1 && tok[0] == c.token {
		if e := c.takeRejected(); e != nil {
			return e
		}
	}
	return reject(http.StatusBadRequest, "the %s header is reserved", RejectHeader)
}

// Configure sets srv up for the receive step with l: HTTP/1.1 and h2c
// (prior knowledge); net/http's own head bound above l's (MaxHeaderBytes,
// which h2 advertises as SETTINGS_MAX_HEADER_LIST_SIZE and answers 431
// past); the connection in each request's context, so Check finds what
// Listener refused; and srv.Handler wrapped so that a refused head is
// answered (with Connection: close) even by a handler that does not call
// Check (one that is Checking is left as it is). Serve srv on
// Listener(ln, l, log); set srv.Handler before calling Configure.
func Configure(srv *http.Server, l Limits, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv.Protocols = &protocols
	srv.MaxHeaderBytes = l.headBudget()
	prev := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, nc net.Conn) context.Context {
		if prev != nil {
			ctx = prev(ctx, nc)
		}
		if c, ok := nc.(*conn); ok {
			ctx = context.WithValue(ctx, connKey{}, c)
		}
		return ctx
	}
	next := srv.Handler
	if _, ok := next.(Checking); ok {
		return // it answers placeholders itself, in its own log
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := stashed(r); e != nil {
			log.Info("client request refused", "status", e.Status, "reason", e.Reason, "remote", r.RemoteAddr)
			Answer(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Checking is a handler that calls Check first thing in ServeHTTP (as
// edge.Server does), so Configure leaves it unwrapped and its own log
// records the refusals.
type Checking interface {
	http.Handler
	ChecksReceive()
}

// Answer writes e as the response to r, closing an HTTP/1.1 connection
// after it (RFC 9112 6.3: after a framing error the connection cannot be
// trusted; h2 has no such header, its framing is per stream).
func Answer(w http.ResponseWriter, r *http.Request, e *Error) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	http.Error(w, e.Reason, e.Status)
}
