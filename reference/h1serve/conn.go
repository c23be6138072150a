package h1serve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeconform/edgeconform/reference/receive"
)

// Connection states, for Shutdown.
const (
	stateIdle   = iota // waiting for a request head
	stateActive        // a request is being read or served
	stateClosed        // closed by Shutdown or Close
)

// maxDrain is how much of an unread request body is read after the
// handler so that the connection can be reused (net/http's bound).
const maxDrain = 256 << 10

// errClosed ends a connection Shutdown closed while it was idle.
var errClosed = errors.New("h1serve: connection closed by shutdown")

// http2Preface is the h2 client connection preface (RFC 9113 3.4).
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// conn is one client connection, served by one goroutine.
type conn struct {
	srv       *Server
	nc        net.Conn
	cr        *connReader
	br        *bufio.Reader
	bw        *gatherWriter
	base      context.Context
	remote    string
	state     atomic.Int32
	head      []byte      // the head being read
	keys      []string    // writeFields' sort buffer
	resHeader http.Header // the response header map, kept (responseHeader)
	bodyBuf   []byte
	deadline  time.Time // the read deadline set, zero for none
	linger    bool      // close with the client's bytes unread: lingerClose first

	// The request being served.
	parsed       parsed
	ctx          *reqCtx
	body         *body
	res          *response
	reqClose     bool
	expect       bool       // Expect: 100-continue
	cmu          sync.Mutex // continueSent, headSent
	continueSent bool
	headSent     bool

	wmu          sync.Mutex // the watcher's switches, from any goroutine
	watchOK      bool
	watchAsked   bool        // something waits on the request's context
	watchTimer   *time.Timer // starts the background read watchDelay after it was asked (watchNow)
	watchPending bool        // due before the body was read
	bodyRead     bool
}

// watchDelay is how long a wait on a request's context goes on before the
// background read that notices the client leaving starts: a request
// answered sooner (a proxied response from a near origin) costs a timer
// reset instead of a goroutine, a read that parks and the hand-over of
// what it read (issue #14); a client that leaves is noticed at most this
// much later.
const watchDelay = 10 * time.Millisecond

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{srv: s, nc: nc, remote: nc.RemoteAddr().String()}
	c.cr = newConnReader(nc)
	c.br = bufio.NewReaderSize(c.cr, 4<<10)
	c.bw = newGatherWriter(nc, 8<<10)
	c.base = context.WithValue(s.baseCtx, http.LocalAddrContextKey, nc.LocalAddr())
	return c
}

// serve answers the connection's requests until it cannot be reused.
func (c *conn) serve() {
	handedOff := false
	defer func() {
		if v := recover(); v != nil { // a bug here ends this connection, not the process
			c.srv.log().Error("h1serve: panic serving a connection", "remote", c.remote, "panic", v, "stack", string(debug.Stack()))
		}
		if !handedOff {
			if c.linger {
				c.lingerClose()
			}
			c.nc.Close()
		}
		c.srv.forget(c)
	}()
	c.setDeadline(c.srv.headerTimeout())
	if h2, err := c.preface(); err != nil {
		return
	} else if h2 {
		handedOff = c.handOff()
		return
	}
	for c.serveOne() {
		if !c.state.CompareAndSwap(stateActive, stateIdle) || c.srv.shutting.Load() {
			return
		}
		c.setDeadline(c.srv.idleTimeout())
		c.yieldBeforeRead()
	}
}

// yieldBeforeRead lets the other runnable goroutines (other connections'
// requests) run before this one reads its next head, when nothing of that
// head is held yet. The client has only just been sent its response, so
// a read now nearly always finds nothing: the read fails (EAGAIN), the
// goroutine parks on the poller and is woken again, a system call and two
// trips through the scheduler per request. After a round of the other
// work the next request has usually come, and one read takes it, as an
// event loop reads a connection only once it is ready (issue #14: 1.97 to
// 1.17 reads per keep-alive 1 KiB hit). With nothing else to run it
// returns at once; a pipelined head already read is served without it.
func (c *conn) yieldBeforeRead() {
	if c.br.Buffered() > 0 || c.cr.holding() {
		return
	}
	if c.srv.yield != nil {
		c.srv.yield()
		return
	}
	runtime.Gosched()
}

// setDeadline sets the read deadline for the wait for a head coarsely:
// only when the one set ends more than a second (at most d/2) before
// now+d, so a busy keep-alive connection moves its deadline about once a
// second, not once a request.
func (c *conn) setDeadline(d time.Duration) {
	if d <= 0 {
		return
	}
	now := time.Now()
	if !c.deadline.IsZero() && c.deadline.Sub(now) > d-min(time.Second, d/2) {
		return
	}
	c.deadline = now.Add(d)
	_ = c.nc.SetReadDeadline(c.deadline)
}

func (c *conn) clearDeadline() {
	if !c.deadline.IsZero() {
		c.deadline = time.Time{}
		_ = c.nc.SetReadDeadline(time.Time{})
	}
}

// preface reports whether the connection starts with the h2 preface,
// peeking no further than the bytes that still match it.
func (c *conn) preface() (bool, error) {
	for n := 1; ; {
		if b, err := c.br.Peek(n); len(b) < n {
			return false, err
		}
		b, _ := c.br.Peek(min(c.br.Buffered(), len(http2Preface)))
		if !strings.HasPrefix(http2Preface, string(b)) {
			return false, nil
		}
		if len(b) == len(http2Preface) {
			return true, nil
		}
		n = len(b) + 1
	}
}

// handOff gives an h2c connection, with what was read of it, to the h2
// server (through receive.H2Conn's reset limit and trailer guard).
func (c *conn) handOff() bool {
	read, _ := c.br.Peek(c.br.Buffered())
	read = append([]byte(nil), read...)
	c.clearDeadline()
	c.deadline = time.Time{}
	_ = c.nc.SetReadDeadline(time.Time{})
	return c.srv.serveH2(receive.H2Conn(c.nc, read, c.srv.Limits, c.srv.log()))
}

// activate marks the connection active once a head's first bytes are in;
// false when Shutdown closed it meanwhile.
func (c *conn) activate() bool {
	return c.state.CompareAndSwap(stateIdle, stateActive) || c.state.Load() == stateActive
}

// serveOne reads and answers one request; true if the connection may
// carry another.
func (c *conn) serveOne() bool {
	h, buf, err := readHead(c.br, c.head, c.srv.Limits, c.activate)
	c.head = buf[:0]
	if cap(buf) > 16<<10 {
		c.head = nil // a large head's buffer is not kept for the connection's life
	}
	p := &c.parsed
	if err == nil {
		err = parseHead(h, p)
	}
	switch e := err.(type) {
	case nil:
	case *receive.Error:
		c.refuse(e)
		return false
	case *protoError:
		c.protoAnswer(e)
		return false
	default:
		return false // the client went away, or the head timed out
	}
	req := c.newRequest(p)
	if p.contentLength != 0 {
		c.clearDeadline() // a body may take long; the head's deadline is not its
	}
	if ex, ok := p.header["Expect"]; ok && !hasToken(ex, "100-continue") {
		c.res.close = true
		c.res.WriteHeader(http.StatusExpectationFailed)
		return c.finishRequest()
	} else if ok && p.minor >= 1 && p.contentLength != 0 {
		c.expect = true
	}
	c.run(req)
	return c.finishRequest()
}

// run calls the handler; a panic is logged and ends the connection, as in
// net/http (http.ErrAbortHandler silently).
func (c *conn) run(req *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			c.res.close = true
			if v != http.ErrAbortHandler {
				c.srv.log().Error("h1serve: panic serving a request", "remote", c.remote, "panic", v, "stack", string(debug.Stack()))
			}
			c.res.err = errors.New("handler panicked")
		}
	}()
	c.srv.Handler.ServeHTTP(c.res, req)
}

// exchange is one request's context and response writer, in one
// allocation.
type exchange struct {
	ctx reqCtx
	res response
}

// newRequest makes the request and response for p.
func (c *conn) newRequest(p *parsed) *http.Request {
	x := &exchange{ctx: reqCtx{Context: c.base, c: c}}
	c.ctx = &x.ctx
	var zero http.Request
	req := zero.WithContext(c.ctx)
	req.Method, req.URL, req.Proto, req.ProtoMajor, req.ProtoMinor = p.method, p.url, p.proto, p.major, p.minor
	req.Header, req.Host, req.RemoteAddr, req.RequestURI = p.header, p.host, c.remote, p.target
	req.ContentLength, req.Close = p.contentLength, p.close
	req.Body = http.NoBody
	c.body, c.expect, c.continueSent, c.headSent, c.reqClose = nil, false, false, false, p.close
	if p.chunked {
		req.TransferEncoding = []string{"chunked"}
	}
	if p.contentLength != 0 {
		c.body = newBody(c, req, p)
		req.Body = c.body
	}
	if c.bodyBuf == nil {
		c.bodyBuf = make([]byte, 0, bodyBufSize)
	}
	x.res = response{c: c, req: req, header: c.responseHeader(), buf: c.bodyBuf[:0], cl: -1}
	c.res = &x.res
	c.wmu.Lock()
	c.watchOK, c.watchAsked, c.watchPending, c.bodyRead = true, false, false, c.body == nil
	c.wmu.Unlock()
	return req
}

// responseHeader is the connection's response header map, emptied for
// the next request: a map kept across requests keeps its storage, where
// a new one is allocated (and grown past 8 fields) for every response
// (issue #14). As with net/http, a handler must not use the header after
// it returns. A map grown past maxKeptFields is not kept.
func (c *conn) responseHeader() http.Header {
	if c.resHeader == nil || len(c.resHeader) > maxKeptFields {
		c.resHeader = make(http.Header, 16)
		return c.resHeader
	}
	clear(c.resHeader)
	return c.resHeader
}

// maxKeptFields bounds the response header map kept for a connection.
const maxKeptFields = 64

// finishRequest ends the response and the request; true if the
// connection may carry another request.
func (c *conn) finishRequest() bool {
	c.wmu.Lock()
	c.watchOK = false
	if c.watchAsked {
		c.watchTimer.Stop()
	}
	c.wmu.Unlock()
	c.cr.served()
	w := c.res
	intact := true
	if c.body != nil && !c.body.end() {
		c.cmu.Lock()
		waiting := c.expect && !c.continueSent
		c.cmu.Unlock()
		switch {
		case waiting || w.close:
			intact = false // the client waits for a 100 that will not come; or closing anyway
		case !w.sent:
			intact = c.body.drain(maxDrain)
		}
		if !intact {
			w.close, c.linger = true, true
		}
	}
	w.finish()
	if intact && c.body != nil && !w.close {
		intact = c.body.drain(maxDrain)
		c.linger = !intact
	}
	c.ctx.cancel(context.Canceled) // the handler returned (as in net/http)
	return intact && !w.close && !c.reqClose && w.err == nil
}

// closing reports whether the response must end the connection (decided
// when its head goes out).
// closing says whether the connection ends after this response; asked
// says the response's Connection field has close.
func (c *conn) closing(asked bool) bool {
	return c.reqClose || c.srv.shutting.Load() || asked
}

// sendContinue answers Expect: 100-continue at the body's first read
// (which may be in a goroutine of the handler's: cmu orders it with the
// response head).
func (c *conn) sendContinue() {
	if !c.expect {
		return
	}
	c.cmu.Lock()
	defer c.cmu.Unlock()
	if c.continueSent || c.headSent {
		return
	}
	c.continueSent = true
	c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	c.res.fail(c.bw.Flush())
}

// watch arms the background read that cancels x when the client goes
// away, to start watchDelay from now (watchNow).
func (c *conn) watch(x *reqCtx) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.watchOK || c.ctx != x || c.watchAsked {
		return
	}
	c.watchAsked = true
	if c.watchTimer == nil {
		c.watchTimer = time.AfterFunc(watchDelay, c.watchNow)
	} else {
		c.watchTimer.Reset(watchDelay)
	}
}

// watchNow is the watch timer: the wait has lasted watchDelay, so the
// background read starts, now if the request's body has been read, else
// at its end. A timer of a request that has ended does nothing.
func (c *conn) watchNow() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.watchOK || !c.watchAsked {
		return
	}
	if !c.bodyRead {
		c.watchPending = true
		return
	}
	c.startWatch()
}

// startWatch starts the background read; wmu is held.
func (c *conn) startWatch() {
	if c.br.Buffered() > 0 {
		return // the client's next request is here already
	}
	x := c.ctx
	c.cr.start(func(err error) { x.cancel(context.Canceled) })
}

// bodyDone is called when the request body was read to its end.
func (c *conn) bodyDone() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.bodyRead = true
	if c.watchPending && c.watchOK {
		c.watchPending = false
		c.startWatch()
	}
}

// refuse hands a head the receive step refused to the handler as a
// placeholder request whose context carries the refusal (Check answers
// it: receive.WithRejection), and ends the connection after it, so the
// answer follows any earlier pipelined response in order.
func (c *conn) refuse(e *receive.Error) {
	p := &parsed{method: "EDGECONFORM-REFUSED", target: "/refused", proto: "HTTP/1.1", major: 1, minor: 1,
		url: &url.URL{Path: "/refused"}, header: http.Header{"Connection": {"close"}}, host: "refused.invalid", close: true}
	req := c.newRequest(p)
	c.ctx.Context = receive.WithRejection(c.base, e)
	c.res.close = true
	if _, ok := c.srv.Handler.(receive.Checking); ok {
		c.run(req)
	} else {
		c.srv.log().Info("client request refused", "status", e.Status, "reason", e.Reason, "remote", c.remote)
		receive.Answer(c.res, req, e)
	}
	c.finishRequest()
	c.lingerClose()
}

// protoAnswer answers a head net/http would refuse, as net/http does
// (text/plain, Connection: close), and ends the connection.
func (c *conn) protoAnswer(e *protoError) {
	text := http.StatusText(e.status)
	body := e.msg
	if e.status == http.StatusBadRequest {
		body = "400 Bad Request: " + e.msg
	}
	c.srv.log().Debug("h1serve: request refused", "status", e.status, "reason", e.msg, "remote", c.remote)
	c.bw.WriteString("HTTP/1.1 " + itoa(e.status) + " " + text + "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" + body)
	_ = c.bw.Flush()
	c.lingerClose()
}

// lingerClose half-closes after an error answer and reads what the client
// still sends for a moment, so that closing with unread bytes does not
// reset the connection before the client read the answer.
func (c *conn) lingerClose() {
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok && tc.CloseWrite() == nil {
		_ = c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, maxDrain))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
