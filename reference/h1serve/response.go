package h1serve

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// bodyBufSize is how much of a body is held back before the head goes
// out: a handler that ends within it gets a Content-Length and its
// response goes out in one write.
const bodyBufSize = 4 << 10

// response is the http.ResponseWriter of one request.
type response struct {
	c       *conn
	req     *http.Request
	header  http.Header
	status  int
	wrote   bool  // WriteHeader called (with a final status)
	sent    bool  // the head is in the write buffer
	cl      int64 // the handler's Content-Length, -1 for none
	written int64
	chunked bool
	noBody  bool // HEAD, 1xx, 204, 304
	close   bool // close the connection after this response
	err     error
	buf     []byte // body bytes before the head goes out
	// fields, when set (WriteFields), are the head's fields instead of
	// header's, with fieldValue as the value of the one they lack.
	fields     *Fields
	fieldValue string
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wrote || w.err != nil {
		return
	}
	if code < 100 || code > 999 { // net/http panics; a handler bug is a 500 here
		w.c.srv.log().Error("h1serve: handler wrote an invalid status code; answered 500", "code", code)
		code = http.StatusInternalServerError
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.informational(code)
		return
	}
	w.wrote, w.status = true, code
	w.cl = -1
	if v := w.header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
			w.cl = n
		} else {
			w.c.srv.log().Warn("h1serve: handler set an invalid Content-Length; ignored", "content_length", v)
			w.header.Del("Content-Length")
		}
	}
	w.noBody = !bodyAllowed(code) || w.req.Method == http.MethodHead
}

// informational writes a 1xx head at once, with the header as it is.
func (w *response) informational(code int) {
	bw := w.c.bw
	bw.WriteString(statusLine(w.req.ProtoMinor, code))
	w.writeFields()
	bw.WriteString("\r\n")
	w.fail(bw.Flush())
}

func bodyAllowed(code int) bool {
	return !(code >= 100 && code < 200 || code == http.StatusNoContent || code == http.StatusNotModified)
}

func (w *response) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.cl >= 0 && w.written+int64(len(p)) > w.cl {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.req.Method == http.MethodHead {
		return len(p), nil // eaten, counted (a HEAD's Content-Length)
	}
	if !w.sent && len(w.buf)+len(p) <= bodyBufSize {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if !w.sent {
		w.writeHead(false, p)
		w.writeBody(w.buf)
		w.buf = w.buf[:0]
	}
	w.writeBody(p)
	return len(p), w.err
}

// WriteBuffers implements BuffersWriter: bufs' bytes as Write of each in
// turn would send them, in one gathered write with the head when the
// response declared its length; otherwise (no Content-Length, HEAD, a
// body that fits the hold-back buffer) it is Write of each.
func (w *response) WriteBuffers(bufs [][]byte) (int64, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	var total int64
	for _, b := range bufs {
		total += int64(len(b))
	}
	if w.err != nil || w.noBody || w.chunked || w.cl < 0 || w.written+total > w.cl ||
		!w.sent && int64(len(w.buf))+total <= bodyBufSize {
		var n int64
		for _, b := range bufs {
			m, err := w.Write(b)
			n += int64(m)
			if err != nil {
				return n, err
			}
		}
		return n, nil
	}
	w.written += total
	if !w.sent {
		var first []byte // for sniffing the type, as Write would
		for _, b := range bufs {
			if len(b) > 0 {
				first = b
				break
			}
		}
		w.writeHead(false, first)
		w.writeBody(w.buf)
		w.buf = w.buf[:0]
	}
	n, err := w.c.bw.WriteBuffers(bufs)
	w.fail(err)
	return n, w.err
}

func (w *response) WriteString(s string) (int, error) {
	return w.Write([]byte(s)) // the edge writes bytes; this is for io.WriteString
}

// writeBody writes p in the response's framing.
func (w *response) writeBody(p []byte) {
	if len(p) == 0 || w.err != nil {
		return
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		_, err := bw.WriteString("\r\n")
		w.fail(err)
		return
	}
	_, err := bw.Write(p)
	w.fail(err)
}

// fail records a write error: the client is gone, so the request's
// context is cancelled and the connection closed after the handler.
func (w *response) fail(err error) {
	if err != nil && w.err == nil {
		w.err, w.close = err, true
		w.c.ctx.cancel(err)
	}
}

func (w *response) Flush() { _ = w.FlushError() }

// FlushError sends the head (chunked or close-delimited unless the
// handler set a Content-Length) and what is buffered.
func (w *response) FlushError() error {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return w.err
	}
	if !w.sent {
		w.writeHead(false, nil)
		w.writeBody(w.buf)
		w.buf = w.buf[:0]
	}
	w.fail(w.c.bw.Flush())
	return w.err
}

// finish ends the response after the handler returned.
func (w *response) finish() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return
	}
	if !w.sent {
		w.writeHead(true, nil)
		w.writeBody(w.buf)
		w.buf = w.buf[:0]
	}
	switch {
	case w.chunked:
		_, err := w.c.bw.WriteString("0\r\n\r\n")
		w.fail(err)
	case w.cl >= 0 && w.written != w.cl && !w.noBody:
		// Fewer bytes than the handler's Content-Length: the client must
		// not take the short body for complete, nor the next bytes as a
		// response.
		w.close = true
	}
	w.fail(w.c.bw.Flush())
}

// writeHead puts the status line and fields into the write buffer,
// deciding the framing; done means the handler has returned. The type is
// sniffed from the buffered body, or next (the write that overflowed it).
func (w *response) writeHead(done bool, next []byte) {
	w.sent = true
	w.c.cmu.Lock()
	defer w.c.cmu.Unlock()
	w.c.headSent = true
	h := w.header
	hasType, hasTE, hasDate := false, false, false
	connClose, connKeep := false, false
	if f := w.fields; f != nil {
		hasType, hasTE, hasDate, connClose, connKeep = f.contentType, f.te, f.date, f.close, f.keep
	} else {
		_, hasType = h["Content-Type"]
		_, hasDate = h["Date"]
		hasTE = h.Get("Transfer-Encoding") != ""
		connClose, connKeep = hasToken(h["Connection"], "close"), hasToken(h["Connection"], "keep-alive")
	}
	if w.c.closing(connClose) {
		w.close = true
	}
	bw := w.c.bw
	bw.WriteString(statusLine(w.req.ProtoMinor, w.status))
	if !w.noBody || w.req.Method == http.MethodHead && bodyAllowed(w.status) {
		sniff := w.buf
		if len(sniff) == 0 {
			sniff = next
		}
		if !hasType && len(sniff) > 0 && !hasTE {
			bw.WriteString("Content-Type: ")
			bw.WriteString(http.DetectContentType(sniff))
			bw.WriteString("\r\n")
		}
	}
	switch {
	case w.noBody && w.req.Method != http.MethodHead || w.cl >= 0:
	case done && (w.req.Method != http.MethodHead || w.written > 0):
		w.cl = w.written
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(w.cl, 10))
		bw.WriteString("\r\n")
	case w.req.Method == http.MethodHead:
	case w.req.ProtoMinor >= 1:
		w.chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	default:
		w.close = true // HTTP/1.0: the end of the body is the connection's
	}
	if !hasDate {
		bw.WriteString("Date: ")
		bw.Write(w.c.srv.date())
		bw.WriteString("\r\n")
	}
	switch {
	case w.close && !connClose:
		bw.WriteString("Connection: close\r\n")
	case !w.close && w.req.ProtoMinor == 0 && !connKeep:
		bw.WriteString("Connection: keep-alive\r\n")
	}
	if f := w.fields; f != nil {
		bw.Write(f.before)
		writeField(bw, f.name, w.fieldValue)
		bw.Write(f.after)
	} else {
		w.writeFields()
	}
	bw.WriteString("\r\n")
}

// writeFields writes the handler's fields, sorted, skipping invalid names
// and the framing fields this writer owns, values' CR and LF as spaces.
func (w *response) writeFields() {
	keys := w.c.keys[:0]
	for k := range w.header {
		keys = append(keys, k)
	}
	bw := w.c.bw
	for _, k := range sortedFields(keys) {
		if k == "Content-Length" && (w.noBody && w.req.Method != http.MethodHead && w.status != http.StatusNotModified) {
			continue
		}
		for _, v := range w.header[k] {
			writeField(bw, k, v)
		}
	}
	w.c.keys = keys[:0]
}

// writeField writes the field line "k: v", v trimmed, its CR and LF as
// spaces.
func writeField(out interface{ WriteString(string) (int, error) }, k, v string) {
	if strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, '\n') >= 0 { // not ContainsAny: issue #14, 0.6 us a response
		v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
	}
	out.WriteString(k)
	out.WriteString(": ")
	out.WriteString(strings.TrimSpace(v))
	out.WriteString("\r\n")
}

// sortedFields sorts keys in place and returns those writeFields writes:
// not Transfer-Encoding (the writer's own), no invalid name.
func sortedFields(keys []string) []string {
	slices.Sort(keys)
	out := keys[:0]
	for _, k := range keys {
		if k != "Transfer-Encoding" && httpguts.ValidHeaderFieldName(k) {
			out = append(out, k)
		}
	}
	return out
}

// statusLine is "HTTP/1.x code text\r\n".
func statusLine(minor, code int) string {
	switch {
	case code == http.StatusOK && minor == 0:
		return "HTTP/1.0 200 OK\r\n"
	case code == http.StatusOK:
		return "HTTP/1.1 200 OK\r\n"
	}
	proto := "HTTP/1.1 "
	if minor == 0 {
		proto = "HTTP/1.0 "
	}
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	return proto + strconv.Itoa(code) + " " + text + "\r\n"
}
