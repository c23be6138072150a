// Package http1 is a small HTTP/1.1 server for the fault-injecting test
// origin. It serves one accepted connection at a time through
// [Server.ServeConn] and hands each request to a [wire.Handler].
//
// It exists instead of net/http because the emulator needs what net/http
// deliberately hides:
//
//   - the request's header fields in arrival order, names as sent
//     ([wire.Request.Fields]);
//   - response header fields written exactly as the handler set them: no
//     Date, no Content-Type sniffing, no repair of malformed values such as
//     "Content-Length: abc". The server adds only framing: chunked
//     Transfer-Encoding for HTTP/1.1 responses without Content-Length, and
//     "Connection: close" (or "Connection: keep-alive" for an HTTP/1.0
//     client that asked for it) when the handler did not set Connection;
//   - exact control of the connection: [wire.ResponseWriter.Abort] flushes
//     what was written and then closes (FIN) or resets (RST) the TCP
//     connection, so a client sees a body cut short after N bytes.
//
// Request contexts are derived from the context given to ServeConn. The
// connection's context (and so every request context) is cancelled when
// ServeConn returns, when the exchange is aborted, when a write to the
// connection fails, or when the client goes away while a handler runs: once a
// request body has been read to its end the server reads ahead in the
// background, like net/http, and a read error there (EOF, reset) cancels the
// context. A client that half-closes its side after sending a request
// therefore sees its request context cancelled too.
package http1

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
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/edgeconform/edgeconform/emulators/fault"
	"github.com/edgeconform/edgeconform/emulators/wire"
)

const (
	defaultMaxHeaderBytes = 64 << 10
	defaultIdleTimeout    = 2 * time.Minute

	// maxDrainBytes is how much of a request body the handler left unread
	// the server discards to keep the connection usable; beyond it the
	// connection is closed.
	maxDrainBytes = 256 << 10
	// lingerTimeout and maxLingerBytes bound how long and how much the
	// server reads (and discards) after half-closing a connection, so that
	// unread client bytes do not turn the close into a reset that could
	// destroy the response.
	lingerTimeout  = 500 * time.Millisecond
	maxLingerBytes = 256 << 10

	writeBufferSize = 4 << 10
)

// Server serves HTTP/1.x on connections handed to ServeConn. Its fields must
// not change while connections are being served. A Server has no other
// state; one value can serve any number of connections concurrently.
type Server struct {
	// Handler serves each request; nil answers every request with an
	// empty 404.
	Handler wire.Handler
	// Logger receives handler panics and other server events; nil means
	// slog.Default().
	Logger *slog.Logger
	// MaxHeaderBytes caps the request head (request line and header
	// fields); 0 means 64 KiB. A longer head gets 431 and the connection
	// is closed.
	MaxHeaderBytes int
	// IdleTimeout is how long a connection waits for the (complete head
	// of the) next request; 0 means 2 minutes. It also bounds draining an
	// unread request body after the response.
	IdleTimeout time.Duration
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return defaultMaxHeaderBytes
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return defaultIdleTimeout
}

// ServeConn serves requests on c until the client closes it, the handler
// aborts, an error occurs, or ctx ends (then it closes c). It closes c before
// returning. It returns a short reason for a journal: "client closed", "idle
// timeout", "aborted: reset", "aborted: close", "server shutdown",
// "bad request: <why>", "write error: <err>", "handler panic: <value>",
// "close after response: <why>", ...
//
// info describes the connection; nil is allowed (the addresses are then
// taken from c).
func (s *Server) ServeConn(ctx context.Context, c net.Conn, info *wire.ConnInfo) string {
	if info == nil {
		info = &wire.ConnInfo{Peer: c.RemoteAddr(), Local: c.LocalAddr(), Opened: time.Now()}
	}
	cc := newConn(ctx, s, c, info)
	defer cc.shutdown()
	return cc.serve()
}

// conn is the state of one connection while ServeConn runs.
type conn struct {
	srv  *Server
	log  *slog.Logger
	c    net.Conn
	info *wire.ConnInfo

	br      *bufio.Reader // request bytes; sized to the head limit
	bw      *bufio.Writer // response bytes on their way to c
	bodyBuf *bufio.Writer // response body buffer, reset per response

	parent context.Context // the ServeConn context
	ctx    context.Context // cancelled when the connection is done
	cancel context.CancelCauseFunc
	stop   func() bool // unregisters the close-on-parent-done hook

	tlsState *tls.ConnectionState
	closed   bool          // c was closed (or reset) by the server
	bgRead   chan struct{} // non-nil while a background read runs
}

func newConn(parent context.Context, s *Server, c net.Conn, info *wire.ConnInfo) *conn {
	ctx, cancel := context.WithCancelCause(parent)
	cc := &conn{
		srv:    s,
		log:    s.logger().With("conn", info.ID, "peer", addrString(info.Peer)),
		c:      c,
		info:   info,
		br:     bufio.NewReaderSize(c, s.maxHeaderBytes()),
		bw:     bufio.NewWriterSize(c, writeBufferSize),
		parent: parent,
		ctx:    ctx,
		cancel: cancel,
	}
	// Closing the TCP connection under any TLS layer unblocks reads and
	// writes at once, without waiting to send a close_notify.
	cc.stop = context.AfterFunc(parent, func() { _ = wire.CloseConn(c) })
	return cc
}

// shutdown releases the connection when ServeConn returns.
func (cc *conn) shutdown() {
	cc.stopBackgroundRead()
	cc.stop()
	cc.cancel(errors.New("http1: connection done"))
	if !cc.closed {
		_ = cc.c.Close()
		cc.closed = true
	}
}

// serve is the connection loop: read a request, serve it, repeat.
func (cc *conn) serve() string {
	if err := cc.handshake(); err != nil {
		return cc.readFailure("tls handshake", err)
	}
	for {
		req, err := cc.readRequest()
		if err != nil {
			return cc.requestFailure(err)
		}
		if reason, keep := cc.serveRequest(req); !keep {
			return reason
		}
	}
}

// handshake completes a TLS handshake the listener has not done yet and
// records the connection state for the requests.
func (cc *conn) handshake() error {
	tc, ok := cc.c.(*tls.Conn)
	if !ok {
		return nil
	}
	if !tc.ConnectionState().HandshakeComplete {
		ctx, cancel := context.WithTimeout(cc.ctx, cc.srv.idleTimeout())
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			return err
		}
	}
	st := tc.ConnectionState()
	cc.tlsState = &st
	return nil
}

// serveRequest runs the handler for one request and completes the exchange.
// keep reports whether the connection can carry another request; when it
// cannot, reason says why.
func (cc *conn) serveRequest(in *incoming) (reason string, keep bool) {
	reqCtx, cancelReq := context.WithCancel(cc.ctx)
	defer cancelReq()
	req := in.req.WithContext(reqCtx)
	body := newRequestBody(cc, in.req, req)
	req.Body = body
	w := newResponse(cc, req, body)
	body.resp = w
	if body.eof {
		cc.startBackgroundRead()
	}

	panicVal, panicked := cc.runHandler(w, &wire.Request{Request: req, Fields: in.fields, Conn: cc.info})
	cc.stopBackgroundRead()
	switch {
	case panicked:
		cc.reset()
		return fmt.Sprintf("handler panic: %v", panicVal), false
	case w.aborted == wire.AbortClose:
		return "aborted: close", false // what happened to the connection, as h2 says it
	case w.aborted != fault.Pending:
		return "aborted: " + w.aborted.String(), false
	}
	if err := w.finish(); err != nil {
		return cc.writeFailure(err), false
	}
	if cc.parent.Err() != nil {
		return "server shutdown", false
	}
	if w.closeAfter {
		cc.closeGracefully()
		return "close after response: " + w.closeWhy, false
	}
	if err := cc.drainBody(body); err != nil {
		cc.closeGracefully()
		return "close after response: " + err.Error(), false
	}
	return "", true
}

// runHandler calls the handler, turning a panic into a logged event.
func (cc *conn) runHandler(w *response, r *wire.Request) (panicVal any, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicVal, panicked = v, true
			if v == http.ErrAbortHandler {
				return
			}
			cc.log.Error("http1: handler panic; resetting connection",
				"method", r.Method, "target", r.RequestURI, "panic", fmt.Sprint(v),
				"stack", string(debug.Stack()))
		}
	}()
	if cc.srv.Handler == nil {
		w.WriteHeader(http.StatusNotFound)
		return nil, false
	}
	cc.srv.Handler.ServeWire(w, r)
	return nil, false
}

// drainBody discards what the handler left of the request body so the next
// request can be read; it fails when the body is too long, the client does
// not send it in time, or the handler never asked for it (100-continue).
func (cc *conn) drainBody(b *requestBody) error {
	if b.eof {
		return nil
	}
	if b.err != nil {
		return fmt.Errorf("request body: %w", b.err)
	}
	if b.awaitingContinue() {
		return errors.New("request body not requested (100-continue)")
	}
	_ = cc.c.SetReadDeadline(time.Now().Add(cc.srv.idleTimeout()))
	defer cc.c.SetReadDeadline(time.Time{})
	_, err := io.CopyN(io.Discard, b.rc, maxDrainBytes+1)
	switch {
	case err == io.EOF:
		return nil
	case err == nil:
		return fmt.Errorf("unread request body over %d bytes", maxDrainBytes)
	default:
		return fmt.Errorf("draining request body: %w", err)
	}
}

// requestFailure turns an error from readRequest into the reason ServeConn
// returns, answering a malformed request with its status first.
func (cc *conn) requestFailure(err error) string {
	var bad *badRequestError
	if errors.As(err, &bad) {
		cc.writeError(bad)
		cc.closeGracefully()
		return "bad request: " + bad.why
	}
	var partial *incompleteHeadError
	if errors.As(err, &partial) {
		return cc.readFailure("incomplete request head", partial.err)
	}
	return cc.readFailure("", err)
}

// readFailure names a read error: the client closing, a timeout, shutdown.
func (cc *conn) readFailure(what string, err error) string {
	reason := ""
	switch {
	case cc.parent.Err() != nil:
		return "server shutdown"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
		reason = "client closed"
	case errors.Is(err, os.ErrDeadlineExceeded):
		reason = "idle timeout"
	default:
		reason = "read error: " + err.Error()
	}
	if what != "" {
		reason += " (" + what + ")"
	}
	return reason
}

// writeFailure names a write error and marks the connection dead.
func (cc *conn) writeFailure(err error) string {
	if cc.parent.Err() != nil {
		return "server shutdown"
	}
	return "write error: " + err.Error()
}

// writeError answers a request the server could not parse.
func (cc *conn) writeError(bad *badRequestError) {
	body := bad.why + "\n"
	fmt.Fprintf(cc.bw, "HTTP/1.1 %d %s\r\n", bad.code, statusText(bad.code))
	fmt.Fprintf(cc.bw, "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	cc.bw.WriteString(body)
	_ = cc.bw.Flush()
}

// failWrite records a failed write: the connection is unusable, and request
// contexts learn it.
func (cc *conn) failWrite(err error) {
	cc.cancel(fmt.Errorf("http1: write failed: %w", err))
}

// closeGracefully closes c after a complete response: it flushes, sends FIN
// and briefly reads and discards what the client still sends, so that unread
// bytes do not make the kernel answer with a reset.
func (cc *conn) closeGracefully() {
	if cc.closed {
		return
	}
	_ = cc.bw.Flush()
	if cw, ok := cc.c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			_ = cc.c.SetReadDeadline(time.Now().Add(lingerTimeout))
			_, _ = io.CopyN(io.Discard, cc.c, maxLingerBytes)
		}
	}
	_ = cc.c.Close()
	cc.closed = true
}

// closeNow closes c at once with a FIN and no TLS close_notify.
func (cc *conn) closeNow() {
	_ = wire.CloseConn(cc.c)
	cc.closed = true
	cc.cancel(errors.New("http1: connection closed by handler"))
}

// reset closes c with a TCP RST.
func (cc *conn) reset() {
	_ = wire.ResetConn(cc.c)
	cc.closed = true
	cc.cancel(errors.New("http1: connection reset by server"))
}

// startBackgroundRead watches for the client going away while the handler
// runs, once the request body has been read: a read error cancels the
// connection context. Bytes that arrive (a pipelined request) stay buffered.
func (cc *conn) startBackgroundRead() {
	if cc.bgRead != nil {
		return
	}
	done := make(chan struct{})
	cc.bgRead = done
	go func() {
		defer close(done)
		if _, err := cc.br.Peek(1); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			cc.cancel(fmt.Errorf("http1: client gone: %w", err))
		}
	}()
}

// stopBackgroundRead interrupts a background read and waits for it to end.
func (cc *conn) stopBackgroundRead() {
	if cc.bgRead == nil {
		return
	}
	_ = cc.c.SetReadDeadline(time.Unix(1, 0))
	<-cc.bgRead
	cc.bgRead = nil
	_ = cc.c.SetReadDeadline(time.Time{})
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "status " + strconv.Itoa(code)
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
