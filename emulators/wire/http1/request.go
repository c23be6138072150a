package http1

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/fault"
	"github.com/edgeconform/edgeconform/emulators/wire"
)

// incoming is a request head as read from the connection.
type incoming struct {
	req    *http.Request
	fields []wire.HeaderField
}

// badRequestError is a request the server answers with code and then closes
// the connection.
type badRequestError struct {
	code int
	why  string
}

func (e *badRequestError) Error() string { return e.why }

func badRequest(format string, args ...any) *badRequestError {
	return &badRequestError{code: http.StatusBadRequest, why: fmt.Sprintf(format, args...)}
}

// incompleteHeadError is a read error after part of a request head arrived.
type incompleteHeadError struct{ err error }

func (e *incompleteHeadError) Error() string { return "incomplete request head: " + e.err.Error() }
func (e *incompleteHeadError) Unwrap() error { return e.err }

// readRequest reads the next request head, waiting at most the idle timeout
// for all of it.
func (cc *conn) readRequest() (*incoming, error) {
	_ = cc.c.SetReadDeadline(time.Now().Add(cc.srv.idleTimeout()))
	if err := cc.skipEmptyLines(); err != nil {
		return nil, err
	}
	head, err := cc.peekHead()
	if err != nil {
		return nil, err
	}
	fields, err := parseFields(head)
	if err != nil {
		return nil, err
	}
	req, err := http.ReadRequest(cc.br)
	if err != nil {
		return nil, badRequest("%s", shorten(err.Error()))
	}
	if err := checkRequest(req, fields); err != nil {
		return nil, err
	}
	_ = cc.c.SetReadDeadline(time.Time{})
	req.RemoteAddr = addrString(cc.info.Peer)
	req.TLS = cc.tlsState
	return &incoming{req: req, fields: fields}, nil
}

// skipEmptyLines drops CR and LF bytes before a request line (RFC 9112
// section 2.2), at most a head's worth.
func (cc *conn) skipEmptyLines() error {
	for skipped := 0; ; skipped++ {
		b, err := cc.br.Peek(1)
		if err != nil {
			if skipped > 0 {
				return &incompleteHeadError{err}
			}
			return err
		}
		if b[0] != '\r' && b[0] != '\n' {
			return nil
		}
		if skipped >= cc.br.Size() {
			return badRequest("only empty lines")
		}
		_, _ = cc.br.Discard(1)
	}
}

// peekHead returns the buffered request head, up to and including the empty
// line that ends it, without consuming it.
func (cc *conn) peekHead() ([]byte, error) {
	from := 0
	for {
		avail := cc.br.Buffered()
		buf, _ := cc.br.Peek(avail)
		if end := headEnd(buf, from); end >= 0 {
			return buf[:end], nil
		}
		if avail >= cc.br.Size() {
			return nil, &badRequestError{
				code: http.StatusRequestHeaderFieldsTooLarge,
				why:  fmt.Sprintf("request head over %d bytes", cc.br.Size()),
			}
		}
		from = max(0, avail-2)
		if _, err := cc.br.Peek(avail + 1); err != nil {
			return nil, &incompleteHeadError{err}
		}
	}
}

// headEnd returns the offset just past the empty line ending a head in buf
// (CRLF CRLF, tolerating bare LF), searching from offset from, or -1.
func headEnd(buf []byte, from int) int {
	for i := from; i < len(buf); i++ {
		if buf[i] != '\n' {
			continue
		}
		switch {
		case i+1 < len(buf) && buf[i+1] == '\n':
			return i + 2
		case i+2 < len(buf) && buf[i+1] == '\r' && buf[i+2] == '\n':
			return i + 3
		}
	}
	return -1
}

// parseFields returns the header fields of head (request line first, empty
// line last) in order, names as sent and values trimmed.
func parseFields(head []byte) ([]wire.HeaderField, error) {
	lines := bytes.Split(head, []byte("\n"))
	var fields []wire.HeaderField
	for _, line := range lines[1:] {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, badRequest("obsolete line folding in header field")
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, badRequest("header line without colon: %q", shorten(string(line)))
		}
		if !validFieldName(name) {
			return nil, badRequest("invalid header field name %q", shorten(string(name)))
		}
		value = bytes.Trim(value, " \t")
		if !validFieldValue(value) {
			return nil, badRequest("invalid value in header field %q", name)
		}
		fields = append(fields, wire.HeaderField{Name: string(name), Value: string(value)})
	}
	return fields, nil
}

// checkRequest applies what http.ReadRequest leaves to the server.
func checkRequest(req *http.Request, fields []wire.HeaderField) *badRequestError {
	if req.ProtoMajor != 1 {
		return &badRequestError{code: http.StatusHTTPVersionNotSupported, why: "unsupported protocol version " + req.Proto}
	}
	if req.ProtoMinor >= 1 && !hasField(fields, "Host") {
		return badRequest("missing Host header")
	}
	return nil
}

func hasField(fields []wire.HeaderField, name string) bool {
	for _, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

// validFieldName reports whether name is an RFC 9110 token.
func validFieldName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validFieldValue rejects control characters other than HTAB.
func validFieldValue(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func shorten(s string) string {
	const limit = 120
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}

// expectsContinue reports whether the client waits for 100 Continue before
// sending the body.
func expectsContinue(req *http.Request) bool {
	if !req.ProtoAtLeast(1, 1) || req.ContentLength == 0 {
		return false
	}
	for _, v := range req.Header.Values("Expect") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "100-continue") {
				return true
			}
		}
	}
	return false
}

// requestBody is the Body handlers see. It sends 100 Continue on the first
// read when the client asked for it, copies trailers to the handler's request
// at EOF, starts the background read once the body is consumed, and leaves
// the rest of the body to the server after the handler returns (Close does
// not read).
type requestBody struct {
	cc     *conn
	resp   *response
	rc     io.ReadCloser // the body as framed by http.ReadRequest
	orig   *http.Request // what rc fills Trailer on
	target *http.Request // the handler's copy

	needContinue bool // the client waits for 100 Continue, not sent yet
	eof          bool
	err          error // a read error other than EOF
	closed       bool
	consumed     int64
}

func newRequestBody(cc *conn, orig, target *http.Request) *requestBody {
	b := &requestBody{cc: cc, rc: orig.Body, orig: orig, target: target}
	b.eof = orig.Body == nil || orig.Body == http.NoBody
	b.needContinue = !b.eof && expectsContinue(orig)
	return b
}

var errBodyClosed = errors.New("http1: read on closed request body")

func (b *requestBody) Read(p []byte) (int, error) {
	switch {
	case b.closed:
		return 0, errBodyClosed
	case b.eof:
		return 0, io.EOF
	case b.err != nil:
		return 0, b.err
	}
	if b.needContinue {
		if err := b.sendContinue(); err != nil {
			return 0, err
		}
	}
	n, err := b.rc.Read(p)
	b.consumed += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
		b.target.Trailer = b.orig.Trailer
		b.cc.startBackgroundRead()
	case err != nil:
		b.err = fmt.Errorf("reading request body: %w", err)
		err = b.err
	}
	return n, err
}

// Close marks the body closed; the server drains it after the handler.
func (b *requestBody) Close() error {
	b.closed = true
	return nil
}

// sendContinue sends 100 Continue unless a final response is under way.
func (b *requestBody) sendContinue() error {
	b.needContinue = false
	if b.resp.wroteHeader || b.resp.aborted != fault.Pending {
		return nil
	}
	b.cc.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	if err := b.cc.bw.Flush(); err != nil {
		b.cc.failWrite(err)
		return fmt.Errorf("sending 100 Continue: %w", err)
	}
	return nil
}

// awaitingContinue reports whether the client still waits for 100 Continue
// and so may never send the body.
func (b *requestBody) awaitingContinue() bool { return b.needContinue && !b.eof }

// remaining is how many declared body bytes are still unread, -1 if unknown.
func (b *requestBody) remaining() int64 {
	if b.eof {
		return 0
	}
	if b.orig.ContentLength < 0 {
		return -1
	}
	return b.orig.ContentLength - b.consumed
}
