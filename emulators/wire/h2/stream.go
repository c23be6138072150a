package h2

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// stream is one request/response exchange.
type stream struct {
	c      *conn
	id     uint32
	ctx    context.Context
	cancel context.CancelCauseFunc
	body   *requestBody // nil when the request has no body

	// reader goroutine only
	declared int64 // declared request body length, -1 if unknown
	received int64 // request body bytes received

	// guarded by c.mu
	sendWin     int64
	remoteEnded bool  // END_STREAM received
	err         error // set when the stream is closed: nothing more is sent
}

// end cancels the request context and ends the request body with err.
func (st *stream) end(err error) {
	st.cancel(err)
	if st.body != nil {
		st.body.end(err, nil)
	}
}

// openStream starts a handler for a new request (reader goroutine).
func (c *conn) openStream(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	c.mu.Lock()
	c.maxStreamID = id
	ignore := c.goingAway
	// Handlers still running after their stream was reset count too, so
	// that a client resetting streams cannot pile up goroutines.
	full := c.running >= c.maxStreams
	c.mu.Unlock()
	switch {
	case ignore:
		return nil // above the last stream id of our GOAWAY
	case full:
		return streamError(id, http2.ErrCodeRefusedStream, "too many concurrent streams")
	case f.Truncated:
		c.refuseTooLarge(id, f.StreamEnded())
		return nil
	}

	st := &stream{c: c, id: id, declared: -1}
	st.ctx, st.cancel = context.WithCancelCause(c.ctx)
	req, err := c.newRequest(st.ctx, f)
	if err != nil {
		st.cancel(err)
		return streamError(id, http2.ErrCodeProtocol, err.Error())
	}
	if !f.StreamEnded() {
		st.declared = req.ContentLength
		st.body = newRequestBody(req.Request, func(incr uint32) { c.streamWindowUpdate(st, incr) })
		req.Body = st.body
	}

	c.mu.Lock()
	st.sendWin = c.peerInitWin
	st.remoteEnded = f.StreamEnded()
	c.streams[id] = st
	c.running++
	c.lastStarted = id
	if len(c.streams) == 1 {
		c.idleTimer.Stop()
	}
	c.mu.Unlock()

	c.goroutines.Add(1)
	go c.runHandler(st, req)
	return nil
}

// refuseTooLarge answers a request whose header list exceeded
// maxHeaderListSize with 431.
func (c *conn) refuseTooLarge(id uint32, ended bool) {
	fields := []hpack.HeaderField{{Name: ":status", Value: "431"}}
	c.w.enqueue(control{write: func(fr *http2.Framer) error {
		if err := c.w.headersLocked(fr, id, fields, true, readFrameSize); err != nil {
			return err
		}
		if !ended {
			return fr.WriteRSTStream(id, http2.ErrCodeNo)
		}
		return nil
	}})
}

// runHandler serves one request and completes or resets the stream.
func (c *conn) runHandler(st *stream, req *wire.Request) {
	defer c.goroutines.Done()
	rw := newResponseWriter(st, req.Method == http.MethodHead)
	if c.serveRecovered(rw, req) {
		if err := rw.finish(); err != nil {
			c.log.Debug("h2 response not completed", "stream", st.id, "err", err)
		}
	} else if !rw.aborted {
		_ = c.resetStream(st, http2.ErrCodeInternal)
	}
	if st.body != nil {
		_ = st.body.Close()
	}
	c.handlerDone(st)
}

// serveRecovered calls the handler and reports false if it panicked.
func (c *conn) serveRecovered(rw *responseWriter, req *wire.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			if p == http.ErrAbortHandler {
				return
			}
			c.log.Error("h2 handler panic", "stream", req.StreamID,
				"method", req.Method, "path", req.URL.Path,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	c.srv.handler().ServeWire(rw, req)
	return true
}

// handlerDone closes the stream after its handler returned. A client still
// sending its request body is told to stop with RST_STREAM(NO_ERROR) (RFC
// 9113, 8.1).
func (c *conn) handlerDone(st *stream) {
	c.mu.Lock()
	c.running--
	stillSending := st.err == nil && !st.remoteEnded && !c.goingAway
	c.mu.Unlock()
	c.closeStream(st, errStreamDone)
	if stillSending {
		_ = c.w.write(flushSoon, func(fr *http2.Framer) error { return fr.WriteRSTStream(st.id, http2.ErrCodeNo) })
	}
}

// resetStream closes st and sends RST_STREAM(code) from the calling
// (handler) goroutine.
func (c *conn) resetStream(st *stream, code http2.ErrCode) error {
	if !c.closeStream(st, resetError{code: code}) {
		return nil
	}
	err := c.w.write(flushSoon, func(fr *http2.Framer) error { return fr.WriteRSTStream(st.id, code) })
	if err != nil {
		return fmt.Errorf("h2: RST_STREAM: %w", err)
	}
	return nil
}

// resetStreamID handles a stream error found by the reader goroutine:
// RST_STREAM is queued and the stream, if open, is closed.
func (c *conn) resetStreamID(se http2.StreamError) {
	c.log.Debug("h2 stream error", "stream", se.StreamID, "code", se.Code, "cause", se.Cause)
	c.mu.Lock()
	st := c.streams[se.StreamID]
	if st == nil && se.StreamID%2 == 1 && se.StreamID > c.maxStreamID {
		c.maxStreamID = se.StreamID // a rejected new stream still uses its id
	}
	c.mu.Unlock()
	if st != nil {
		c.closeStream(st, resetError{code: se.Code})
	}
	c.w.enqueue(control{write: func(fr *http2.Framer) error { return fr.WriteRSTStream(se.StreamID, se.Code) }})
}

// closeStream removes st from the connection, wakes its writers, ends its
// request context and body, and re-arms the idle timer. It reports whether
// the stream was still open.
func (c *conn) closeStream(st *stream, err error) bool {
	c.mu.Lock()
	if c.streams[st.id] != st {
		c.mu.Unlock()
		return false
	}
	delete(c.streams, st.id)
	st.err = err
	c.cond.Broadcast()
	idle := len(c.streams) == 0
	if idle {
		c.idleTimer.Reset(c.idle)
	}
	peerGoAway := c.peerGoAway
	c.mu.Unlock()

	st.end(err)
	if idle && peerGoAway != "" {
		c.setReason(peerGoAway)
		_ = c.nc.Close()
	}
	return true
}

// streamWindowUpdate gives incr bytes of receive window back to the client
// (handler goroutine, as it reads the body).
func (c *conn) streamWindowUpdate(st *stream, incr uint32) {
	c.mu.Lock()
	open := st.err == nil && !st.remoteEnded && !c.goingAway
	c.mu.Unlock()
	if open {
		_ = c.w.write(flushSoon, func(fr *http2.Framer) error { return fr.WriteWindowUpdate(st.id, incr) })
	}
}
