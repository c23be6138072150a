package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/reference/config"
)

// rawOrigin is a TCP server that answers each request with what respond
// writes: the HTTP/1.1 client's tests need responses net/http's server
// would never send.
type rawOrigin struct {
	ln     net.Listener
	conns  atomic.Int32
	closed atomic.Int32 // connections whose client closed them (or that the server closed)
	mu     sync.Mutex
	reqs   []string // request heads, in order
}

// startRaw serves every connection with respond, called once per request
// head read; it returns false to close the connection.
func startRaw(t *testing.T, respond func(c net.Conn, br *bufio.Reader, head string) bool) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOrigin{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.conns.Add(1)
			wg.Go(func() {
				defer o.closed.Add(1)
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					head, err := readRawHead(br)
					if err != nil {
						return
					}
					o.mu.Lock()
					o.reqs = append(o.reqs, head)
					o.mu.Unlock()
					if !respond(c, br, head) {
						return
					}
				}
			})
		}
	})
	return o
}

func readRawHead(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		b.WriteString(line)
		if line == "\r\n" {
			return b.String(), nil
		}
	}
}

func (o *rawOrigin) target(t *testing.T) Target {
	_, p, _ := net.SplitHostPort(o.ln.Addr().String())
	n, _ := strconv.Atoi(p)
	return Target{Protocol: config.ProtocolHTTP, Address: "127.0.0.1", Port: n, Host: "origin.test"}
}

func (o *rawOrigin) heads() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.reqs...)
}

func rawClient(t *testing.T) *Client {
	c := New(Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(c.Close)
	return c
}

// fixed answers every request with the same bytes and keeps the
// connection.
func fixed(resp string) func(net.Conn, *bufio.Reader, string) bool {
	return func(c net.Conn, _ *bufio.Reader, _ string) bool {
		_, err := io.WriteString(c, resp)
		return err == nil
	}
}

// Malformed responses are an http_protocol_error (a 502 upstream), not a
// connect failure, with an error naming what was wrong.
func TestH1MalformedResponses(t *testing.T) {
	for _, tc := range []struct {
		name, resp, want string
	}{
		{"status-line", "HTTP/1.1200 OK\r\n\r\n", "status line"},
		{"version", "HTTP/2.0 200 OK\r\n\r\n", "protocol version"},
		{"status-code", "HTTP/1.1 20x OK\r\n\r\n", "status code"},
		{"no-colon", "HTTP/1.1 200 OK\r\nX-Bad\r\n\r\n", "without a colon"},
		{"space-before-colon", "HTTP/1.1 200 OK\r\nX-Bad : 1\r\n\r\n", "header name"},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: 1\r\n  2\r\n\r\n", "line folding"},
		{"bad-value", "HTTP/1.1 200 OK\r\nX-A: a\x01b\r\n\r\n", "value of header"},
		{"bad-content-length", "HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "Content-Length"},
		{"negative-content-length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"},
		{"conflicting-content-length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "conflicting Content-Length"},
		{"cl-and-te", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "both Transfer-Encoding"},
		{"unknown-te", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "unsupported Transfer-Encoding"},
		{"switching-protocols", "HTTP/1.1 101 Switching Protocols\r\n\r\n", "101"},
		{"too-many-1xx", strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", maxInformational+1) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "informational"},
		{"huge-head", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", maxResponseHeadBytes) + "\r\n\r\n", "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := startRaw(t, fixed(tc.resp))
			_, _, err := roundTrip(t, rawClient(t), o.target(t), newReq(t, "GET", "/x"))
			if err == nil || IsConnectFailure(err) || Reason(err) != "http_protocol_error" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (reason %q), want http_protocol_error naming %q, not a connect failure", err, Reason(err), tc.want)
			}
		})
	}
}

// Framing: status, canonical headers, Content-Length, chunked with
// trailers, informational responses skipped, bodiless responses, and a
// close-delimited body; the connection is reused whenever it can be.
func TestH1ResponseFraming(t *testing.T) {
	for _, tc := range []struct {
		name, method, resp string
		status             int
		body               string
		contentLength      int64
		trailer            http.Header
		reused             bool
	}{
		{"content-length", "GET", "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nContent-Length: 5\r\n\r\nhello", 200, "hello", 5, nil, true},
		{"chunked-trailers", "GET", "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nX-Sum: 42\r\n\r\n", 200, "hello", -1, http.Header{"X-Sum": {"42"}}, true},
		{"informational", "GET", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, "ok", 2, nil, true},
		{"head", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", 200, "", 1000, nil, true},
		{"no-content", "GET", "HTTP/1.1 204 No Content\r\n\r\n", 204, "", 0, nil, true},
		{"not-modified", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 1000\r\n\r\n", 304, "", 0, nil, true},
		{"connection-close", "GET", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 200, "ok", 2, nil, false},
		{"http10", "GET", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, "ok", 2, nil, false},
		{"http10-keep-alive", "GET", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", 200, "ok", 2, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := startRaw(t, fixed(tc.resp))
			c := rawClient(t)
			for i := range 2 {
				resp, body, err := roundTrip(t, c, o.target(t), newReq(t, tc.method, "/x"))
				if err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
				if resp.StatusCode != tc.status || string(body) != tc.body || resp.ContentLength != tc.contentLength {
					t.Fatalf("got %d %q (ContentLength %d), want %d %q (%d)", resp.StatusCode, body, resp.ContentLength, tc.status, tc.body, tc.contentLength)
				}
				if tc.trailer != nil && resp.Trailer.Get("X-Sum") != "42" {
					t.Fatalf("trailer %v, want %v", resp.Trailer, tc.trailer)
				}
				if resp.Header.Get("Transfer-Encoding") != "" || resp.Header.Get("Trailer") != "" {
					t.Fatalf("framing headers left in the header: %v", resp.Header)
				}
			}
			if want := map[bool]int32{true: 1, false: 2}[tc.reused]; o.conns.Load() != want {
				t.Fatalf("%d connections for two requests, want %d", o.conns.Load(), want)
			}
		})
	}
	t.Run("status-and-headers", func(t *testing.T) {
		o := startRaw(t, fixed("HTTP/1.1 404 Not Here\r\nx-a: 1\r\nX-A: 2\r\nCache-Control:  max-age=5 \r\nContent-Length: 0\r\n\r\n"))
		resp, _, err := roundTrip(t, rawClient(t), o.target(t), newReq(t, "GET", "/x"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != "404 Not Here" || resp.Proto != "HTTP/1.1" || resp.ProtoMinor != 1 ||
			strings.Join(resp.Header["X-A"], ",") != "1,2" || resp.Header.Get("Cache-Control") != "max-age=5" || resp.Uncompressed {
			t.Fatalf("got %q %q %v", resp.Status, resp.Proto, resp.Header)
		}
	})
	t.Run("close-delimited", func(t *testing.T) {
		o := startRaw(t, func(c net.Conn, _ *bufio.Reader, _ string) bool {
			io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\nall of it")
			return false
		})
		resp, body, err := roundTrip(t, rawClient(t), o.target(t), newReq(t, "GET", "/x"))
		if err != nil || string(body) != "all of it" || resp.ContentLength != -1 {
			t.Fatalf("got %q, %v", body, err)
		}
	})
}

// A body cut short is io.ErrUnexpectedEOF, never a clean EOF (a truncated
// body is never cached), and the connection is not reused.
func TestH1TruncatedBodies(t *testing.T) {
	for _, tc := range []struct{ name, resp string }{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"},
		{"chunked-mid-chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\nshort"},
		{"chunked-no-last-chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nshort\r\n"},
		{"chunked-no-trailer-end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nshort\r\n0\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := startRaw(t, func(c net.Conn, _ *bufio.Reader, _ string) bool {
				io.WriteString(c, tc.resp)
				return false
			})
			_, body, err := roundTrip(t, rawClient(t), o.target(t), newReq(t, "GET", "/x"))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("body %q, err = %v, want io.ErrUnexpectedEOF", body, err)
			}
		})
	}
}

// The request as net/http writes it for what the edge sends: request-target,
// Host from the target, no hop-by-hop headers, no empty User-Agent, and the
// body's framing.
func TestH1RequestWriting(t *testing.T) {
	o := startRaw(t, func(c net.Conn, br *bufio.Reader, head string) bool {
		if strings.Contains(head, "Content-Length: 3\r\n") {
			io.CopyN(io.Discard, br, 3)
		} else if strings.Contains(head, "chunked") {
			for {
				line, err := br.ReadString('\n')
				if err != nil || line == "\r\n" {
					break
				}
			}
		}
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		return err == nil
	})
	c := rawClient(t)
	tgt := o.target(t)
	get := newReq(t, "GET", "/a%20b/c?q=1", "Connection", "X-Hop", "X-Hop", "1", "X-Keep", "v")
	get.Header["User-Agent"] = []string{""}
	post := newReq(t, "POST", "/p")
	put := newReq(t, "PUT", "/u")
	put.Body, put.ContentLength = io.NopCloser(strings.NewReader("abc")), 3
	chunked := newReq(t, "POST", "/c")
	chunked.Body, chunked.ContentLength = io.NopCloser(strings.NewReader("abcdef")), -1
	for _, r := range []*http.Request{get, post, put, chunked} {
		if _, _, err := roundTrip(t, c, tgt, r); err != nil {
			t.Fatalf("%s %s: %v", r.Method, r.URL, err)
		}
	}
	heads := o.heads()
	for i, want := range []string{
		"GET /a%20b/c?q=1 HTTP/1.1\r\nHost: origin.test\r\nX-Keep: v\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 0\r\n\r\n",
		"PUT /u HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 3\r\n\r\n",
		"POST /c HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		if heads[i] != want {
			t.Errorf("request %d:\n%q\nwant\n%q", i+1, heads[i], want)
		}
	}
	if n := o.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	bad := newReq(t, "GET", "/x")
	bad.URL.Opaque = "/a b"
	if _, _, err := roundTrip(t, c, tgt, bad); Reason(err) != "http_request_error" {
		t.Errorf("a request-target with a space: %v, want http_request_error", err)
	}
}

// Between writing a request without a body and reading its answer the
// client yields once (issue #14); a request whose body is still being
// written does not, its answer may come before the body ends.
func TestH1YieldsBeforeReadingTheAnswer(t *testing.T) {
	o := startRaw(t, func(c net.Conn, br *bufio.Reader, head string) bool {
		if strings.Contains(head, "Content-Length: 3\r\n") {
			io.CopyN(io.Discard, br, 3)
		}
		resp := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
		if strings.HasPrefix(head, "HEAD ") {
			resp = strings.TrimSuffix(resp, "ok") // a HEAD answer has no body
		}
		_, err := io.WriteString(c, resp)
		return err == nil
	})
	c := rawClient(t)
	var yields atomic.Int64
	c.yield = func() { yields.Add(1) }
	put := newReq(t, "PUT", "/u")
	put.Body, put.ContentLength = io.NopCloser(strings.NewReader("abc")), 3
	for _, tc := range []struct {
		req  *http.Request
		want int64 // yields so far
	}{
		{newReq(t, "GET", "/a"), 1},
		{newReq(t, "HEAD", "/b"), 2},
		{put, 2},
		{newReq(t, "GET", "/c"), 3},
	} {
		resp, _, err := roundTrip(t, c, o.target(t), tc.req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.req.Method, tc.req.URL, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", tc.req.Method, tc.req.URL, resp.StatusCode)
		}
		if got := yields.Load(); got != tc.want {
			t.Errorf("after %s %s: %d yields, want %d", tc.req.Method, tc.req.URL, got, tc.want)
		}
	}
	if n := o.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (each answer read whole, the connection reused)", n)
	}
}

// ATT-3, ATT-4: an idle connection the origin closed is noticed before the
// request is written, and the request goes on a new connection: one
// request at the origin, no error.
func TestH1ClosedIdleConnectionNotUsed(t *testing.T) {
	o := startRaw(t, func(c net.Conn, _ *bufio.Reader, _ string) bool {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return false // close after each response, without saying so
	})
	c := rawClient(t)
	for i := range 3 {
		if i > 0 {
			// Until the origin has closed the last connection (on loopback
			// its FIN is then at our socket): the peek cannot see a close
			// still in flight.
			waitFor(t, func() bool { return o.closed.Load() == int32(i) }, "the origin to close its connection")
		}
		if _, _, err := roundTrip(t, c, o.target(t), newReq(t, "GET", "/x")); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if n := len(o.heads()); n != 3 {
		t.Fatalf("the origin saw %d requests, want 3", n)
	}
}

// ctx cancelled while waiting for the head or reading the body closes the
// connection and unblocks the reader, with the cause.
func TestH1CancelUnblocks(t *testing.T) {
	hold := make(chan struct{})
	o := startRaw(t, func(c net.Conn, _ *bufio.Reader, head string) bool {
		if strings.HasPrefix(head, "GET /body") {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
		}
		<-hold
		return false
	})
	t.Cleanup(func() { close(hold) }) // before the server's cleanup waits for its handlers
	c := rawClient(t)
	const wait = 100 * time.Millisecond
	t.Run("head", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(wait, func() { cancel(ErrConnectTimeout) })
		start := time.Now()
		_, err := c.RoundTrip(ctx, o.target(t), newReq(t, "GET", "/head"))
		if !errors.Is(err, ErrConnectTimeout) || Reason(err) != "http_response_timeout" || time.Since(start) > wait+2*time.Second {
			t.Fatalf("err = %v (reason %q) after %v", err, Reason(err), time.Since(start))
		}
	})
	t.Run("body", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		resp, err := c.RoundTrip(ctx, o.target(t), newReq(t, "GET", "/body"))
		if err != nil {
			t.Fatal(err)
		}
		errBoom := errors.New("read timeout")
		time.AfterFunc(wait, func() { cancel(errBoom) })
		_, err = io.ReadAll(resp.Body)
		if !errors.Is(err, errBoom) {
			t.Fatalf("err = %v, want the cause", err)
		}
	})
}

// Issue #12 item 6: a request beyond MaxConnsPerTarget waits for a
// connection under its context, and gets the one released.
func TestH1WaitersHonourContext(t *testing.T) {
	o := startRaw(t, fixed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	c := New(Options{Logger: slog.New(slog.DiscardHandler), MaxConnsPerTarget: 1})
	t.Cleanup(c.Close)
	tgt := o.target(t)
	held, err := c.RoundTrip(context.Background(), tgt, newReq(t, "GET", "/held"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.RoundTrip(ctx, tgt, newReq(t, "GET", "/waits")); err == nil || !IsConnectFailure(err) {
		t.Fatalf("err = %v, want the context's deadline (a connect timeout)", err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := roundTrip(t, c, tgt, newReq(t, "GET", "/next")); done <- err }()
	waitFor(t, func() bool { return waiters(c, tgt) == 1 }, "the request to wait in line")
	io.ReadAll(held.Body) // its end hands the connection over
	held.Body.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := o.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// A response that arrives before the request body is all sent is read,
// not deadlocked on; the connection is not reused.
func TestH1EarlyResponseToBody(t *testing.T) {
	o := startRaw(t, func(c net.Conn, _ *bufio.Reader, _ string) bool {
		io.WriteString(c, "HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n")
		time.Sleep(200 * time.Millisecond) // and never read the body
		return false
	})
	c := rawClient(t)
	r := newReq(t, "POST", "/big")
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write(make([]byte, 16<<20)) // blocks when the socket is full
	r.Body, r.ContentLength = pr, 16<<20
	resp, _, err := roundTrip(t, c, o.target(t), r)
	if err != nil || resp.StatusCode != 413 {
		t.Fatalf("%v %v", resp, err)
	}
}

// Client.Close closes the idle connections at once and one in use when its
// response is done.
func TestH1CloseClient(t *testing.T) {
	o := startRaw(t, fixed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	c := rawClient(t)
	tgt := o.target(t)
	inUse, err := c.RoundTrip(context.Background(), tgt, newReq(t, "GET", "/in-use"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := roundTrip(t, c, tgt, newReq(t, "GET", "/idle")); err != nil { // on a second connection
		t.Fatal(err)
	}
	c.Close()
	waitFor(t, func() bool { return o.closed.Load() == 1 }, "the idle connection to close")
	if b, err := io.ReadAll(inUse.Body); err != nil || string(b) != "ok" {
		t.Fatalf("the response in flight: %q, %v", b, err)
	}
	inUse.Body.Close()
	waitFor(t, func() bool { return o.closed.Load() == 2 }, "the connection in use to close after its response")
}

// waiters is how many requests wait in line for a connection to t.
func waiters(c *Client, t Target) int {
	c.mu.Lock()
	el, ok := c.rts[t]
	c.mu.Unlock()
	if !ok {
		return 0
	}
	p := el.Value.(*cached).rt.(*h1Pool)
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// HTTPS: HTTP/1.1 over TLS with the target's SNI, the connection state in
// resp.TLS, and the connection reused.
func TestH1HTTPSConnectionState(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	tgt := target(t, e, config.ProtocolHTTPS, "https", "media.example.com")
	for range 2 {
		resp, _, err := roundTrip(t, c, tgt, newReq(t, "GET", "/tls"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.TLS == nil || resp.TLS.ServerName != "media.example.com" || resp.TLS.NegotiatedProtocol == "h2" {
			t.Fatalf("resp.TLS = %+v", resp.TLS)
		}
	}
	if conns := e.Journal().Query(journal.Query{Listener: "https"}).Conns; len(conns) != 1 {
		t.Fatalf("%d connections, want 1", len(conns))
	}
}

// A request body that fails (or is shorter than its ContentLength) aborts
// the connection and the attempt is an http_request_error, not a connect
// failure: the origin never got a whole request.
func TestH1RequestBodyFails(t *testing.T) {
	o := startRaw(t, func(c net.Conn, br *bufio.Reader, _ string) bool {
		io.Copy(io.Discard, br) // until the client gives up
		return false
	})
	c := rawClient(t)
	for _, tc := range []struct {
		name string
		body io.Reader
		n    int64
	}{
		{"reader-error", io.MultiReader(strings.NewReader("abc"), iotestErrReader{}), 10},
		{"short", strings.NewReader("abc"), 10},
		{"chunked-reader-error", io.MultiReader(strings.NewReader("abc"), iotestErrReader{}), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReq(t, "PUT", "/up")
			r.Body, r.ContentLength = io.NopCloser(tc.body), tc.n
			_, _, err := roundTrip(t, c, o.target(t), r)
			if err == nil || IsConnectFailure(err) || Reason(err) != "http_request_error" {
				t.Fatalf("err = %v (reason %q), want http_request_error", err, Reason(err))
			}
		})
	}
}

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errors.New("client went away") }

// Ready says whether the body's next Read returns without waiting for the
// origin (package fetch arms its read timers only for a Read that may
// wait): a Content-Length body that came with its head is ready, one the
// origin has not sent yet is not, a chunked one is not until it ended, and
// an ended body is.
func TestH1BodyReady(t *testing.T) {
	type readyBody interface{ Ready() bool }
	for _, tc := range []struct {
		name      string
		head      string
		body      string // written with the head, or after release when later
		later     bool
		wantFirst bool
	}{
		{"with its head", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "hello", false, true},
		{"not sent yet", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "hello", true, false},
		{"chunked with its head", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n", false, false},
		{"close-delimited with its head", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", "hello", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			o := startRaw(t, func(c net.Conn, _ *bufio.Reader, _ string) bool {
				if !tc.later {
					io.WriteString(c, tc.head+tc.body) // one write: one segment on loopback
				} else {
					io.WriteString(c, tc.head)
					<-release
					io.WriteString(c, tc.body)
				}
				return !strings.Contains(tc.head, "close")
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := rawClient(t).RoundTrip(ctx, o.target(t), newReq(t, "GET", "/x"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rb, ok := resp.Body.(readyBody)
			if !ok {
				t.Fatalf("%T has no Ready", resp.Body)
			}
			if got := rb.Ready(); got != tc.wantFirst {
				t.Errorf("Ready before the first Read: %v, want %v", got, tc.wantFirst)
			}
			close(release)
			b, err := io.ReadAll(resp.Body)
			if err != nil || string(b) != "hello" {
				t.Fatalf("body %q, %v", b, err)
			}
			if !rb.Ready() {
				t.Error("an ended body is not Ready")
			}
		})
	}
}

// A response is read through a buffer of h1ReadSize (a head and a 64 KiB
// body in one read), which only a connection reading a response holds: an
// idle connection gives its reader back, and the next response on any
// connection reads through it again (issue #14).
func TestH1ReaderOnlyWhileReading(t *testing.T) {
	body := strings.Repeat("x", 64<<10)
	o := startRaw(t, fixed("HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body))
	c := rawClient(t)
	tgt := o.target(t)
	idle := func() *h1Conn {
		t.Helper()
		rt, err := c.roundTripper(tgt)
		if err != nil {
			t.Fatal(err)
		}
		p := rt.(*h1Pool)
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.idle) != 1 {
			t.Fatalf("%d idle connections, want 1", len(p.idle))
		}
		return p.idle[0]
	}
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.RoundTrip(ctx, tgt, newReq(t, "GET", "/x"))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		pc := resp.Body.(*h1Body).pc
		if pc.br == nil || pc.br.Size() != h1ReadSize {
			t.Errorf("request %d: reading through %v, want a reader of %d bytes", i+1, pc.br, h1ReadSize)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || string(b) != body {
			t.Fatalf("request %d: %d bytes, %v", i+1, len(b), err)
		}
		if pc := idle(); pc.br != nil {
			t.Errorf("after request %d the idle connection holds a reader", i+1)
		}
	}
	if o.conns.Load() != 1 {
		t.Errorf("%d connections for two requests, want 1", o.conns.Load())
	}
}

// readViews reads body with Next(max) to its end.
func readViews(body *h1Body, max int) ([]byte, error) {
	var all []byte
	for {
		p, err := body.Next(max)
		all = append(all, p...)
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return all, err
		}
	}
}

// Next hands out a body's bytes as views of the connection's buffer with
// Read's framing: a Content-Length body (in one view or in pieces of max
// bytes, with its head or arriving later), a close-delimited one, and one
// cut short (io.ErrUnexpectedEOF, the connection not reused). A chunked
// body is not Viewable and Next refuses it (issue #14).
func TestH1BodyNext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		head     string
		body     string
		later    bool // the body after a pause
		max      int
		viewable bool
		want     string
		wantErr  error // nil: a clean end
		conns    int32 // connections for two requests
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "hello", false, 64 << 10, true, "hello", nil, 1},
		{"pieces", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "hello", false, 2, true, "hello", nil, 1},
		{"later", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "hello", true, 64 << 10, true, "hello", nil, 1},
		{"close-delimited", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", "all of it", false, 64 << 10, true, "all of it", nil, 2},
		{"truncated", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "short", false, 64 << 10, true, "short", io.ErrUnexpectedEOF, 2},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n", false, 64 << 10, false, "", errors.New("chunked"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{}) // a late body waits until its head was read
			o := startRaw(t, func(c net.Conn, _ *bufio.Reader, _ string) bool {
				if tc.later {
					io.WriteString(c, tc.head)
					<-release
					io.WriteString(c, tc.body)
				} else {
					io.WriteString(c, tc.head+tc.body)
				}
				return !strings.Contains(tc.head, "close") && tc.wantErr != io.ErrUnexpectedEOF
			})
			c := rawClient(t)
			for i := range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := c.RoundTrip(ctx, o.target(t), newReq(t, "GET", "/x"))
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				b := resp.Body.(*h1Body)
				if b.Viewable() != tc.viewable {
					t.Errorf("Viewable() = %v, want %v", b.Viewable(), tc.viewable)
				}
				if tc.later {
					if b.pc.br.Buffered() != 0 {
						t.Fatal("a late body is buffered with its head")
					}
					release <- struct{}{}
				}
				got, err := readViews(b, tc.max)
				_, _ = io.Copy(io.Discard, resp.Body) // a chunked body, refused by Next, is read to its end for reuse
				resp.Body.Close()
				cancel()
				switch {
				case string(got) != tc.want:
					t.Fatalf("request %d: %q, want %q", i+1, got, tc.want)
				case tc.wantErr == nil && err != nil:
					t.Fatalf("request %d: %v, want a clean end", i+1, err)
				case tc.wantErr == io.ErrUnexpectedEOF && !errors.Is(err, io.ErrUnexpectedEOF):
					t.Fatalf("request %d: %v, want io.ErrUnexpectedEOF", i+1, err)
				case tc.wantErr != nil && tc.wantErr != io.ErrUnexpectedEOF && (err == nil || !strings.Contains(err.Error(), tc.wantErr.Error())):
					t.Fatalf("request %d: %v, want an error naming %q", i+1, err, tc.wantErr)
				}
			}
			if got := o.conns.Load(); got != tc.conns {
				t.Errorf("%d connections for two requests, want %d", got, tc.conns)
			}
		})
	}
}

// The last view of a body stays intact until the next call: the connection
// (and its read buffer) does not go back to the pool before, so a second
// response read meanwhile goes through another connection and buffer
// rather than over the bytes still to be written (no mixed data).
func TestH1BodyNextHoldsTheBuffer(t *testing.T) {
	var n atomic.Int32
	o := startRaw(t, func(c net.Conn, _ *bufio.Reader, _ string) bool {
		body := strings.Repeat(string(rune('a'+n.Add(1)-1)), 1000)
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+body)
		return err == nil
	})
	c := rawClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.RoundTrip(ctx, o.target(t), newReq(t, "GET", "/x"))
	if err != nil {
		t.Fatal(err)
	}
	first := resp.Body.(*h1Body)
	view, err := first.Next(64 << 10)
	if err != nil || string(view) != strings.Repeat("a", 1000) {
		t.Fatalf("first view %q, %v", view, err)
	}
	// While the view is out, another request and its whole body.
	_, body, err := roundTrip(t, c, o.target(t), newReq(t, "GET", "/y"))
	if err != nil || string(body) != strings.Repeat("b", 1000) {
		t.Fatalf("second body %q, %v", body, err)
	}
	if string(view) != strings.Repeat("a", 1000) {
		t.Fatalf("the first view changed under it: %q", view)
	}
	if o.conns.Load() != 2 {
		t.Errorf("%d connections, want 2 (the first one held by its view)", o.conns.Load())
	}
	if p, err := first.Next(64 << 10); len(p) != 0 || err != io.EOF {
		t.Fatalf("after the last view: %q, %v, want io.EOF", p, err)
	}
	first.Close()
	// Released now: a third request reuses a connection.
	if _, body, err := roundTrip(t, c, o.target(t), newReq(t, "GET", "/z")); err != nil || len(body) != 1000 {
		t.Fatalf("third body %d bytes, %v", len(body), err)
	}
	if o.conns.Load() != 2 {
		t.Errorf("%d connections after the third request, want 2 (reused)", o.conns.Load())
	}
}
