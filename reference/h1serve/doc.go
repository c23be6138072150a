// Package h1serve is the reference edge's client-facing HTTP/1.1 server:
// it serves an http.Handler on a net.Listener, one goroutine per
// connection, parsing each request head once, with the receive step's raw
// checks (reference/receive) applied as the head is read, and hands h2c
// connections (prior knowledge) to a net/http server through
// receive.H2Conn. It exists for speed (issue #14): net/http's server
// machinery plus receive.Listener's second scan of every head cost about
// a quarter of a cache hit's CPU.
//
//	srv := &h1serve.Server{Handler: edgeServer, Limits: receive.DefaultLimits(), ReadHeaderTimeout: 30 * time.Second}
//	go srv.Serve(ln)
//	defer srv.Shutdown(ctx)
//
// What a client sees is net/http's server behaviour, with the receive
// step's answers first: Content-Length with Transfer-Encoding,
// Transfer-Encoding on HTTP/1.0 and obs-fold (400), a target over
// MaxURLBytes (414), fields over MaxHeaderFields or MaxHeaderBytes (431)
// reach the handler as a placeholder request whose context carries the
// refusal (receive.WithRejection; receive.Check returns it), answered in
// order after any earlier pipelined response, and end the connection.
// What net/http refuses before any handler it refuses too, with the same
// statuses: a malformed request line, method, header name or value (400),
// a missing or repeated Host on HTTP/1.1 (400), differing Content-Lengths
// (400), a Transfer-Encoding other than chunked (501), a version other
// than 1.x (505), an Expect other than 100-continue (417).
//
// The response writer: Date unless the handler set one (formatted once a
// second); a handler's Content-Length honoured and enforced
// (http.ErrContentLength past it; short at the handler's end, the
// connection is closed); otherwise a body that ends within 4 KiB before
// any Flush gets a Content-Length and goes out with its head in one
// write, a longer or flushed one is chunked (HTTP/1.1) or ends with the
// connection (HTTP/1.0); no body for HEAD, 1xx, 204, 304; Flush and
// FlushError (http.NewResponseController); Connection: close and
// HTTP/1.0 keep-alive as net/http; 100 Continue at the body's first
// read; an unread body drained up to 256 KiB before the connection is
// reused, else closed; Content-Type sniffed as net/http does. Writes are
// buffered (8 KiB); one that overflows the buffer goes out with it in one
// gathered write (writev), so a head and a large body cost one system
// call; a body in several buffers (a stored entry's chunks) may go out
// with its head in one gathered write (BuffersWriter). A handler that
// sends the same fields in many responses may
// render them once (Render) and send them through FieldsWriter, with one
// field's value given per response (the edge's cache hits, with Age):
// the bytes are those the header map would give, without the map.
//
// Between a connection's requests, when nothing of the next head has been
// read yet, the connection's goroutine yields once (runtime.Gosched)
// before it reads: the client has only just been sent its answer, so a
// read at once would nearly always find nothing, fail and park on the
// poller. After the other connections' ready work has run, the next head
// is usually there and one read takes it, as an event loop reads a
// connection only once it is ready. With nothing else to run it returns
// at once, so a lone client waits no longer.
//
// A request's context is cancelled when the handler returns, when a write
// to the client fails, and when the client goes away while something
// waits on it: only Done and AfterFunc (which context.WithCancel and
// context.AfterFunc use) start the background read that notices it, and
// only once the wait has lasted watchDelay (10 ms), so a cache hit that
// never waits, or a proxied response from a near origin, pays no
// goroutine and no syscall for it (net/http reads in the background on
// every request); a client leaving is noticed up to 10 ms later. The read is not
// stopped when the handler returns: it becomes the wait for the next
// head, and what it reads (a pipelined request, the next one) is kept.
//
// Where it differs from net/http:
//   - Read deadlines are set coarsely: before waiting for a head, only
//     when the one set would end more than a second early; so the
//     effective timeouts are between the configured value minus a second
//     and the value. The header and idle timeouts both cover the wait
//     and the head (net/http starts ReadHeaderTimeout at the first byte).
//   - No Hijacker, no response trailers, no ReadTimeout/WriteTimeout, no
//     ConnState hook, no TLS (the reference serves clients in clear).
//   - A handler's invalid status code is logged and answered 500 (net/http
//     panics).
//   - The response header map is kept for the connection and emptied for
//     each request: a handler must not use it after it returns (net/http
//     forbids that too, but makes a new map per request).
//   - Response fields are written sorted, invalid names skipped, CR and LF
//     in values as spaces (as net/http), Transfer-Encoding is the
//     writer's own.
package h1serve
