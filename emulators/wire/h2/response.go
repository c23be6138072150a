package h2

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// respBufSize is how much body a response buffers before sending DATA.
const respBufSize = 16 << 10

// responseWriter is the wire.ResponseWriter of one stream. Its methods are
// called from the handler goroutine; BodyBytes may be called from anywhere.
type responseWriter struct {
	st     *stream
	isHead bool
	header http.Header

	status      int  // set by the first WriteHeader
	wroteHeader bool // status fixed
	sentHeader  bool // HEADERS frame written
	aborted     bool
	buf         []byte // body not yet sent
	bodyBytes   atomic.Int64
}

var _ wire.ResponseWriter = (*responseWriter)(nil)

func newResponseWriter(st *stream, isHead bool) *responseWriter {
	return &responseWriter{st: st, isHead: isHead, header: make(http.Header)}
}

// Header is the response header; changes after the HEADERS frame was sent
// have no effect, except for declared trailers.
func (rw *responseWriter) Header() http.Header { return rw.header }

// WriteHeader fixes the status code; the first call wins. An informational
// status (1xx other than 101) is sent at once as an interim response with
// the header fields set so far, and does not fix the status.
func (rw *responseWriter) WriteHeader(code int) {
	if rw.wroteHeader || rw.aborted {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		if err := rw.sendInterim(code); err != nil {
			rw.st.c.log.Debug("h2 interim response not sent", "stream", rw.st.id, "err", err)
		}
		return
	}
	rw.status = code
	rw.wroteHeader = true
}

// Write buffers or sends body bytes; it implies WriteHeader(200). On HEAD
// requests the bytes are discarded.
func (rw *responseWriter) Write(p []byte) (int, error) {
	if rw.aborted {
		return 0, wire.ErrAborted
	}
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.isHead {
		return len(p), nil
	}
	if len(rw.buf)+len(p) <= respBufSize {
		rw.buf = append(rw.buf, p...) // grows as needed: most bodies are small
		rw.bodyBytes.Add(int64(len(p)))
		return len(p), nil
	}
	return rw.writeLarge(p)
}

// writeLarge sends the buffer topped up from p, then the rest of p directly
// or buffered.
func (rw *responseWriter) writeLarge(p []byte) (int, error) {
	written := 0
	if len(rw.buf) > 0 {
		k := respBufSize - len(rw.buf)
		rw.buf = append(rw.buf, p[:k]...)
		if err := rw.sendBuffered(); err != nil {
			return 0, err
		}
		written, p = k, p[k:]
		rw.bodyBytes.Add(int64(k))
	}
	if len(p) < respBufSize {
		rw.buf = append(rw.buf, p...)
		rw.bodyBytes.Add(int64(len(p)))
		return written + len(p), nil
	}
	n, err := rw.send(p, false)
	rw.bodyBytes.Add(int64(n))
	return written + n, err
}

// Flush sends the response header (implying 200) and buffered body now.
func (rw *responseWriter) Flush() error {
	if rw.aborted {
		return wire.ErrAborted
	}
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	if err := rw.sendBuffered(); err != nil {
		return err
	}
	return rw.st.c.w.flush()
}

// FlushError is Flush, for http.ResponseController.
func (rw *responseWriter) FlushError() error { return rw.Flush() }

// BodyBytes is the number of body bytes accepted by Write so far (none on
// HEAD requests).
func (rw *responseWriter) BodyBytes() int64 { return rw.bodyBytes.Load() }

// Abort ends the exchange abnormally after sending what was written: the
// header if WriteHeader or Write was called, and buffered body bytes.
func (rw *responseWriter) Abort(kind wire.AbortKind, code uint32) error {
	if rw.aborted {
		return wire.ErrAborted
	}
	switch kind {
	case wire.AbortRSTStream, wire.AbortGoAway, wire.AbortClose, wire.AbortReset:
	default:
		return wire.ErrUnsupported
	}
	rw.aborted = true
	if rw.wroteHeader {
		if err := rw.sendBuffered(); err != nil {
			rw.st.c.log.Debug("h2 flush before abort", "stream", rw.st.id, "err", err)
		}
	}
	c := rw.st.c
	switch kind {
	case wire.AbortRSTStream:
		return c.resetStream(rw.st, http2.ErrCode(code))
	case wire.AbortGoAway:
		c.goAway(http2.ErrCode(code), fmt.Sprintf("aborted: goaway %v", http2.ErrCode(code)))
		return nil
	case wire.AbortClose:
		return c.abortConn("aborted: close", wire.CloseConn)
	default:
		return c.abortConn("aborted: reset", wire.ResetConn)
	}
}

// finish completes the response after the handler returned: the header if
// not yet sent, buffered body, trailers, END_STREAM.
func (rw *responseWriter) finish() error {
	if rw.aborted {
		return nil
	}
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	_, err := rw.send(rw.buf, true)
	rw.buf = nil
	return err
}

// sendBuffered sends the header if not yet sent and the buffered body.
func (rw *responseWriter) sendBuffered() error {
	if len(rw.buf) == 0 && rw.sentHeader {
		return nil
	}
	_, err := rw.send(rw.buf, false)
	rw.buf = rw.buf[:0]
	return err
}

// send writes the HEADERS frame if not yet sent, then p as DATA within the
// flow-control windows; with end it ends the stream (with trailers when
// declared). It returns how many bytes of p were sent.
func (rw *responseWriter) send(p []byte, end bool) (int, error) {
	st, c := rw.st, rw.st.c
	var trailers []hpack.HeaderField
	if end {
		trailers = rw.trailerFields()
	}
	endData := end && len(trailers) == 0
	sent := 0
	if !rw.sentHeader {
		endHeaders := endData && len(p) == 0
		// With body to follow, the header goes out with the first DATA.
		unflushed := len(p) > 0
		mode := flushSoon
		if unflushed {
			mode = noFlush
		}
		if err := c.writeHeaders(st, rw.headerFields(), endHeaders, mode); err != nil {
			return 0, err
		}
		rw.sentHeader = true
		if endHeaders {
			return 0, nil
		}
		if unflushed {
			defer func() {
				if sent == 0 { // no DATA took the header along
					_ = c.w.flush()
				}
			}()
		}
	}
	for len(p) > 0 {
		n, maxFrame, err := c.reserve(st, len(p))
		if err != nil {
			return sent, err
		}
		last := endData && n == len(p)
		if err := c.writeData(st, p[:n], last, maxFrame); err != nil {
			return sent, err
		}
		sent, p = sent+n, p[n:]
	}
	switch {
	case endData && sent == 0:
		return 0, c.writeData(st, nil, true, readFrameSize)
	case len(trailers) > 0:
		return sent, c.writeHeaders(st, trailers, true, flushSoon)
	}
	return sent, nil
}

// sendInterim sends a 1xx response with the header fields set so far.
func (rw *responseWriter) sendInterim(code int) error {
	if rw.sentHeader {
		return nil
	}
	rw.status = code
	fields := rw.headerFields()
	rw.status = 0
	return rw.st.c.writeHeaders(rw.st, fields, false, flushSoon)
}

// headerFields is the HEADERS block: :status, then the handler's fields
// lower-cased and sorted by name, values in order, minus the
// connection-specific fields HTTP/2 forbids and trailer declarations made
// with http.TrailerPrefix.
func (rw *responseWriter) headerFields() []hpack.HeaderField {
	fields := []hpack.HeaderField{{Name: ":status", Value: strconv.Itoa(rw.status)}}
	return appendFields(fields, rw.header, func(key string) bool {
		return !strings.HasPrefix(key, http.TrailerPrefix) && !isConnectionSpecific(strings.ToLower(key))
	})
}

// trailerFields are the trailers to send: values of the keys the Trailer
// header declared, and keys set with http.TrailerPrefix.
func (rw *responseWriter) trailerFields() []hpack.HeaderField {
	declared := make(map[string]bool)
	for _, v := range rw.header["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			declared[http.CanonicalHeaderKey(strings.TrimSpace(k))] = true
		}
	}
	trailers := make(http.Header)
	for k, vv := range rw.header {
		switch {
		case strings.HasPrefix(k, http.TrailerPrefix):
			name := strings.TrimPrefix(k, http.TrailerPrefix)
			trailers[name] = append(trailers[name], vv...)
		case declared[k] && len(vv) > 0:
			trailers[k] = append(trailers[k], vv...)
		}
	}
	if len(trailers) == 0 {
		return nil
	}
	return appendFields(nil, trailers, func(key string) bool { return !isConnectionSpecific(strings.ToLower(key)) })
}

// appendFields appends h's fields whose key passes keep, names lower-cased,
// sorted by name.
func appendFields(fields []hpack.HeaderField, h http.Header, keep func(string) bool) []hpack.HeaderField {
	keys := make([]string, 0, len(h))
	for k := range h {
		if keep(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	for _, k := range keys {
		name := strings.ToLower(k)
		for _, v := range h[k] {
			fields = append(fields, hpack.HeaderField{Name: name, Value: v})
		}
	}
	return fields
}

// isConnectionSpecific reports the response fields HTTP/2 forbids.
func isConnectionSpecific(name string) bool {
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// writeHeaders writes a HEADERS block on st unless the stream is closed.
func (c *conn) writeHeaders(st *stream, fields []hpack.HeaderField, endStream bool, mode flushMode) error {
	c.mu.Lock()
	err := c.writableLocked(st)
	maxFrame := c.peerMaxFrame
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.w.write(mode, func(fr *http2.Framer) error {
		return c.w.headersLocked(fr, st.id, fields, endStream, maxFrame)
	})
}

// writeData writes p (window already reserved) as DATA frames on st and
// flushes.
func (c *conn) writeData(st *stream, p []byte, endStream bool, maxFrame uint32) error {
	if len(p) == 0 {
		c.mu.Lock()
		err := c.writableLocked(st)
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return c.w.write(flushSoon, func(fr *http2.Framer) error {
		return dataLocked(fr, st.id, p, endStream, maxFrame)
	})
}
