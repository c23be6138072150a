package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Response limits (EXT: net/http's Transport allows 10 MiB of response head
// by default and 5 informational responses; we allow 1 MiB, the server's
// http.DefaultMaxHeaderBytes, and 5).
const (
	maxResponseHeadBytes = 1 << 20
	maxInformational     = 5
)

// ProtocolError is a response that is not valid HTTP/1.1: the attempt fails
// with http_protocol_error, not a connect failure (a 502 upstream).
type ProtocolError struct{ What string }

func (e *ProtocolError) Error() string { return "malformed HTTP/1.1 response: " + e.What }

func protoErr(format string, args ...any) error {
	return &ProtocolError{What: fmt.Sprintf(format, args...)}
}

// readResponse reads the final response head (skipping 100 Continue, 103
// Early Hints and other informational responses, at most maxInformational)
// and sets up its body.
func (pc *h1Conn) readResponse(ctx context.Context, req *http.Request, stop func() bool, streaming bool) (*http.Response, error) {
	for n := 0; ; n++ {
		resp, err := pc.readHead()
		if err != nil {
			return nil, err
		}
		switch code := resp.StatusCode; {
		case code == http.StatusSwitchingProtocols:
			return nil, protoErr("101 Switching Protocols, but no upgrade was asked for")
		case code < 200 && n == maxInformational:
			return nil, protoErr("more than %d informational (1xx) responses", maxInformational)
		case code < 200:
			continue
		}
		resp.Request = req
		resp.TLS = pc.tls
		if err := pc.frame(ctx, resp, req, stop, streaming); err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// readBlock reads lines up to and including an empty one (a response head,
// or a chunked body's trailer section) into pc.head, at most
// maxResponseHeadBytes; what is the first line's.
func (pc *h1Conn) readBlock(what string) ([]byte, error) {
	if cap(pc.head) > 64<<10 {
		pc.head = nil // do not keep a huge head's buffer
	}
	pc.head = pc.head[:0]
	lineStart := 0
	for {
		frag, err := pc.br.ReadSlice('\n')
		if len(pc.head)+len(frag) > maxResponseHeadBytes {
			return nil, protoErr("%s larger than %d bytes", what, maxResponseHeadBytes)
		}
		pc.head = append(pc.head, frag...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(pc.head) == 0:
			return nil, fmt.Errorf("connection closed before the %s: %w", what, io.EOF)
		case err == io.EOF:
			return nil, fmt.Errorf("connection closed in the %s: %w", what, io.ErrUnexpectedEOF)
		case err != nil:
			return nil, fmt.Errorf("reading the %s: %w", what, err)
		}
		if line := pc.head[lineStart:]; len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
			return pc.head, nil
		}
		lineStart = len(pc.head)
	}
}

// readHead reads and parses one response head.
func (pc *h1Conn) readHead() (*http.Response, error) {
	b, err := pc.readBlock("response head")
	if err != nil {
		return nil, err
	}
	s := string(b) // one allocation; the header keys and values are slices of it
	line, rest := cutLine(s)
	resp, err := parseStatusLine(line)
	if err != nil {
		return nil, err
	}
	if resp.Header, err = parseFields(rest, "header"); err != nil {
		return nil, err
	}
	return resp, nil
}

// cutLine splits s after its first line, without the line's CRLF (or LF).
func cutLine(s string) (line, rest string) {
	line, rest, _ = strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r"), rest
}

func parseStatusLine(line string) (*http.Response, error) {
	proto, status, ok := strings.Cut(line, " ")
	if !ok {
		return nil, protoErr("status line %q", line)
	}
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok || major != 1 {
		return nil, protoErr("protocol version %q in status line %q", proto, line)
	}
	status = strings.TrimLeft(status, " ")
	code, _, _ := strings.Cut(status, " ")
	n, err := strconv.Atoi(code)
	if len(code) != 3 || err != nil || n < 100 {
		return nil, protoErr("status code %q in status line %q", code, line)
	}
	return &http.Response{Status: status, StatusCode: n, Proto: proto, ProtoMajor: 1, ProtoMinor: minor}, nil
}

// parseFields parses header (or trailer) field lines up to the empty line:
// canonical keys, values trimmed of OWS; obsolete line folding, a line
// without a colon, a bad name (also whitespace before the colon) or value
// is an error.
func parseFields(s, what string) (http.Header, error) {
	n := strings.Count(s, "\n") - 1
	if n <= 0 {
		return http.Header{}, nil
	}
	h := make(http.Header, n)
	strs := make([]string, n) // one backing array for the first value of each key
	for {
		var line string
		line, s = cutLine(s)
		if line == "" {
			return h, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, protoErr("obsolete line folding in %s line %q", what, line)
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, protoErr("%s line without a colon: %q", what, line)
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, protoErr("%s name %q", what, k)
		}
		v = strings.Trim(v, " \t")
		if !httpguts.ValidHeaderFieldValue(v) {
			return nil, protoErr("value of %s %q", what, k)
		}
		k = textproto.CanonicalMIMEHeaderKey(k)
		if vv := h[k]; vv == nil && len(strs) > 0 {
			h[k], strs = strs[:1:1], strs[1:]
			h[k][0] = v
		} else {
			h[k] = append(vv, v)
		}
	}
}

// hasToken reports whether a comma-separated header has token (any case).
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// parseContentLength: digits only; repeated values must agree.
func parseContentLength(values []string) (int64, error) {
	var n int64 = -1
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			m, err := strconv.ParseInt(f, 10, 64)
			if err != nil || m < 0 || f[0] == '+' {
				return 0, protoErr("Content-Length %q", v)
			}
			if n >= 0 && m != n {
				return 0, protoErr("conflicting Content-Length values %q", values)
			}
			n = m
		}
	}
	return n, nil
}

// frame reads the body's framing (RFC 9112 section 6.3) and sets resp.Body,
// ContentLength, TransferEncoding and the declared Trailer keys.
func (pc *h1Conn) frame(ctx context.Context, resp *http.Response, req *http.Request, stop func() bool, streaming bool) error {
	h := resp.Header
	te, hasTE := h["Transfer-Encoding"]
	cl, hasCL := h["Content-Length"]
	conn := h["Connection"]
	b := &h1Body{pc: pc, ctx: ctx, stop: stop, streaming: streaming, resp: resp, length: -1,
		keepAlive: (resp.ProtoMinor >= 1 && !hasToken(conn, "close")) || (resp.ProtoMinor == 0 && hasToken(conn, "keep-alive"))}
	if hasTE {
		if hasCL {
			return protoErr("both Transfer-Encoding %q and Content-Length %q", te, cl)
		}
		if len(te) != 1 || !strings.EqualFold(strings.TrimSpace(te[0]), "chunked") {
			return protoErr("unsupported Transfer-Encoding %q", te)
		}
		delete(h, "Transfer-Encoding")
		resp.TransferEncoding = []string{"chunked"}
		b.mode = bodyChunked
	} else if hasCL {
		n, err := parseContentLength(cl)
		if err != nil {
			return err
		}
		b.mode, b.length, b.remaining = bodyFixed, n, n
	}
	code := resp.StatusCode
	if req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified {
		resp.Body, resp.ContentLength = http.NoBody, 0
		if req.Method == http.MethodHead {
			resp.ContentLength = b.length
		}
		b.finish(true)
		return nil
	}
	resp.ContentLength = b.length
	if b.mode == bodyChunked {
		declareTrailer(resp)
		b.chunks = httputil.NewChunkedReader(pc.br)
	}
	resp.Body = b
	if b.mode == bodyFixed && b.remaining == 0 {
		b.finish(true)
	}
	return nil
}

// declareTrailer turns the Trailer header into resp.Trailer's keys, as
// net/http does; the values arrive at the end of the body.
func declareTrailer(resp *http.Response) {
	vv, ok := resp.Header["Trailer"]
	if !ok {
		return
	}
	delete(resp.Header, "Trailer")
	resp.Trailer = http.Header{}
	for _, v := range vv {
		for k := range strings.SplitSeq(v, ",") {
			if k = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k)); k != "" {
				resp.Trailer[k] = nil
			}
		}
	}
}

type bodyMode int

const (
	bodyClose   bodyMode = iota // delimited by the connection's close
	bodyFixed                   // Content-Length
	bodyChunked                 // Transfer-Encoding: chunked
)

// Body states.
const (
	bodyOpen int32 = iota
	bodyEnded
	bodyClosed
)

// h1Body is a response body. At its end (a clean EOF, or the last byte of
// a Content-Length body, even before the EOF is read) the connection goes
// back to the pool if it can carry another request, else it closes; Close
// before the end closes the connection. A body cut short is
// io.ErrUnexpectedEOF, never a clean EOF.
type h1Body struct {
	pc        *h1Conn
	ctx       context.Context
	stop      func() bool
	streaming bool // a request body writer may still run
	keepAlive bool
	resp      *http.Response // for the trailers
	mode      bodyMode
	length    int64 // Content-Length, or -1
	remaining int64
	read      int64
	chunks    io.Reader
	state     atomic.Int32
	err       error // what Read returns once the body ended, io.EOF or the error
	// held: Next handed out the body's last bytes as a view of the
	// connection's read buffer; the connection goes back to the pool
	// (and the buffer with it) only at the next Read or Next.
	held bool
}

var errReadClosed = errors.New("upstream: read on closed response body")

func (b *h1Body) Read(p []byte) (int, error) {
	b.release()
	if b.err != nil {
		return 0, b.err
	}
	if b.state.Load() == bodyClosed {
		return 0, errReadClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	var (
		n   int
		err error
	)
	switch b.mode {
	case bodyFixed:
		if b.remaining == 0 {
			b.err = io.EOF
			return 0, io.EOF
		}
		n, err = b.pc.br.Read(p[:min(int64(len(p)), b.remaining)])
		b.remaining -= int64(n)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	case bodyChunked:
		n, err = b.chunks.Read(p)
	default:
		n, err = b.pc.br.Read(p)
	}
	b.read += int64(n)
	return n, b.after(n, err)
}

// Viewable reports whether Next can serve this body: a Content-Length or
// close-delimited one (a chunked body's bytes are not contiguous in the
// buffer).
func (b *h1Body) Viewable() bool { return b.mode != bodyChunked }

// Next is Read without the copy (issue #14: a 64 KiB body, read with its
// head into the connection's buffer, was copied out of it whole): up to
// max bytes of the body as a view of the connection's read buffer, which
// stays valid until the next Read, Next or Close; only then can the
// connection, and so the buffer, carry another response. It waits for
// the origin only when nothing of the body is buffered (one read).
// Not for a chunked body (Viewable).
func (b *h1Body) Next(max int) ([]byte, error) {
	b.release()
	if b.err != nil {
		return nil, b.err
	}
	if b.state.Load() == bodyClosed {
		return nil, errReadClosed
	}
	if b.mode == bodyChunked {
		return nil, errors.New("upstream: Next on a chunked body")
	}
	if max <= 0 {
		return nil, nil
	}
	want := max
	if b.mode == bodyFixed {
		if b.remaining == 0 {
			b.err = io.EOF
			return nil, io.EOF
		}
		want = int(min(int64(max), b.remaining))
	}
	br := b.pc.br
	var err error
	if br.Buffered() == 0 {
		_, err = br.Peek(1) // one read; an error comes only with no byte
	}
	n := min(want, br.Buffered())
	var p []byte
	if n > 0 {
		p, _ = br.Peek(n)
		_, _ = br.Discard(n)
	}
	b.read += int64(n)
	if b.mode == bodyFixed {
		b.remaining -= int64(n)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err == nil && b.remaining == 0 {
			b.held = true // after's finish, once p is written
			return p, nil
		}
	}
	return p, b.after(n, err)
}

// release ends a body whose last bytes Next handed out: they have been
// used, so the connection may carry the next response.
func (b *h1Body) release() {
	if b.held {
		b.held = false
		b.finish(true)
	}
}

// Ready reports whether the next Read returns without waiting for the
// origin: the body has ended, or (not chunked, where a buffered byte may
// be part of a chunk's size line) some of it is buffered. Package fetch
// arms its read timers only for a Read that may wait (issue #14). Call it
// from the goroutine that reads.
func (b *h1Body) Ready() bool {
	switch {
	case b.err != nil || b.state.Load() != bodyOpen:
		return true
	case b.mode == bodyFixed && b.remaining == 0:
		return true
	case b.mode != bodyChunked:
		return b.pc.br.Buffered() > 0
	}
	return false
}

// after judges a Read's outcome: the body's end, a failure, or more to come.
func (b *h1Body) after(n int, err error) error {
	switch {
	case err == nil && b.mode == bodyFixed && b.remaining == 0:
		b.finish(true) // the next Read is the EOF
		return nil
	case err == nil:
		return nil
	case err == io.EOF && b.mode == bodyChunked:
		if terr := b.readTrailer(); terr != nil {
			return b.fail(terr)
		}
		b.finish(true)
	case err == io.EOF: // close-delimited: the close is the end
		b.finish(false)
	default:
		return b.fail(err)
	}
	b.err = io.EOF
	if n > 0 {
		return nil
	}
	return io.EOF
}

// fail ends the body with err, naming what was cut and why.
func (b *h1Body) fail(err error) error {
	switch {
	case b.state.Load() == bodyClosed:
		err = errReadClosed
	case b.ctx.Err() != nil:
		err = fmt.Errorf("reading the origin body after %d bytes: %w", b.read, context.Cause(b.ctx))
	case errors.Is(err, io.ErrUnexpectedEOF) && b.length >= 0:
		err = fmt.Errorf("origin body ended after %d of %d bytes: %w", b.read, b.length, io.ErrUnexpectedEOF)
	default:
		err = fmt.Errorf("reading the origin body after %d bytes: %w", b.read, err)
	}
	b.err = err
	if b.state.CompareAndSwap(bodyOpen, bodyEnded) {
		b.stop()
		b.pc.close()
	}
	return err
}

// readTrailer reads a chunked body's trailer section into resp.Trailer.
func (b *h1Body) readTrailer() error {
	raw, err := b.pc.readBlock("trailer section")
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if len(raw) <= 2 {
		return nil // none
	}
	tr, err := parseFields(string(raw), "trailer")
	if err != nil {
		return err
	}
	if b.resp.Trailer == nil {
		b.resp.Trailer = http.Header{}
	}
	for k, v := range tr {
		b.resp.Trailer[k] = v
	}
	return nil
}

// finish is the body's clean end: the connection goes back to the pool if
// reuse is possible (keep-alive, the request body all sent, nothing
// unexpected buffered, the context not ended), else it closes.
func (b *h1Body) finish(reuse bool) {
	if !b.state.CompareAndSwap(bodyOpen, bodyEnded) {
		return // closed meanwhile: the connection is closed
	}
	pc := b.pc
	stopped := b.stop()
	reuse = reuse && stopped && b.keepAlive && pc.br.Buffered() == 0
	if reuse && b.streaming {
		reuse = pc.bodySent()
	}
	if reuse {
		pc.releaseReader() // empty: checked above
		pc.pool.put(pc)
	} else {
		pc.close()
	}
}

// maxWriteWait is how long a connection whose response ended waits for its
// request body writer to finish before it is closed rather than reused
// (net/http's Transport waits as long).
const maxWriteWait = 50 * time.Millisecond

// bodySent reports whether the request body writer finished without error,
// waiting up to maxWriteWait (the origin may answer before the body is
// all sent, and never read the rest).
func (pc *h1Conn) bodySent() bool {
	select {
	case err := <-pc.wrote:
		return err == nil
	default:
	}
	t := time.NewTimer(maxWriteWait)
	defer t.Stop()
	select {
	case err := <-pc.wrote:
		return err == nil
	case <-t.C:
		return false
	}
}

// Close ends the body; before its end that closes the connection.
func (b *h1Body) Close() error {
	if b.state.CompareAndSwap(bodyOpen, bodyClosed) {
		b.stop()
		b.pc.close()
	}
	return nil
}
