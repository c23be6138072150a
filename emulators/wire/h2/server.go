package h2

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

const (
	// http2initialWindow is the window every stream and connection starts
	// with before SETTINGS and WINDOW_UPDATE change it.
	http2initialWindow = 65535

	defaultMaxStreams  = 250
	defaultIdleTimeout = 2 * time.Minute

	// initialStreamWindow is the receive window we announce for each
	// stream; it bounds how much of a request body is buffered per stream.
	initialStreamWindow = 1 << 20
	// connRecvWindow is the connection-level receive window. Connection
	// credit is returned as soon as DATA arrives (the stream windows bound
	// memory), so one stream that is not read cannot stall the others.
	connRecvWindow = 4 << 20
	// maxHeaderListSize bounds a request's decoded header list.
	maxHeaderListSize = 1 << 20
	// readFrameSize is the largest frame we accept (the protocol default;
	// we do not announce SETTINGS_MAX_FRAME_SIZE).
	readFrameSize = 16384

	// goAwayLinger is how long the connection stays readable after GOAWAY
	// (write side already shut down) before it is closed; it also bounds
	// writes blocked at that moment.
	goAwayLinger = time.Second
	// prefaceTimeout bounds the wait for the client preface.
	prefaceTimeout = 10 * time.Second
)

// Server serves HTTP/2 connections handed to it by a listener.
type Server struct {
	// Handler serves every request. Nil answers 404 to everything.
	Handler wire.Handler
	// Logger receives handler panics and protocol errors; nil means
	// slog.Default().
	Logger *slog.Logger
	// MaxConcurrentStreams is announced in SETTINGS and enforced with
	// RST_STREAM(REFUSED_STREAM); 0 means 250.
	MaxConcurrentStreams uint32
	// IdleTimeout is how long a connection may stay without an open
	// stream before it gets GOAWAY(NO_ERROR) and is closed; 0 means two
	// minutes.
	IdleTimeout time.Duration
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) handler() wire.Handler {
	if s.Handler != nil {
		return s.Handler
	}
	return wire.HandlerFunc(func(w wire.ResponseWriter, _ *wire.Request) {
		w.WriteHeader(http.StatusNotFound)
	})
}

func (s *Server) maxStreams() uint32 {
	if s.MaxConcurrentStreams != 0 {
		return s.MaxConcurrentStreams
	}
	return defaultMaxStreams
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return defaultIdleTimeout
}

// ServeConn speaks HTTP/2 on c (TLS with ALPN h2 already negotiated, or
// cleartext h2c with prior knowledge: the client preface is read either way)
// until the client closes, a handler aborts the connection, a protocol or I/O
// error, or ctx ends (then GOAWAY(NO_ERROR) and close). Handlers see their
// request context end when the connection ends; ServeConn waits for them to
// return, then closes c and returns a short reason for a journal: "client
// closed", "idle timeout", "aborted: goaway <CODE>", "aborted: reset",
// "aborted: close", "protocol error: <why>", "server shutdown", ...
func (s *Server) ServeConn(ctx context.Context, c net.Conn, info *wire.ConnInfo) string {
	return newConn(ctx, s, c, info).serve(ctx)
}

// conn is one HTTP/2 connection.
type conn struct {
	srv        *Server
	log        *slog.Logger
	nc         net.Conn
	info       *wire.ConnInfo
	tlsState   *tls.ConnectionState
	br         *bufio.Reader
	fr         *http2.Framer // ReadFrame by the reader goroutine; writes through w
	w          *frameWriter
	maxStreams uint32
	idle       time.Duration

	// ctx is the parent of every request context; cancel ends it when the
	// connection is torn down. It keeps ServeConn's values but not its
	// cancellation, so the shutdown GOAWAY can still be written.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// goroutines counts handler goroutines and the control writer.
	goroutines sync.WaitGroup

	in inflow // connection receive window; reader goroutine only

	mu           sync.Mutex
	cond         sync.Cond // on mu: send windows grew, a stream or the connection ended
	streams      map[uint32]*stream
	running      uint32 // handler goroutines not yet returned
	maxStreamID  uint32 // highest client stream id seen
	lastStarted  uint32 // highest stream id given to a handler (GOAWAY's last stream id)
	sendWin      int64  // connection send window
	peerInitWin  int64  // peer's SETTINGS_INITIAL_WINDOW_SIZE
	peerMaxFrame uint32 // peer's SETTINGS_MAX_FRAME_SIZE
	goingAway    bool   // GOAWAY sent or queued: nothing more is sent
	peerGoAway   string // close reason once the client sent GOAWAY
	closed       bool   // torn down
	reason       string // first reason the connection ended
	idleTimer    *time.Timer
	lingerTimer  *time.Timer
}

func newConn(ctx context.Context, s *Server, nc net.Conn, info *wire.ConnInfo) *conn {
	if info == nil {
		info = &wire.ConnInfo{Peer: nc.RemoteAddr(), Local: nc.LocalAddr(), Opened: time.Now()}
	}
	c := &conn{
		srv:          s,
		log:          s.logger().With("conn", info.ID, "peer", addrString(info.Peer, nc)),
		nc:           nc,
		info:         info,
		br:           bufio.NewReaderSize(nc, 32<<10),
		maxStreams:   s.maxStreams(),
		idle:         s.idleTimeout(),
		in:           inflow{avail: http2initialWindow},
		streams:      make(map[uint32]*stream),
		sendWin:      http2initialWindow,
		peerInitWin:  http2initialWindow,
		peerMaxFrame: readFrameSize,
	}
	c.cond.L = &c.mu
	c.ctx, c.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	bw := bufio.NewWriterSize(nc, 64<<10)
	c.fr = http2.NewFramer(bw, c.br)
	c.fr.SetReuseFrames()
	c.fr.SetMaxReadFrameSize(readFrameSize)
	c.fr.MaxHeaderListSize = maxHeaderListSize
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.w = newFrameWriter(c.fr, bw, c.writeFailed)
	return c
}

func addrString(a net.Addr, nc net.Conn) string {
	if a == nil {
		a = nc.RemoteAddr()
	}
	if a == nil {
		return ""
	}
	return a.String()
}

// serve runs the connection to its end and returns the reason it ended.
func (c *conn) serve(ctx context.Context) string {
	c.goroutines.Add(1)
	go func() {
		defer c.goroutines.Done()
		c.w.runControl(c.ctx.Done())
	}()
	stop := context.AfterFunc(ctx, func() { c.goAway(http2.ErrCodeNo, "server shutdown") })
	c.mu.Lock()
	c.idleTimer = time.AfterFunc(c.idle, c.onIdle)
	c.mu.Unlock()

	if err := c.start(); err != nil {
		c.setReason(err.Error())
		if c.isGoingAway() {
			c.drain()
		}
	} else {
		c.readFrames()
	}
	stop()
	c.teardown()
	return c.closeReason()
}

// start sends our SETTINGS and reads the client preface and checks that the
// client's first frame is SETTINGS.
func (c *conn) start() error {
	err := c.w.write(flushSoon, func(fr *http2.Framer) error {
		err := fr.WriteSettings(
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: c.maxStreams},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: initialStreamWindow},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: maxHeaderListSize},
		)
		if err != nil {
			return err
		}
		return fr.WriteWindowUpdate(0, connRecvWindow-http2initialWindow)
	})
	if err != nil {
		return err
	}
	c.in.avail = connRecvWindow

	_ = c.nc.SetReadDeadline(time.Now().Add(prefaceTimeout))
	defer func() { _ = c.nc.SetReadDeadline(time.Time{}) }()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.br, preface); err != nil {
		return fmt.Errorf("no client preface: %s", readReason(err))
	}
	if string(preface) != http2.ClientPreface {
		return c.protocolError(http2.ErrCodeProtocol, "bad client preface")
	}
	hdr, err := c.br.Peek(9)
	if err != nil {
		return fmt.Errorf("no client SETTINGS: %s", readReason(err))
	}
	if http2.FrameType(hdr[3]) != http2.FrameSettings || http2.Flags(hdr[4])&http2.FlagSettingsAck != 0 {
		return c.protocolError(http2.ErrCodeProtocol, "first frame is not SETTINGS")
	}
	// The TLS handshake is surely complete once the preface was read.
	if cs, ok := c.nc.(interface{ ConnectionState() tls.ConnectionState }); ok {
		st := cs.ConnectionState()
		c.tlsState = &st
	}
	return nil
}

// protocolError starts GOAWAY with code and returns the close reason as an
// error.
func (c *conn) protocolError(code http2.ErrCode, why string) error {
	reason := "protocol error: " + why
	c.log.Debug("h2 connection error", "code", code, "why", why)
	c.goAway(code, reason)
	return errors.New(reason)
}

// setReason records why the connection ends; the first reason wins.
func (c *conn) setReason(reason string) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason = reason
	}
	c.mu.Unlock()
}

func (c *conn) closeReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason == "" {
		return "connection closed"
	}
	return c.reason
}

func (c *conn) isGoingAway() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.goingAway
}

// goAway sends GOAWAY(last stream handed to a handler, code), shuts down the
// write side and closes the connection after goAwayLinger (or when the
// client closes first). Only the first call has an effect. It never blocks
// on the network.
func (c *conn) goAway(code http2.ErrCode, reason string) {
	c.mu.Lock()
	if c.goingAway || c.closed {
		c.mu.Unlock()
		return
	}
	c.goingAway = true
	last := c.lastStarted
	if c.reason == "" {
		c.reason = reason
	}
	c.cond.Broadcast()
	c.mu.Unlock()

	// Writes blocked on a client that does not read must not hold the
	// GOAWAY back for ever.
	_ = c.nc.SetWriteDeadline(time.Now().Add(goAwayLinger))
	c.w.enqueue(control{
		write: func(fr *http2.Framer) error { return fr.WriteGoAway(last, code, nil) },
		after: c.lingerAndClose,
	})
}

// lingerAndClose runs once GOAWAY was flushed: it sends FIN and closes the
// connection after goAwayLinger, while the reader keeps draining input so
// that the close does not turn into a reset that could destroy the GOAWAY.
func (c *conn) lingerAndClose() {
	closeWrite(c.nc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.lingerTimer == nil {
		c.lingerTimer = time.AfterFunc(goAwayLinger, func() { _ = c.nc.Close() })
	}
}

// closeWrite shuts down the sending side of the TCP connection under any
// TLS layer (a FIN, no close_notify), or closes it when it cannot.
func closeWrite(nc net.Conn) {
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = u.NetConn()
	}
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = nc.Close()
}

// abortConn ends the connection at once with closeFn (wire.CloseConn or
// wire.ResetConn).
func (c *conn) abortConn(reason string, closeFn func(net.Conn) error) error {
	c.mu.Lock()
	if c.reason == "" {
		c.reason = reason
	}
	c.goingAway = true
	c.cond.Broadcast()
	c.mu.Unlock()
	// What was written reaches the client, unless it does not read.
	_ = c.nc.SetWriteDeadline(time.Now().Add(goAwayLinger))
	_ = c.w.write(flushNow, nil)
	if err := closeFn(c.nc); err != nil {
		return fmt.Errorf("h2: %s: %w", reason, err)
	}
	return nil
}

// onIdle runs when the idle timer fires.
func (c *conn) onIdle() {
	c.mu.Lock()
	busy := len(c.streams) > 0 || c.closed
	c.mu.Unlock()
	if !busy {
		c.goAway(http2.ErrCodeNo, "idle timeout")
	}
}

// writeFailed is called once, on the first write error.
func (c *conn) writeFailed(err error) {
	c.mu.Lock()
	quiet := c.goingAway || c.closed
	c.mu.Unlock()
	if quiet {
		return // expected once the connection is being closed
	}
	c.setReason("write error: " + err.Error())
	_ = c.nc.Close()
}

// readReason turns a read error into a close reason.
func readReason(err error) string {
	switch {
	case errors.Is(err, io.EOF):
		return "client closed"
	case errors.Is(err, syscall.ECONNRESET):
		return "client reset"
	case errors.Is(err, net.ErrClosed):
		return "connection closed"
	}
	return "read error: " + err.Error()
}

// drain reads and discards input until the connection is closed.
func (c *conn) drain() {
	_, err := io.Copy(io.Discard, c.br)
	if err == nil {
		err = io.EOF
	}
	c.setReason(readReason(err))
}

// teardown ends every stream, closes the connection and waits for the
// handlers.
func (c *conn) teardown() {
	c.mu.Lock()
	c.closed = true
	c.goingAway = true
	streams := c.streams
	c.streams = nil
	c.idleTimer.Stop()
	if c.lingerTimer != nil {
		c.lingerTimer.Stop()
	}
	c.cond.Broadcast()
	c.mu.Unlock()

	c.cancel(errConnClosed)
	for _, st := range streams {
		st.end(errConnClosed)
	}
	_ = c.nc.Close()
	c.goroutines.Wait()
}
