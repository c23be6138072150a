// Package receive is the reference edge's receive step: what a client may
// send before the edge answers it itself, never forwarding any of it to an
// origin (issue #12 items 2-4).
//
// It has two halves, because net/http parses and normalises some things
// before a handler sees them (textproto unfolds obs-fold; a request with
// both Content-Length and Transfer-Encoding loses its Content-Length):
//
//   - Listener wraps the client listener. On HTTP/1.1 it holds each
//     request head back until it is complete (bounded by the limits) and
//     checks it raw: Content-Length with Transfer-Encoding (RFC 9112 6.1),
//     Transfer-Encoding in HTTP/1.0, obs-fold (RFC 9112 5.2), a request
//     target over MaxURLBytes (414), header fields over MaxHeaderFields or
//     MaxHeaderBytes (431). It follows the body's framing (Content-Length,
//     chunks, trailer section) to find the next head; body bytes go
//     straight through. A refused head reaches net/http as a placeholder
//     request carrying the connection's random token (RejectHeader), which
//     the handler answers with the refusal and Connection: close, after
//     any earlier pipelined response. On h2c (prior knowledge) it counts
//     the client's RST_STREAM frames: past H2MaxResets in H2ResetWindow the
//     connection gets GOAWAY ENHANCE_YOUR_CALM, slipped in between two of
//     the server's frames, and is closed (rapid reset, CVE-2023-44487;
//     net/http alone only bounds the handlers a connection runs at once).
//     Request trailers on h2 (which net/http would drop silently) become a
//     stream error (RST_STREAM PROTOCOL_ERROR).
//   - Check, called by the handler (edge.Server does, first thing), for
//     both protocols: the placeholder above, the limits again (on h2 they
//     can only be checked here), the Host or :authority (ValidHost: 400),
//     and a read-ahead of up to BodyPeekBytes of a request body before
//     anything is forwarded, so that a bad chunk size (RFC 9112 7.1) or
//     trailers (MTH-2) are a 400 that never reaches an origin; past the
//     read-ahead, trailers end the body in an error, so the origin's copy
//     is cut short rather than completed without them.
//
// Configure sets an http.Server up for both: HTTP/1.1 and h2c, net/http's
// own MaxHeaderBytes above the limits (so the answers that name the limit
// come first; h2 advertises it as SETTINGS_MAX_HEADER_LIST_SIZE), the
// connection in each request's context, and a guard that answers a
// placeholder even for a handler that does not call Check. Serve it on
// Listener with the same Limits:
//
//	srv := &http.Server{Handler: edgeServer, ReadHeaderTimeout: 30 * time.Second}
//	lim := receive.DefaultLimits()
//	receive.Configure(srv, lim, log)
//	go srv.Serve(receive.Listener(ln, lim, log))
//
// With httptest: NewUnstartedServer(h), Configure(ts.Config, ...),
// ts.Listener = Listener(ts.Listener, ...), ts.Start(). An edge served
// without Listener (plain httptest.NewServer) still runs Check: it then
// lacks the raw HTTP/1.1 checks and the h2 reset limit.
//
// reference/h1serve, the reference's own HTTP/1.1 server (edgecache
// serve's default), parses each head once and applies the raw checks as
// it reads, through this package's functions (Limits.TargetTooLong,
// LineTooLong, FieldsTooLarge, ObsFold, Framing): a head it refuses
// reaches the handler as a placeholder whose context carries the refusal
// (WithRejection; Check returns it), and an h2c connection goes to an
// http.Server set up by Configure, wrapped by H2Conn as Listener wraps it.
// Listener stays for net/http's server (--http1-server=net/http).
//
// What net/http already refuses itself is left to it: on h2 a
// Transfer-Encoding or other connection-specific field is a 400 (RFC 9113
// 8.2.2), a field value with CR or LF (h2's obs-fold) a stream error, a
// header list over MaxHeaderBytes a 431; on HTTP/1.1 a Transfer-Encoding
// other than chunked a 501, differing Content-Lengths a 400.
package receive
