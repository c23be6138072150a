// Package upstream makes one attempt to one origin over the protocol the
// origin is configured for (behaviour.md PRT, HST-3): the reference edge
// cache's connection layer, below the attempt loop of package fetch.
//
// Protocols (PRT-1, PRT-2):
//
//   - HTTP: cleartext HTTP/1.1, never h2c.
//   - HTTPS: HTTP/1.1 over TLS; the client offers only "http/1.1" in ALPN and
//     never speaks h2, whatever the origin offers.
//   - HTTP2: h2 over TLS; the client offers only "h2" and there is no
//     fallback: an origin that does not negotiate h2 fails the attempt with a
//     connect failure.
//
// The Host header, the TLS SNI and the name the certificate is verified
// against are all Target.Host (HST-3); an IP-literal host gets no SNI and is
// verified against the certificate's IP SANs. Connections are dialled to
// Target.Address (through Options.Resolve, like curl --resolve, else DNS) and
// Target.Port, and are reused per Target, that is per (protocol, dial
// address, port, host) (PRT-4). Connections are bounded (issue #12 item 6):
// an h2 target has one connection at a time, shared by all its requests
// (those beyond the origin's stream limit wait on it), and a new one only
// when that one is going away, dialled once for all who need it; an
// HTTP/1.1 target at most Options.MaxConnsPerTarget connections, all of
// which may stay idle between requests (a pool smaller than the load
// closes and redials connections at every burst); an idle connection
// closes after Options.IdleTimeout.
// The client never adds Accept-Encoding or a
// User-Agent of its own, never uses a proxy from the environment and never
// follows redirects.
//
// HTTP/1.1 (HTTP and HTTPS) goes through the package's own connection pool
// and client (h1pool.go, h1conn.go, h1resp.go; issue #14), not net/http's
// Transport: the request's goroutine writes the request in one buffered
// write and reads the response head itself; idle connections cost one
// timer per target, no goroutine; the body hands the connection back to the pool at
// its end and closes it if closed early or cut. A request is never resent
// (ATT-3, ATT-4): one that fails on a reused connection is a failed
// attempt, reported; a reused connection is first checked with a
// non-blocking peek at its socket, and one the origin has closed is
// dropped and another used. Responses are parsed strictly: a malformed
// status line, header, Content-Length, Transfer-Encoding (only chunked),
// both framings at once, obsolete line folding, a head over 1 MiB or more
// than 5 informational responses is a *ProtocolError (http_protocol_error);
// a body ending before its Content-Length or last chunk is
// io.ErrUnexpectedEOF. h2 (HTTP2) stays on x/net's transport (h2conn.go).
//
// Every error RoundTrip returns is an *Error that says whether the attempt
// counts as a connect failure (retry condition CONNECT_FAILURE, ATT-5) and
// gives an RFC 9209 proxy-status error type for logs and the Proxy-Status
// header; IsConnectFailure and Reason read them.
package upstream

import (
	"cmp"
	"container/list"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/reference/config"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
)

// Options configure a Client.
type Options struct {
	// RootCAs verifies origin certificates; nil means the system roots.
	RootCAs *x509.CertPool
	// Resolve maps a host name to the IP to dial instead of asking DNS,
	// like curl --resolve; the port comes from the target.
	Resolve map[string]string
	// Logger receives debug logs about connections; nil means slog.Default().
	Logger *slog.Logger
	// IdleTimeout closes an origin connection that carried no request for
	// this long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConnsPerTarget bounds the HTTP/1.1 connections (in use, being
	// dialled or idle) to one target; a request beyond it waits for one
	// under its context (the connect timeout); 0 means
	// DefaultMaxConnsPerTarget. An h2 target has one connection at a time
	// (plus, briefly, up to h2MaxConns-1 going away).
	MaxConnsPerTarget int
}

// Connection bounds (issue #12 item 6; EXT: Media CDN documents none).
const (
	DefaultIdleTimeout       = 30 * time.Second
	DefaultMaxConnsPerTarget = 128
	// h2MaxConns bounds an h2 target's open connections: the current one
	// and those going away (draining their streams after a GOAWAY).
	h2MaxConns = 4
)

// Target is where one attempt goes.
type Target struct {
	Protocol string // config.ProtocolHTTP2, config.ProtocolHTTPS or config.ProtocolHTTP
	Address  string // host name or IP to dial
	Port     int
	// Host is the Host header (h2 :authority), the TLS SNI and the name the
	// certificate is verified against (HST-3). It may carry a port
	// ("media.example.com:8443"); SNI and verification use the name only.
	// Empty means Address (with Port if it is not the protocol's default).
	Host string
}

func (t Target) String() string {
	return fmt.Sprintf("%s %s (host %s)", t.Protocol, net.JoinHostPort(t.Address, strconv.Itoa(t.Port)), t.host())
}

// HostHeader is the Host header (and the name for SNI) an attempt to t
// sends.
func (t Target) HostHeader() string { return t.host() }

func (t Target) host() string {
	if t.Host != "" {
		return t.Host
	}
	if t.Port == DefaultPort(t.Protocol) {
		return hostLiteral(t.Address)
	}
	return net.JoinHostPort(t.Address, strconv.Itoa(t.Port))
}

// DefaultPort is the port a protocol uses when none is given (PRT-3).
func DefaultPort(protocol string) int {
	if protocol == config.ProtocolHTTP {
		return 80
	}
	return 443
}

// Client makes attempts to origins. It is safe for concurrent use.
type Client struct {
	rootCAs  *x509.CertPool
	resolve  map[string]string
	log      *slog.Logger
	idle     time.Duration
	maxConns int

	readers sync.Pool // *bufio.Reader of h1ReadSize, for HTTP/1.1 exchanges
	yield   func()    // between an HTTP/1.1 request and its answer (yieldForAnswer); nil: runtime.Gosched; tests count the calls

	mu         sync.Mutex
	rts        map[Target]*list.Element // of *cached, most recently used first
	lru        list.List
	maxTargets int
	closed     bool
}

// maxTargets bounds how many targets keep a transport (and idle
// connections): redirects can name any host, so without a bound the map
// would grow with them. The least recently used is dropped first.
const maxTargets = 1024

type cached struct {
	target Target
	rt     transport
}

// transport is a target's connections: *h1Pool or *h2Conn.
type transport interface{ CloseIdleConnections() }

// New returns a Client.
func New(opts Options) *Client {
	c := &Client{rootCAs: opts.RootCAs, resolve: map[string]string{}, log: opts.Logger, rts: map[Target]*list.Element{}, maxTargets: maxTargets,
		idle: cmp.Or(opts.IdleTimeout, DefaultIdleTimeout), maxConns: cmp.Or(opts.MaxConnsPerTarget, DefaultMaxConnsPerTarget)}
	for host, ip := range opts.Resolve {
		c.resolve[strings.ToLower(host)] = ip
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c
}

// Close closes the idle connections; connections in use close when their
// responses are done. The Client must not be used afterwards.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, el := range c.rts {
		closeIdle(el.Value.(*cached).rt)
	}
	c.rts = map[Target]*list.Element{}
	c.lru.Init()
}

func closeIdle(rt transport) { rt.CloseIdleConnections() }

// ErrConnectTimeout is the cancellation cause that marks an attempt's
// connect timeout (TMO-1): cancel RoundTrip's context with
// context.WithCancelCause and this cause (or let a context deadline
// pass) and the error is a connect failure. Any other cancellation is not.
var ErrConnectTimeout = errors.New("upstream: connect timeout")

// RoundTrip sends req to the target and returns the response once its
// headers have arrived. req carries the method, the URL path and query, the
// headers and the body; RoundTrip sets the scheme, the URL host and the Host
// header from t, and removes TE and other hop-by-hop headers (PRT-5).
// Redirects are returned, not followed. The response body stays readable
// until ctx ends: to bound only the wait for headers, cancel ctx from a timer
// you stop when RoundTrip returns.
//
// A non-nil error is an *Error.
func (c *Client) RoundTrip(ctx context.Context, t Target, req *http.Request) (*http.Response, error) {
	resp, _, err := c.Do(ctx, t, req)
	return resp, err
}

// Do is RoundTrip, which also returns the origin IP the response came from
// (on an error, Error.IP has the one it came from or was being dialled).
func (c *Client) Do(ctx context.Context, t Target, req *http.Request) (*http.Response, string, error) {
	fail := func(reason string, err error) (*http.Response, string, error) {
		return nil, "", &Error{Reason: reason, Target: t, Err: err}
	}
	scheme := "https"
	switch t.Protocol {
	case config.ProtocolHTTP:
		scheme = "http"
	case config.ProtocolHTTPS, config.ProtocolHTTP2:
	default:
		return fail("proxy_configuration_error", fmt.Errorf("unknown protocol %q", t.Protocol))
	}
	if t.Address == "" || t.Port <= 0 || t.Port > 65535 {
		return fail("proxy_configuration_error", fmt.Errorf("bad origin address %q port %d", t.Address, t.Port))
	}
	host := t.host()
	if !httpguts.ValidHostHeader(host) {
		return fail("http_request_error", fmt.Errorf("invalid Host %q", host))
	}
	if t.Protocol != config.ProtocolHTTP2 {
		return c.roundTripH1(ctx, t, req, scheme, host)
	}
	out := req.Clone(ctx)
	out.URL = &url.URL{Scheme: scheme, Host: host, Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	if req.URL.Opaque != "" {
		out.URL.Opaque = req.URL.Opaque
	}
	out.Host = host
	out.RequestURI = ""
	if out.Header == nil {
		out.Header = http.Header{}
	}
	RemoveHopByHop(out.Header)
	for name, values := range out.Header {
		if !httpguts.ValidHeaderFieldName(name) {
			return fail("http_request_error", fmt.Errorf("invalid header name %q", name))
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fail("http_request_error", fmt.Errorf("invalid value for header %q", name))
			}
		}
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		// Send no User-Agent rather than Go's default (an empty value
		// suppresses it in the h2 transport).
		out.Header["User-Agent"] = []string{""}
	}

	tr, err := c.roundTripper(t)
	if err != nil {
		return fail("proxy_internal_error", err)
	}
	resp, ip, connected, err := tr.(*h2Conn).roundTrip(out)
	if err != nil {
		return nil, "", c.failed(ctx, t, err, ip, connected)
	}
	return resp, ip, nil
}

// failed is the *Error of an attempt that got no response: classified,
// with the IP it had (or was dialling), logged at debug level.
func (c *Client) failed(ctx context.Context, t Target, err error, ip string, connected bool) *Error {
	e := classify(ctx, err, connected)
	e.Target = t
	if e.IP = ip; ip == "" {
		e.IP = dialedIP(err)
	}
	c.log.Debug("origin round trip failed", "target", t.String(), "reason", e.Reason, "connect_failure", e.ConnectFailure, "err", err)
	return e
}

// roundTripH1 is an attempt over HTTP/1.1 (HTTP, HTTPS) through the
// target's pool (h1pool.go).
func (c *Client) roundTripH1(ctx context.Context, t Target, req *http.Request, scheme, host string) (*http.Response, string, error) {
	uri, err := checkH1Request(req, scheme)
	if err != nil {
		return nil, "", &Error{Reason: "http_request_error", Target: t, Err: err}
	}
	rt, err := c.roundTripper(t)
	if err != nil {
		return nil, "", &Error{Reason: "proxy_internal_error", Target: t, Err: err}
	}
	resp, ip, connected, err := rt.(*h1Pool).roundTrip(ctx, req, uri, host)
	if err != nil {
		return nil, "", c.failed(ctx, t, err, ip, connected)
	}
	return resp, ip, nil
}

// hopByHop are the headers that describe one connection, not the message
// (RFC 9110 section 7.6.1, and RFC 7230's Proxy-Authenticate/-Authorization;
// TE by PRT-5): they never cross a proxy in either direction. The h2
// transport also refuses most of them. The names are in canonical form, so
// RemoveHopByHop deletes them by key without canonicalizing each.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// IsHopByHop reports whether the canonical field name k is one of the
// hop-by-hop fields RemoveHopByHop always deletes (not those a Connection
// field names).
func IsHopByHop(k string) bool { return slices.Contains(hopByHop, k) }

// RemoveHopByHop deletes the hop-by-hop headers from h, including those
// that h's Connection header names.
func RemoveHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		delete(h, name)
	}
}

func (c *Client) roundTripper(t Target) (transport, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("upstream: client closed")
	}
	if el, ok := c.rts[t]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*cached).rt, nil
	}
	if len(c.rts) >= c.maxTargets {
		old := c.lru.Remove(c.lru.Back()).(*cached)
		delete(c.rts, old.target)
		closeIdle(old.rt) // requests in flight on it finish normally
	}
	var rt transport
	if t.Protocol != config.ProtocolHTTP2 {
		rt = newH1Pool(c, t)
	} else {
		// No ReadIdleTimeout (x/net's PING health check) and no
		// IdleConnTimeout: x/net re-arms both timers after a connection
		// closed (the health check's as its read loop exits, x/net since
		// v0.23.0, golang/go#80920; the idle one as the closed
		// connection's last stream is forgotten), and nothing stops them,
		// so every closed connection, with its TLS and frame buffers
		// (about 100 KiB), stayed reachable for 30 s: under the soak's
		// GOAWAY and reset faults some 370 closed connections, 40 MB over
		// the cache's bound. A dead connection is found instead by the
		// attempt that waits out its connectTimeout on it (silent, in
		// h2conn.go); an idle one is closed by h2Conn's own timer.
		rt = newH2Conn(&http2.Transport{
			DisableCompression: true,
		}, h2MaxConns, c.idle, func(ctx context.Context) (net.Conn, error) { return c.dialTLS(ctx, t, "h2") })
	}
	c.rts[t] = c.lru.PushFront(&cached{target: t, rt: rt})
	return rt, nil
}

// dialTCP connects to the target's address (through Resolve) and port.
func (c *Client) dialTCP(ctx context.Context, t Target) (net.Conn, error) {
	addr := t.Address
	if ip, ok := c.resolve[strings.ToLower(addr)]; ok {
		addr = ip
	}
	d := net.Dialer{KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, "tcp", net.JoinHostPort(addr, strconv.Itoa(t.Port)))
}

// dialTLS connects and completes a TLS handshake offering only proto in
// ALPN, with SNI and verification against the target's host (HST-3).
func (c *Client) dialTLS(ctx context.Context, t Target, proto string) (net.Conn, error) {
	raw, err := c.dialTCP(ctx, t)
	if err != nil {
		return nil, err
	}
	name := serverName(t.host())
	cfg := &tls.Config{
		RootCAs:    c.rootCAs,
		ServerName: name, // an IP literal sends no SNI and is verified against IP SANs
		NextProtos: []string{proto},
		MinVersion: tls.VersionTLS12,
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, &handshakeError{err: err, ip: remoteIP(raw)}
	}
	got := tc.ConnectionState().NegotiatedProtocol
	if got != proto && (proto != "http/1.1" || got != "") {
		// For HTTPS an origin without ALPN speaks HTTP/1.1; for HTTP2 there
		// is no fallback (PRT-1).
		tc.Close()
		return nil, &alpnError{want: proto, got: got, ip: remoteIP(raw)}
	}
	return tc, nil
}

// serverName is the name part of a Host value, without port or brackets.
func serverName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// hostLiteral brackets an IPv6 address for use in a Host header.
func hostLiteral(addr string) string {
	if strings.Contains(addr, ":") {
		return "[" + addr + "]"
	}
	return addr
}

type handshakeError struct {
	err error
	ip  string
}

func (e *handshakeError) Error() string    { return "tls handshake: " + e.err.Error() }
func (e *handshakeError) Unwrap() error    { return e.err }
func (e *handshakeError) originIP() string { return e.ip }

type alpnError struct{ want, got, ip string }

func (e *alpnError) originIP() string { return e.ip }

// remoteIP is the IP part of a connection's remote address, once per
// connection (the attempts on it log it).
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap().String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return ""
	}
	return host
}

// dialedIP is the IP a failed dial or handshake was connecting to, if err
// says ("" when the name did not resolve, or the error is not a dial's).
func dialedIP(err error) string {
	var withIP interface{ originIP() string }
	if errors.As(err, &withIP) {
		return withIP.originIP()
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Addr != nil {
		if a, ok := opErr.Addr.(*net.TCPAddr); ok {
			return a.AddrPort().Addr().Unmap().String()
		}
	}
	return ""
}

func (e *alpnError) Error() string {
	return fmt.Sprintf("tls handshake: origin negotiated ALPN %q, want %q only", e.got, e.want)
}
