package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strings"
	"syscall"

	"golang.org/x/net/http2"
)

// Error is what RoundTrip returns when no response headers arrived.
type Error struct {
	// Reason is an RFC 9209 proxy-status error type: dns_error,
	// dns_timeout, connection_refused, connection_timeout,
	// connection_terminated, destination_unavailable,
	// destination_ip_unroutable, tls_certificate_error, tls_alert_received,
	// tls_protocol_error, http_response_timeout, http_protocol_error,
	// http_request_error, proxy_configuration_error, proxy_internal_error,
	// or "canceled" (the caller's context ended for another reason than a
	// connect timeout).
	Reason string
	// ConnectFailure says whether the attempt counts as CONNECT_FAILURE
	// (ATT-5, TMO-1).
	ConnectFailure bool
	// Connected says whether a connection to the origin had been
	// established (so a timeout was a wait for response headers).
	Connected bool
	Target    Target
	// IP is the origin IP the attempt connected to, or was connecting to
	// when it failed ("" if it got no further than the name).
	IP string
	// Err is the transport's error; Cause the context's cancellation cause,
	// if the context ended.
	Err   error
	Cause error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("origin %s: %s", e.Target, e.Reason)
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	if e.Err != nil && (e.Cause == nil || e.Err.Error() != e.Cause.Error()) {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cancellation cause and the transport error.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// IsConnectFailure reports whether err (from RoundTrip) counts as the retry
// condition CONNECT_FAILURE: a DNS failure, a refused or unreachable or
// timed-out dial, a TLS handshake or certificate verification failure, an
// ALPN mismatch (PRT-1), the attempt's connect timeout (TMO-1), and (INT)
// a connection reset or closed, or an h2 RST_STREAM or GOAWAY, before the
// response headers arrived. The documentation lists only DNS, routing, TCP
// and TLS errors and connect timeouts, but says connectTimeout runs until the
// headers arrive, so we treat every failure of the connection before the
// headers the same way. Not connect failures: a malformed response
// (http_protocol_error), a request that cannot be sent (http_request_error),
// configuration errors, and a cancellation by the caller.
func IsConnectFailure(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.ConnectFailure
	}
	if errors.Is(err, ErrConnectTimeout) {
		return true
	}
	_, connect := classifyErr(err, false)
	return connect
}

// Reason is err's RFC 9209 proxy-status error type ("" for nil).
func Reason(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if errors.Is(err, ErrConnectTimeout) {
		return "connection_timeout"
	}
	reason, _ := classifyErr(err, false)
	return reason
}

// classify turns a transport error into an *Error, looking first at why
// ctx ended, if it did.
func classify(ctx context.Context, err error, connected bool) *Error {
	e := &Error{Err: err, Connected: connected}
	if ctx.Err() != nil {
		e.Cause = context.Cause(ctx)
		if errors.Is(e.Cause, ErrConnectTimeout) || errors.Is(e.Cause, context.DeadlineExceeded) {
			e.ConnectFailure = true
			e.Reason = timeoutReason(connected)
		} else {
			e.Reason = "canceled"
		}
		return e
	}
	e.Reason, e.ConnectFailure = classifyErr(err, connected)
	return e
}

func timeoutReason(connected bool) string {
	if connected {
		return "http_response_timeout"
	}
	return "connection_timeout"
}

// classifyErr names a transport error and says whether it is a connect
// failure.
func classifyErr(err error, connected bool) (reason string, connect bool) {
	var (
		hs      *handshakeError
		alpn    *alpnError
		dnsErr  *net.DNSError
		opErr   *net.OpError
		goAway  http2.GoAwayError
		stream  http2.StreamError
		connErr http2.ConnectionError
		proto   textproto.ProtocolError
		h1Proto *ProtocolError
		reqBody *requestBodyError
	)
	switch {
	case errors.As(err, &reqBody):
		return "http_request_error", false
	case errors.As(err, &alpn):
		return "tls_protocol_error", true
	case errors.As(err, &hs):
		return tlsReason(hs.err), true
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout {
			return "dns_timeout", true
		}
		return "dns_error", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused", true
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "destination_ip_unroutable", true
	case errors.As(err, &opErr) && opErr.Op == "dial":
		if opErr.Timeout() {
			return "connection_timeout", true
		}
		return "destination_unavailable", true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrConnectTimeout):
		return timeoutReason(connected), true
	case errors.Is(err, context.Canceled):
		return "canceled", false
	case errors.As(err, &goAway), errors.As(err, &stream), errors.As(err, &connErr):
		return "connection_terminated", true // INT: see IsConnectFailure
	case errors.As(err, &h1Proto), errors.As(err, &proto), strings.Contains(err.Error(), "malformed HTTP"),
		strings.Contains(err.Error(), "malformed MIME"):
		return "http_protocol_error", false
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return "connection_terminated", true
	}
	// Anything else before the headers is the connection failing
	// ("http2: client connection lost", "server closed idle connection", ...).
	return "connection_terminated", true
}

func tlsReason(err error) string {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		alert    tls.AlertError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return "tls_certificate_error"
	case errors.As(err, &alert):
		return "tls_alert_received"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "connection_timeout"
	}
	return "tls_protocol_error"
}
