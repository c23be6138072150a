package http1

import (
	"bufio"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/fault"
	"github.com/edgeconform/edgeconform/emulators/wire"
)

// bodyBufferSize is the response body buffer; with chunked framing each
// flush of it is one chunk.
const bodyBufferSize = 32 << 10

// framing is how the end of a response body is marked.
type framing int

const (
	framingNone    framing = iota // no body: HEAD, 1xx, 204, 304
	framingLength                 // the handler's Content-Length
	framingChunked                // chunked Transfer-Encoding added by the server
	framingClose                  // raw bytes, end marked by closing the connection
)

// response is the wire.ResponseWriter for one HTTP/1.x exchange. Like an
// http.ResponseWriter it is not safe for concurrent use.
type response struct {
	cc     *conn
	req    *http.Request
	body   *requestBody
	header http.Header

	wroteHeader bool
	status      int
	framing     framing
	discard     bool     // HEAD: accept and drop body writes
	length      int64    // declared length with framingLength
	trailers    []string // trailer names the handler declared (chunked only)
	written     int64    // body bytes accepted

	closeAfter bool   // the connection ends after this response
	closeWhy   string // why it does
	aborted    wire.AbortKind
	err        error // first write error; sticky
}

var _ wire.ResponseWriter = (*response)(nil)

func newResponse(cc *conn, req *http.Request, body *requestBody) *response {
	if cc.bodyBuf == nil {
		cc.bodyBuf = bufio.NewWriterSize(cc.bw, bodyBufferSize)
	}
	cc.bodyBuf.Reset(cc.bw)
	return &response{cc: cc, req: req, body: body, header: make(http.Header)}
}

// Header returns the header map. Changes after WriteHeader (or the first
// Write or Flush) have no effect, except for trailers.
func (w *response) Header() http.Header { return w.header }

// BodyBytes is the number of body bytes accepted so far (buffered or sent),
// framing excluded.
func (w *response) BodyBytes() int64 { return w.written }

// WriteHeader writes the response head into the send buffer. The first call
// with a final status wins. A 1xx status other than 101 is sent at once as
// an informational response, with the header fields set so far, to HTTP/1.1
// clients (and dropped for HTTP/1.0 ones).
func (w *response) WriteHeader(code int) {
	if w.wroteHeader || w.aborted != fault.Pending || w.err != nil {
		return
	}
	if code < 100 || code > 999 {
		w.cc.log.Warn("http1: invalid status code, sending 500", "code", code)
		code = http.StatusInternalServerError
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	w.chooseFraming()
	w.chooseClose()
	w.writeHead()
}

// Write sends body bytes, writing the head first if needed. It fails with
// http.ErrBodyNotAllowed when the status or method has no body (HEAD
// writes are accepted and dropped) and with http.ErrContentLength, writing
// nothing, when p would exceed the handler's Content-Length.
func (w *response) Write(p []byte) (int, error) {
	if w.aborted != fault.Pending {
		return 0, wire.ErrAborted
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	switch w.framing {
	case framingNone:
		if w.discard {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	case framingLength:
		if w.written+int64(len(p)) > w.length {
			return 0, http.ErrContentLength
		}
	}
	n, err := w.cc.bodyBuf.Write(p)
	w.written += int64(n)
	if err != nil {
		return n, w.fail(err)
	}
	return n, nil
}

// Flush sends the head and buffered body bytes to the client; with chunked
// framing the buffered bytes become one chunk.
func (w *response) Flush() error {
	if w.aborted != fault.Pending {
		return wire.ErrAborted
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.flush()
}

// Abort flushes what was written (no final chunk) and then closes the
// connection with a FIN (AbortClose) or an RST (AbortReset). The h2 kinds
// return wire.ErrUnsupported and do nothing.
func (w *response) Abort(kind wire.AbortKind, _ uint32) error {
	switch kind {
	case wire.AbortClose, wire.AbortReset:
	case wire.AbortRSTStream, wire.AbortGoAway:
		return wire.ErrUnsupported
	default:
		return fmt.Errorf("http1: unknown abort kind %q", kind)
	}
	if w.aborted != fault.Pending {
		return wire.ErrAborted
	}
	var err error
	if w.wroteHeader {
		err = w.flush()
	}
	w.aborted = kind
	if kind == wire.AbortClose {
		w.cc.closeNow()
	} else {
		w.cc.reset()
	}
	if err != nil {
		return fmt.Errorf("http1: %s abort: %w", kind, err)
	}
	return nil
}

// finish completes a response the handler returned from: head if none was
// written, buffered body, final chunk and trailers.
func (w *response) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return w.err
	}
	if err := w.cc.bodyBuf.Flush(); err != nil {
		return w.fail(err)
	}
	if w.framing == framingChunked {
		w.cc.bw.WriteString("0\r\n")
		w.writeTrailers()
		w.cc.bw.WriteString("\r\n")
	}
	if err := w.cc.bw.Flush(); err != nil {
		return w.fail(err)
	}
	if w.framing == framingLength && w.written < w.length {
		w.setClose(fmt.Sprintf("body short of Content-Length (%d of %d bytes)", w.written, w.length))
	}
	return nil
}

func (w *response) flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.cc.bodyBuf.Flush(); err != nil {
		return w.fail(err)
	}
	if err := w.cc.bw.Flush(); err != nil {
		return w.fail(err)
	}
	return nil
}

// fail records a write error: later writes return it, and the connection
// context is cancelled.
func (w *response) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("http1: writing response: %w", err)
		w.cc.failWrite(err)
	}
	return w.err
}

func (w *response) setClose(why string) {
	if !w.closeAfter {
		w.closeAfter, w.closeWhy = true, why
	}
}

// chooseFraming decides how the body's end is marked, from the status, the
// method and the framing fields the handler set.
func (w *response) chooseFraming() {
	cl := headerValues(w.header, "Content-Length")
	switch {
	case w.status < 200 || w.status == http.StatusNoContent || w.status == http.StatusNotModified:
		w.framing = framingNone
		if w.status == http.StatusSwitchingProtocols {
			w.setClose("101 Switching Protocols (no upgrade support)")
		}
	case w.req.Method == http.MethodHead:
		w.framing, w.discard = framingNone, true
	case len(headerValues(w.header, "Transfer-Encoding")) > 0:
		w.framing = framingClose
		w.setClose("handler set Transfer-Encoding")
	case len(cl) > 0:
		if n, ok := parseContentLength(cl); ok {
			w.framing, w.length = framingLength, n
		} else {
			w.framing = framingClose
			w.setClose("unparseable Content-Length")
		}
	case w.req.ProtoAtLeast(1, 1):
		w.framing = framingChunked
		w.trailers = declaredTrailers(w.header)
		w.cc.bodyBuf.Reset(chunkWriter{w.cc.bw})
	default:
		w.framing = framingClose
		w.setClose("HTTP/1.0 response without Content-Length")
	}
}

// chooseClose decides, before the head goes out, whether the connection
// ends after this response.
func (w *response) chooseClose() {
	switch {
	case w.req.Close && w.req.ProtoAtLeast(1, 1):
		w.setClose("client sent Connection: close")
	case w.req.Close:
		w.setClose("HTTP/1.0 client without keep-alive")
	case hasToken(headerValues(w.header, "Connection"), "close"):
		w.setClose("handler set Connection: close")
	case w.body.awaitingContinue():
		w.setClose("request body not requested (100-continue)")
	case w.body.remaining() > maxDrainBytes:
		w.setClose("unread request body too large")
	case w.cc.parent.Err() != nil:
		w.setClose("server shutdown")
	}
}

// writeHead writes the status line, the handler's fields exactly as set
// and the framing fields the server adds.
func (w *response) writeHead() {
	bw := w.cc.bw
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", w.status, statusText(w.status))
	writeFields(bw, w.header)
	if w.framing == framingChunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if len(headerValues(w.header, "Connection")) == 0 {
		switch {
		case w.closeAfter:
			bw.WriteString("Connection: close\r\n")
		case !w.req.ProtoAtLeast(1, 1):
			bw.WriteString("Connection: keep-alive\r\n")
		}
	}
	bw.WriteString("\r\n")
}

// writeInformational sends a 1xx response at once.
func (w *response) writeInformational(code int) {
	if !w.req.ProtoAtLeast(1, 1) {
		return
	}
	if code == http.StatusContinue {
		w.body.needContinue = false
	}
	fmt.Fprintf(w.cc.bw, "HTTP/1.1 %d %s\r\n", code, statusText(code))
	writeFields(w.cc.bw, w.header)
	w.cc.bw.WriteString("\r\n")
	if err := w.cc.bw.Flush(); err != nil {
		_ = w.fail(err)
	}
}

// writeTrailers writes the trailer fields after the final chunk: keys with
// http.TrailerPrefix, and the names the handler declared in Trailer.
func (w *response) writeTrailers() {
	bw := w.cc.bw
	for _, k := range slices.Sorted(maps.Keys(w.header)) {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			for _, v := range w.header[k] {
				bw.WriteString(name + ": " + v + "\r\n")
			}
		}
	}
	for _, name := range w.trailers {
		for _, v := range w.header.Values(name) {
			bw.WriteString(name + ": " + v + "\r\n")
		}
	}
}

// writeFields writes h in sorted key order, one line per value, keys as
// stored and values untouched. Trailer-prefixed keys are left out.
func writeFields(bw *bufio.Writer, h http.Header) {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		for _, v := range h[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
}

// headerValues returns the values of name in h under any spelling of the
// key, since handlers may set non-canonical keys directly in the map.
func headerValues(h http.Header, name string) []string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// parseContentLength accepts exactly one value of decimal digits.
func parseContentLength(values []string) (int64, bool) {
	if len(values) != 1 {
		return 0, false
	}
	s := strings.TrimSpace(values[0])
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func declaredTrailers(h http.Header) []string {
	var names []string
	for _, v := range headerValues(h, "Trailer") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

func hasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// chunkWriter frames each write as one chunk.
type chunkWriter struct{ w *bufio.Writer }

func (c chunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var size [20]byte
	c.w.Write(strconv.AppendInt(size[:0], int64(len(p)), 16))
	c.w.WriteString("\r\n")
	c.w.Write(p)
	if _, err := c.w.WriteString("\r\n"); err != nil {
		return 0, err
	}
	return len(p), nil
}
