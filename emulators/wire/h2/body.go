package h2

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"golang.org/x/net/http2"
)

// requestBody is a request's Body: a pipe from the reader goroutine (DATA
// frames) to the handler, bounded by the stream's receive window. Window is
// returned to the client (stream WINDOW_UPDATE) as the handler reads, and
// at once for data the handler will never see (padding, a closed body).
type requestBody struct {
	req    *http.Request
	update func(incr uint32) // sends a WINDOW_UPDATE on the stream; may block

	mu      sync.Mutex
	cond    sync.Cond
	buf     bytes.Buffer
	err     error       // io.EOF after END_STREAM, or why the stream ended
	trailer http.Header // trailers that came with END_STREAM
	closed  bool        // the handler closed the body: data is discarded
	window  int64       // bytes the client may still send on the stream
	unacked int64       // bytes read and not yet returned to the client
}

func newRequestBody(req *http.Request, update func(uint32)) *requestBody {
	b := &requestBody{req: req, update: update, window: initialStreamWindow}
	b.cond.L = &b.mu
	return b
}

// receive buffers one DATA frame's data; flowLen is the frame's
// flow-controlled length (data plus padding). It returns window to give
// back at once.
func (b *requestBody) receive(streamID uint32, data []byte, flowLen int64) (uint32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if flowLen > b.window {
		return 0, streamError(streamID, http2.ErrCodeFlowControl, "stream receive window exceeded")
	}
	if b.closed || b.err != nil {
		return uint32(flowLen), nil // nobody will read it
	}
	b.window -= int64(len(data))
	b.buf.Write(data)
	b.cond.Signal()
	return uint32(flowLen - int64(len(data))), nil
}

// end marks the end of the body: io.EOF (with any trailers) after
// END_STREAM, or the error that ended the stream. Only the first call counts.
func (b *requestBody) end(err error, trailer http.Header) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
		b.trailer = trailer
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

// Read reads the body. It returns io.EOF after the last byte; trailers are
// in Request.Trailer by then.
func (b *requestBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b.mu.Lock()
	for b.buf.Len() == 0 && b.err == nil && !b.closed {
		b.cond.Wait()
	}
	var (
		n    int
		err  error
		incr uint32
	)
	switch {
	case b.closed:
		err = errBodyClosed
	case b.buf.Len() > 0:
		n, _ = b.buf.Read(p)
		incr = b.consumed(n)
	default:
		err = b.err
		if err == io.EOF {
			b.mergeTrailer()
		}
	}
	b.mu.Unlock()
	if incr > 0 {
		b.update(incr)
	}
	return n, err
}

// consumed accounts for n bytes read and reports the window to give back
// now. b.mu must be held.
func (b *requestBody) consumed(n int) uint32 {
	b.unacked += int64(n)
	if b.err != nil || b.unacked < streamUpdateThreshold {
		return 0 // the client sends no more, or collecting
	}
	incr := b.unacked
	b.unacked = 0
	b.window += incr
	return uint32(incr)
}

// mergeTrailer copies received trailers into Request.Trailer. It runs in the
// goroutine that reads the body to its end, so the handler sees them without
// a data race. b.mu must be held.
func (b *requestBody) mergeTrailer() {
	if len(b.trailer) == 0 {
		return
	}
	if b.req.Trailer == nil {
		b.req.Trailer = make(http.Header, len(b.trailer))
	}
	for k, vv := range b.trailer {
		b.req.Trailer[k] = append(b.req.Trailer[k], vv...)
	}
	b.trailer = nil
}

// Close discards the rest of the body. Window for unread data is given back
// so that the client can finish sending.
func (b *requestBody) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	var incr int64
	if b.err == nil {
		incr = int64(b.buf.Len()) + b.unacked
		b.window += incr
	}
	b.unacked = 0
	b.buf = bytes.Buffer{}
	b.cond.Broadcast()
	b.mu.Unlock()
	if incr > 0 {
		b.update(uint32(incr))
	}
	return nil
}
