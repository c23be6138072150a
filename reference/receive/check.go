package receive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Error is a request the receive step answers itself: its status (400,
// 414, 431) and why.
type Error struct {
	Status int
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Reason) }

func reject(status int, format string, args ...any) *Error {
	return &Error{Status: status, Reason: fmt.Sprintf(format, args...)}
}

// errTrailers ends a request body that turned out to carry trailers after
// the part read ahead: the origin's copy is cut short, never completed
// without them (MTH-2).
var errTrailers = errors.New("request body has trailers (MTH-2: rejected)")

// Check is the receive step's handler half, for HTTP/1.1 and h2 alike:
// a rejection the connection wrapper (Listener) found in the raw head,
// then the head limits (414 for the target, 431 for the fields), the Host
// (400 unless ValidHost), and the first BodyPeekBytes of the body, read
// here before anything is forwarded so that a framing error in them (a
// bad chunk size: RFC 9112 7.1) or trailers (MTH-2) is a 400 that never
// reaches the origin. It may replace r.Body with one that replays what it
// read. nil means the request may go on.
func Check(r *http.Request, l Limits) *Error {
	if e := stashed(r); e != nil {
		return e
	}
	if n := len(r.RequestURI); n > l.MaxURLBytes {
		return reject(http.StatusRequestURITooLong, "request target of %d bytes exceeds the limit of %d", n, l.MaxURLBytes)
	}
	fields, size := 0, 0
	if r.Host != "" {
		fields, size = 1, len("Host")+len(r.Host)+4
	}
	for k, vs := range r.Header {
		fields += len(vs)
		for _, v := range vs {
			size += len(k) + len(v) + 4
		}
	}
	if fields > l.MaxHeaderFields {
		return reject(http.StatusRequestHeaderFieldsTooLarge, "%d header fields exceed the limit of %d", fields, l.MaxHeaderFields)
	}
	if size > l.MaxHeaderBytes {
		return reject(http.StatusRequestHeaderFieldsTooLarge, "%d bytes of header fields exceed the limit of %d", size, l.MaxHeaderBytes)
	}
	if !ValidHost(r.Host) {
		return reject(http.StatusBadRequest, "Host %q is not a valid host[:port]", clip(r.Host))
	}
	return peekBody(r, l.BodyPeekBytes)
}

// peekBody reads up to n bytes of r's body ahead of forwarding.
func peekBody(r *http.Request, n int) *Error {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	orig := r.Body
	head, err := io.ReadAll(io.LimitReader(orig, int64(n)+1))
	if err != nil {
		return reject(http.StatusBadRequest, "request body framing: %v", err)
	}
	if len(head) <= n && len(r.Trailer) > 0 { // the whole body, and trailers after it
		return reject(http.StatusBadRequest, "request has trailers (MTH-2)")
	}
	r.Body = &replay{Reader: io.MultiReader(bytes.NewReader(head), &trailerGuard{r: r, body: orig}), body: orig}
	return nil
}

type replay struct {
	io.Reader
	body io.Closer
}

func (b *replay) Close() error { return b.body.Close() }

// trailerGuard turns the end of a body that carried trailers into an error.
type trailerGuard struct {
	r    *http.Request
	body io.Reader
}

func (g *trailerGuard) Read(p []byte) (int, error) {
	n, err := g.body.Read(p)
	if err == io.EOF && len(g.r.Trailer) > 0 {
		return n, errTrailers
	}
	return n, err
}

// clip is at most the first 64 bytes of s, for messages.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
