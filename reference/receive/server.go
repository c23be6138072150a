package receive

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"net/http"
)

// This file is what a server that parses HTTP/1.1 heads itself (as
// reference/h1serve does) needs of the receive step: the raw head checks
// as functions, a way to hand a refused head to the handler (WithRejection)
// and the h2c connection wrapper (H2Conn).

type rejectionKey struct{}

// WithRejection returns ctx carrying e, the refusal of a request head the
// server found itself: Check on a request with that context returns e, so
// the handler answers and logs it like any other refusal (the placeholder
// flow of Listener, without the placeholder's token).
func WithRejection(ctx context.Context, e *Error) context.Context {
	return context.WithValue(ctx, rejectionKey{}, e)
}

// Rejection is the refusal WithRejection attached to ctx, or nil.
func Rejection(ctx context.Context) *Error {
	e, _ := ctx.Value(rejectionKey{}).(*Error)
	return e
}

// TargetTooLong is the 414 for a request target of n bytes, or nil.
func (l Limits) TargetTooLong(n int) *Error {
	if n > l.MaxURLBytes {
		return reject(http.StatusRequestURITooLong, "request target of %d bytes exceeds the limit of %d", n, l.MaxURLBytes)
	}
	return nil
}

// LineTooLong is the 414 for a request line still being read after n
// bytes, or nil (method and version are short).
func (l Limits) LineTooLong(n int) *Error {
	if max := l.MaxURLBytes + 1024; n > max {
		return reject(http.StatusRequestURITooLong, "a request line of more than %d bytes: the target exceeds the limit of %d", max, l.MaxURLBytes)
	}
	return nil
}

// FieldsTooLarge is the 431 for a header section of fields lines and
// size bytes (as the raw head counts them: CRLFs included), or nil.
func (l Limits) FieldsTooLarge(fields, size int) *Error {
	if size > l.MaxHeaderBytes {
		return reject(http.StatusRequestHeaderFieldsTooLarge, "header fields of more than %d bytes, the limit", l.MaxHeaderBytes)
	}
	if fields > l.MaxHeaderFields {
		return reject(http.StatusRequestHeaderFieldsTooLarge, "more than %d header fields", l.MaxHeaderFields)
	}
	return nil
}

// ObsFold is the 400 for a field line starting with whitespace (RFC 9112
// 5.2).
func ObsFold() *Error {
	return reject(http.StatusBadRequest, "obsolete line folding in a header field (RFC 9112 5.2)")
}

// Framing is the 400 for a head's framing fields, or nil: Content-Length
// with Transfer-Encoding, or Transfer-Encoding in HTTP/1.0 (RFC 9112 6.1:
// reject, and close).
func Framing(contentLengths, transferEncodings int, http10 bool) *Error {
	switch {
	case transferEncodings > 0 && contentLengths > 0:
		return reject(http.StatusBadRequest, "both Content-Length and Transfer-Encoding (RFC 9112 6.1)")
	case transferEncodings > 0 && http10:
		return reject(http.StatusBadRequest, "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1)")
	}
	return nil
}

// H2Conn wraps nc, a connection whose first bytes (read is what was
// already read of them, starting with the h2 client preface) are h2c
// with prior knowledge, as Listener wraps it: the reset-stream limit and
// request trailers. Serve it with an http.Server set up by Configure.
// log (nil: slog.Default) gets a record when the reset limit ends it.
func H2Conn(nc net.Conn, read []byte, l Limits, log *slog.Logger) net.Conn {
	if log == nil {
		log = slog.Default()
	}
	c := &conn{Conn: nc, lim: l, log: log, token: rand.Text()}
	c.h2 = newH2in(l, len(http2Preface))
	c.isH2.Store(true)
	c.scan(read)
	return c
}

// http2Preface is the h2 client connection preface (RFC 9113 3.4).
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
