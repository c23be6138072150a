package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1Conn is one HTTP/1.1 connection to an origin. The goroutine of the
// request that holds it writes the request and reads the response; no
// goroutine runs for it otherwise (a streaming request body is written by
// one of its own, see writeBody).
type h1Conn struct {
	pool *h1Pool
	nc   net.Conn
	ip   string          // the origin's IP (remoteIP), for the attempt's log
	raw  syscall.RawConn // the TCP socket, for usable's peek; nil if none
	// br reads the responses, while one is being read: an idle
	// connection holds none (its reader, empty, went back to the
	// client's pool with the last response's end).
	br      *bufio.Reader
	bw      *bufio.Writer
	tls     *tls.ConnectionState
	idleAt  time.Time
	closed  atomic.Bool
	closeFn func() // pc.close, bound once
	peekFn  func(fd uintptr) bool
	peeked  peekResult
	head    []byte     // the response head being read, reused
	wrote   chan error // the body writer's result, when there is one
}

type peekResult int

const (
	peekAlive peekResult = iota
	peekClosed
	peekData
)

func newH1Conn(p *h1Pool, nc net.Conn) *h1Conn {
	pc := &h1Conn{pool: p, nc: nc, ip: remoteIP(nc), bw: bufio.NewWriterSize(nc, 4<<10)}
	tcp := nc
	if tc, ok := nc.(*tls.Conn); ok {
		st := tc.ConnectionState()
		pc.tls = &st
		tcp = tc.NetConn()
	}
	if sc, ok := tcp.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			pc.raw = raw
		}
	}
	pc.closeFn = pc.close
	pc.peekFn = pc.peek
	return pc
}

// h1ReadSize is the size of the buffer a response is read through: a
// head and a 64 KiB body that have arrived come in one read, and so go to
// the edge's client in one write (the edge copies bodies through 64 KiB
// buffers; issue #14: with 16 KiB, a 64 KiB response took two reads here
// and two writes there). Only connections reading a response hold one.
const h1ReadSize = 68 << 10

// reader is a response reader for nc, from the client's pool.
func (c *Client) reader(nc net.Conn) *bufio.Reader {
	if br, ok := c.readers.Get().(*bufio.Reader); ok {
		br.Reset(nc)
		return br
	}
	return bufio.NewReaderSize(nc, h1ReadSize)
}

// releaseReader gives the connection's reader back to the client's pool
// once a response has ended with nothing buffered beyond it; only the
// goroutine reading the response may call it (a connection closed from
// elsewhere keeps its reader).
func (pc *h1Conn) releaseReader() {
	br := pc.br
	pc.br = nil
	br.Reset(nil)
	pc.pool.c.readers.Put(br)
}

// close closes the connection once and frees its slot in the pool.
func (pc *h1Conn) close() {
	if pc.closed.Swap(true) {
		return
	}
	pc.nc.Close()
	pc.pool.slotFreed()
}

// usable reports whether an idle connection may carry a request: it is
// checked without blocking (a peek at the socket, one recvfrom): an origin
// that closed it, or (cleartext) sent bytes nobody asked for, makes it
// unusable, so the request goes on a new connection rather than failing on
// this one (ATT-3: nothing was sent, so that is not an attempt). TLS
// records may legitimately arrive (session tickets). A close still in
// flight is not seen: that request fails, an attempt like any other.
func (pc *h1Conn) usable() bool {
	if pc.br != nil && pc.br.Buffered() > 0 {
		return false // bytes beyond the last response
	}
	if pc.raw == nil {
		return true
	}
	if err := pc.raw.Read(pc.peekFn); err != nil {
		return false
	}
	return pc.peeked == peekAlive || (pc.peeked == peekData && pc.tls != nil)
}

// exchange writes req and reads the response head; stop undoes the
// context's close of the connection.
func (pc *h1Conn) exchange(ctx context.Context, req *http.Request, uri, host string, stop func() bool) (*http.Response, error) {
	if pc.br == nil {
		pc.br = pc.pool.c.reader(pc.nc)
	}
	chunked, err := pc.writeHead(req, uri, host)
	if err != nil {
		return nil, fmt.Errorf("writing the request: %w", err)
	}
	streaming := hasBody(req)
	if streaming {
		if pc.wrote == nil {
			pc.wrote = make(chan error, 1)
		}
		go pc.writeBody(req, chunked)
	} else if err := pc.bw.Flush(); err != nil {
		return nil, fmt.Errorf("writing the request: %w", err)
	} else if pc.br.Buffered() == 0 {
		pc.pool.c.yieldForAnswer()
	}
	resp, err := pc.readResponse(ctx, req, stop, streaming)
	if err != nil && streaming {
		select {
		case werr := <-pc.wrote:
			if werr != nil {
				return nil, werr // the cause, rather than the closed connection it left
			}
		default:
		}
	}
	return resp, err
}

// yieldForAnswer lets the other runnable goroutines run between writing a
// request (without a body) and reading its answer: the origin has only
// just been sent the request, so a read at once nearly always finds
// nothing, fails (EAGAIN) and parks on the poller; after the other ready
// work the answer has usually come and one read takes it (issue #14:
// 3.2 to 2.6 reads and 76 to 70 us of CPU per proxied 1 KiB request).
// With nothing else to run it returns at once.
func (c *Client) yieldForAnswer() {
	if c.yield != nil {
		c.yield()
		return
	}
	runtime.Gosched()
}

func hasBody(req *http.Request) bool {
	return req.Body != nil && req.Body != http.NoBody
}

// writeHead writes the request line and headers as net/http does for what
// the edge sends: the request-target of the URL (origin or opaque form),
// Host, the headers without hop-by-hop ones (PRT-5) and in key order, no
// User-Agent if its value is empty, and the body's framing: Content-Length,
// or chunked when the length is unknown. It reports whether the body is
// chunked. Nothing reaches the wire until the caller flushes.
func (pc *h1Conn) writeHead(req *http.Request, uri, host string) (chunked bool, err error) {
	w := pc.bw
	w.WriteString(req.Method)
	w.WriteByte(' ')
	w.WriteString(uri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	var keysBuf [32]string
	keys := keysBuf[:0]
	conn := req.Header["Connection"]
	for k := range req.Header {
		if !skipHeader(k, conn) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			v = strings.Trim(v, " \t")
			if k == "User-Agent" && v == "" {
				continue
			}
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
	switch {
	case hasBody(req) && req.ContentLength > 0:
		w.WriteString("Content-Length: ")
		w.WriteString(strconv.FormatInt(req.ContentLength, 10))
		w.WriteString("\r\n")
	case hasBody(req):
		// -1, or 0 with a body: the length is unknown.
		chunked = true
		w.WriteString("Transfer-Encoding: chunked\r\n")
	case req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch:
		w.WriteString("Content-Length: 0\r\n")
	}
	_, err = w.WriteString("\r\n")
	return chunked, err
}

// requestURI is the request-target net/http sends for u.
func requestURI(u *url.URL) string {
	if u.Opaque == "" && u.RawPath == "" && u.RawQuery == "" && !u.ForceQuery && u.Path != "" &&
		!strings.ContainsAny(u.Path, "%?# ") && validPathNoEscape(u.Path) {
		return u.Path // the common case, without EscapedPath's work
	}
	return u.RequestURI()
}

// validPathNoEscape reports whether p needs no escaping in a request-target.
func validPathNoEscape(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' || c == '`' || c == '{' || c == '|' || c == '}' {
			return false
		}
	}
	return true
}

// skipHeader: headers net/http's request writer leaves out of the header
// map (Host, and the framing it writes itself), hop-by-hop headers and
// those Connection names (PRT-5).
func skipHeader(k string, connection []string) bool {
	switch k {
	case "Host", "Content-Length", "Transfer-Encoding", "Trailer", "Connection", "Keep-Alive",
		"Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Upgrade":
		return true
	}
	for _, v := range connection {
		for name := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(name), k) {
				return true
			}
		}
	}
	return false
}

// checkH1Request rejects what must not reach the wire, before anything
// does: a bad method, request-target, header name or value. It returns the
// request-target (scheme is the target's, for an opaque URL).
func checkH1Request(req *http.Request, scheme string) (string, error) {
	if req.Method == "" || !httpguts.ValidHeaderFieldName(req.Method) {
		return "", fmt.Errorf("invalid method %q", req.Method)
	}
	if req.URL == nil {
		return "", errors.New("no URL")
	}
	u := url.URL{Scheme: scheme, Opaque: req.URL.Opaque, Path: req.URL.Path, RawPath: req.URL.RawPath,
		RawQuery: req.URL.RawQuery, ForceQuery: req.URL.ForceQuery}
	uri := requestURI(&u)
	for i := 0; i < len(uri); i++ {
		if uri[i] <= ' ' || uri[i] == 0x7f {
			return "", fmt.Errorf("invalid request-target %q", uri)
		}
	}
	for name, values := range req.Header {
		if !httpguts.ValidHeaderFieldName(name) {
			return "", fmt.Errorf("invalid header name %q", name)
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return "", fmt.Errorf("invalid value for header %q", name)
			}
		}
	}
	if req.ContentLength < -1 {
		return "", fmt.Errorf("invalid ContentLength %d", req.ContentLength)
	}
	return uri, nil
}

// writeBody sends the request body (in a goroutine of its own, so that a
// response arriving before the body is all sent is read, not deadlocked
// on) and reports on pc.wrote. Exactly ContentLength bytes, else an error;
// an error closes the connection (the request is incomplete on the wire).
func (pc *h1Conn) writeBody(req *http.Request, chunked bool) {
	err := pc.copyBody(req, chunked)
	req.Body.Close()
	if err == nil {
		if err = pc.bw.Flush(); err != nil {
			err = fmt.Errorf("writing the request body: %w", err)
		}
	}
	pc.wrote <- err // before the close below fails the response read
	if err != nil {
		pc.close()
	}
}

// requestBodyError is the request body failing (its reader's error, or a
// length other than its ContentLength): http_request_error, not the
// connection's failure.
type requestBodyError struct{ err error }

func (e *requestBodyError) Error() string { return "request body: " + e.err.Error() }
func (e *requestBodyError) Unwrap() error { return e.err }

func (pc *h1Conn) copyBody(req *http.Request, chunked bool) error {
	body := bodyReader{req.Body}
	if chunked {
		cw := httputil.NewChunkedWriter(pc.bw)
		if _, err := io.Copy(cw, body); err != nil {
			return asBodyError(err, "sending the request body")
		}
		cw.Close() // the last chunk
		_, err := pc.bw.WriteString("\r\n")
		return err
	}
	n, err := io.CopyN(pc.bw, body, req.ContentLength)
	if err == io.EOF {
		return &requestBodyError{fmt.Errorf("ended after %d of its ContentLength %d bytes", n, req.ContentLength)}
	}
	if err != nil {
		return asBodyError(err, "sending the request body")
	}
	var one [1]byte
	if m, _ := req.Body.Read(one[:]); m > 0 {
		return &requestBodyError{fmt.Errorf("longer than its ContentLength %d", req.ContentLength)}
	}
	return nil
}

// bodyReader marks the request body's read errors as such.
type bodyReader struct{ r io.Reader }

func (b bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = &requestBodyError{err}
	}
	return n, err
}

// asBodyError wraps a copy's error: the body's own, or the connection's.
func asBodyError(err error, doing string) error {
	var be *requestBodyError
	if errors.As(err, &be) {
		return err
	}
	return fmt.Errorf("%s: %w", doing, err)
}
