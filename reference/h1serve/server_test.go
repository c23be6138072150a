package h1serve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// start serves h on a loopback listener and returns its address.
func start(t testing.TB, h http.Handler) (string, *Server) {
	t.Helper()
	return startServer(t, &Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
}

// startServer serves srv on a loopback listener and returns its address.
func startServer(t testing.TB, srv *Server) (string, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-errs; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve ended with %v, want http.ErrServerClosed", err)
		}
	})
	return ln.Addr().String(), srv
}

// roundTrip writes raw on a new connection and reads n responses (HEAD
// responses when head), then whether the server closed the connection.
func roundTrip(t *testing.T, addr, raw string, n int, head bool) ([]*http.Response, []string, bool) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	go io.WriteString(nc, raw)
	br := bufio.NewReader(nc)
	var resps []*http.Response
	var bodies []string
	for range n {
		var req *http.Request
		if head {
			req = &http.Request{Method: http.MethodHead}
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("response %d: %v", len(resps), err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response %d body: %v", len(resps), err)
		}
		resps, bodies = append(resps, resp), append(bodies, string(b))
	}
	_ = nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = br.ReadByte()
	var ne net.Error
	closed := err != nil && !(errors.As(err, &ne) && ne.Timeout())
	return resps, bodies, closed
}

const host = "Host: a.example\r\n"

// The response framing a handler gets, as net/http frames it.
func TestResponseFraming(t *testing.T) {
	big := strings.Repeat("x", 3*bodyBufSize)
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>hello") })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) })
	mux.HandleFunc("/flushed", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part1")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush: %v", err)
		}
		io.WriteString(w, "part2")
	})
	mux.HandleFunc("/declared", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		w.Header().Set("Content-Type", "application/x-mine")
		w.Header().Set("Date", "Mon, 01 Jan 2001 00:00:00 GMT")
		io.WriteString(w, "12345")
		if _, err := io.WriteString(w, "6"); !errors.Is(err, http.ErrContentLength) {
			t.Errorf("writing past Content-Length: %v, want http.ErrContentLength", err)
		}
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		if _, err := io.WriteString(w, "x"); !errors.Is(err, http.ErrBodyNotAllowed) {
			t.Errorf("writing a 204's body: %v, want http.ErrBodyNotAllowed", err)
		}
	})
	addr, _ := start(t, mux)
	cases := []struct {
		name, raw     string
		head          bool
		body          string
		cl            int64
		te            string
		ctype, date   string
		closed, close bool
	}{
		{name: "small: Content-Length added, sniffed type", raw: "GET /small HTTP/1.1\r\n" + host + "\r\n", body: "<html>hello", cl: 11, ctype: "text/html; charset=utf-8"},
		{name: "big: chunked", raw: "GET /big HTTP/1.1\r\n" + host + "\r\n", body: big, cl: -1, te: "chunked", ctype: "text/plain; charset=utf-8"},
		{name: "flushed: chunked", raw: "GET /flushed HTTP/1.1\r\n" + host + "\r\n", body: "part1part2", cl: -1, te: "chunked"},
		{name: "declared: honoured", raw: "GET /declared HTTP/1.1\r\n" + host + "\r\n", body: "12345", cl: 5, ctype: "application/x-mine", date: "Mon, 01 Jan 2001 00:00:00 GMT"},
		{name: "HTTP/1.0 big: close-delimited", raw: "GET /big HTTP/1.0\r\n\r\n", body: big, cl: -1, closed: true, close: true},
		{name: "HTTP/1.0 keep-alive small", raw: "GET /small HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", body: "<html>hello", cl: 11},
		{name: "HTTP/1.0 small: closed", raw: "GET /small HTTP/1.0\r\n\r\n", body: "<html>hello", cl: 11, closed: true, close: true},
		{name: "Connection: close", raw: "GET /small HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n", body: "<html>hello", cl: 11, closed: true, close: true},
		{name: "HEAD: length, no body", raw: "HEAD /small HTTP/1.1\r\n" + host + "\r\n", head: true, cl: 11},
		{name: "204: no body", raw: "GET /nocontent HTTP/1.1\r\n" + host + "\r\n", cl: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resps, bodies, closed := roundTrip(t, addr, c.raw, 1, c.head)
			resp := resps[0]
			te := strings.Join(resp.TransferEncoding, ",")
			if bodies[0] != c.body || resp.ContentLength != c.cl || te != c.te || closed != c.closed || resp.Close != c.close {
				t.Errorf("got %d bytes, Content-Length %d, Transfer-Encoding %q, closed %v, Close %v; want %d, %d, %q, %v, %v",
					len(bodies[0]), resp.ContentLength, te, closed, resp.Close, len(c.body), c.cl, c.te, c.closed, c.close)
			}
			if c.ctype != "" && resp.Header.Get("Content-Type") != c.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), c.ctype)
			}
			date := resp.Header.Get("Date")
			if _, err := http.ParseTime(date); err != nil || c.date != "" && date != c.date {
				t.Errorf("Date %q (%v), want %q", date, err, c.date)
			}
		})
	}
}

// A handler that writes fewer bytes than its Content-Length: the client
// gets what there is and the connection closed, never a reused
// connection with a short body.
func TestShortBodyCloses(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "abc")
	}))
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(nc, "GET / HTTP/1.1\r\n"+host+"\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if string(b) != "abc" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("body %q, %v; want \"abc\" and io.ErrUnexpectedEOF (the connection closed)", b, err)
	}
}

// Pipelined requests are answered in order on one connection, with their
// bodies (Content-Length, chunked) read; an unread body is drained.
func TestPipelinedWithBodies(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b []byte
		if r.URL.Path != "/unread" {
			b, _ = io.ReadAll(r.Body)
		}
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %q %d %v", r.Method, r.URL.Path, b, r.ContentLength, r.TransferEncoding))
		mu.Unlock()
		io.WriteString(w, r.URL.Path)
	}))
	raw := "POST /cl HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhello" +
		"POST /chunked HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n" +
		"POST /unread HTTP/1.1\r\n" + host + "Content-Length: 3\r\n\r\nxyz" +
		"GET /last HTTP/1.1\r\n" + host + "\r\n"
	_, bodies, closed := roundTrip(t, addr, raw, 4, false)
	if strings.Join(bodies, " ") != "/cl /chunked /unread /last" || closed {
		t.Errorf("bodies %q, closed %v; want the four paths in order, open", bodies, closed)
	}
	want := `[POST /cl "hello" 5 [] POST /chunked "abcde" -1 [chunked] POST /unread "" 3 [] GET /last "" 0 []]`
	if got := fmt.Sprint(seen); got != want {
		t.Errorf("handler saw %s\nwant %s", got, want)
	}
}

// What net/http refuses before any handler, refused the same way, and the
// connection closed; the handler never runs.
func TestProtocolRefusals(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("handler got %s %s", r.Method, r.RequestURI)
	}))
	cases := []struct {
		name, raw string
		status    int
	}{
		{"bad request line", "GET /\r\n" + host + "\r\n", 400},
		{"bad method", "G(T / HTTP/1.1\r\n" + host + "\r\n", 400},
		{"bad version", "GET / HTTP/x\r\n" + host + "\r\n", 400},
		{"HTTP/2.0 request line", "GET / HTTP/2.0\r\n" + host + "\r\n", 505},
		{"bad header name", "GET / HTTP/1.1\r\n" + host + "Bad Name: x\r\n\r\n", 400},
		{"no colon", "GET / HTTP/1.1\r\n" + host + "NoColon\r\n\r\n", 400},
		{"CTL in a value", "GET / HTTP/1.1\r\n" + host + "X: a\x01b\r\n\r\n", 400},
		{"missing Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"two Hosts", "GET / HTTP/1.1\r\n" + host + host + "\r\n", 400},
		{"differing Content-Lengths", "POST / HTTP/1.1\r\n" + host + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
		{"bad Content-Length", "POST / HTTP/1.1\r\n" + host + "Content-Length: +1\r\n\r\na", 400},
		{"gzip transfer coding", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\n\r\n", 501},
		{"bad target", "GET a b HTTP/1.1\r\n" + host + "\r\n", 400},
		{"Expect other than 100-continue", "GET / HTTP/1.1\r\n" + host + "Expect: teapot\r\n\r\n", 417},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resps, _, closed := roundTrip(t, addr, c.raw, 1, false)
			if resps[0].StatusCode != c.status || !closed {
				t.Errorf("got %d, closed %v; want %d and closed", resps[0].StatusCode, closed, c.status)
			}
		})
	}
}

// An unread request body is drained up to maxDrain so the connection can
// be reused; a larger one closes the connection (announced on the
// response, which is not yet out).
func TestUnreadBodyBound(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for _, c := range []struct {
		size   int
		closed bool
	}{{maxDrain, false}, {maxDrain + 1, true}} {
		raw := fmt.Sprintf("POST / HTTP/1.1\r\n"+host+"Content-Length: %d\r\n\r\n%s", c.size, strings.Repeat("b", c.size))
		resps, _, closed := roundTrip(t, addr, raw, 1, false)
		if closed != c.closed || resps[0].Close != c.closed {
			t.Errorf("%d unread bytes: closed %v, Connection: close %v; want %v", c.size, closed, resps[0].Close, c.closed)
		}
	}
}

// The response header map is kept for the connection (issue #14), so
// each request must start with it empty: a field one response set is not
// in the next one's, on the same connection, and a header grown past
// what is kept is let go without losing the fields of the next response.
func TestResponseHeaderFreshPerRequest(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []int // each handler's header size at its start
	)
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, len(w.Header()))
		mu.Unlock()
		switch r.URL.Path {
		case "/many":
			for i := range maxKeptFields + 1 {
				w.Header().Set(fmt.Sprintf("X-F%d", i), "v")
			}
		case "/one":
			w.Header().Set("X-Only-Once", "yes")
		}
		io.WriteString(w, r.URL.Path)
	}))
	raw := "GET /one HTTP/1.1\r\n" + host + "\r\n" + "GET /plain HTTP/1.1\r\n" + host + "\r\n" +
		"GET /many HTTP/1.1\r\n" + host + "\r\n" + "GET /one HTTP/1.1\r\n" + host + "\r\n" + "GET /plain HTTP/1.1\r\n" + host + "\r\n"
	resps, bodies, _ := roundTrip(t, addr, raw, 5, false)
	for i, want := range []string{"yes", "", "", "yes", ""} {
		if got := resps[i].Header.Get("X-Only-Once"); got != want || bodies[i] == "" {
			t.Errorf("response %d (%s): X-Only-Once %q, want %q", i, bodies[i], got, want)
		}
	}
	if n := len(resps[2].Header); n < maxKeptFields+1 {
		t.Errorf("/many's response has %d fields, want at least %d", n, maxKeptFields+1)
	}
	if _, ok := resps[3].Header["X-F0"]; ok {
		t.Error("a field of /many is in the next response")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 5 {
		t.Errorf("%d handler calls, want 5", len(seen))
	}
	for i, n := range seen {
		if n != 0 {
			t.Errorf("request %d's handler found %d fields in its response header", i, n)
		}
	}
}

// Between keep-alive requests a connection yields once before it reads
// the next head (issue #14: the read would find nothing yet), but not
// while the next head is already buffered (pipelined), and the answers
// are the same either way.
func TestYieldBeforeNextHead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pipelined bool
		want      int64 // yields: after each response whose next head is not buffered
	}{
		{"one request at a time", false, 3},
		{"three pipelined in one write", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var yields atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) })
			addr, srv := startServer(t, &Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
				Logger: slog.New(slog.DiscardHandler), yield: func() { yields.Add(1) }})
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(nc)
			paths := []string{"/a", "/b", "/c"}
			if tc.pipelined {
				var raw strings.Builder
				for _, p := range paths {
					raw.WriteString("GET " + p + " HTTP/1.1\r\n" + host + "\r\n")
				}
				if _, err := io.WriteString(nc, raw.String()); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range paths {
				if !tc.pipelined {
					if _, err := io.WriteString(nc, "GET "+p+" HTTP/1.1\r\n"+host+"\r\n"); err != nil {
						t.Fatal(err)
					}
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("response to %s: %v", p, err)
				}
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK || string(b) != p {
					t.Fatalf("response to %s: %d %q", p, resp.StatusCode, b)
				}
			}
			nc.Close()
			// The connection's goroutine ends at the EOF after its last yield.
			for deadline := time.Now().Add(5 * time.Second); srv.open() > 0; {
				if time.Now().After(deadline) {
					t.Fatal("the connection was not forgotten after the client closed it")
				}
				time.Sleep(time.Millisecond)
			}
			if got := yields.Load(); got != tc.want {
				t.Errorf("%d yields, want %d", got, tc.want)
			}
		})
	}
}

// open is how many connections the server still serves.
func (s *Server) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
