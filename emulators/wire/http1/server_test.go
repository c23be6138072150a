package http1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

func TestHeaderFieldsInArrivalOrder(t *testing.T) {
	tests := []struct {
		name    string
		request string
	}{
		{"crlf", crlf("GET /x HTTP/1.1\nHost: example.test\nX-b: 1\nx-a:   two  \nX-B: 3\nConnection: close\n\n")},
		{"bare lf", "GET /x HTTP/1.1\nHost: example.test\nX-b: 1\nx-a:   two  \nX-B: 3\nConnection: close\n\n"},
		{"leading empty line", crlf("\nGET /x HTTP/1.1\nHost: example.test\nX-b: 1\nx-a:   two  \nX-B: 3\nConnection: close\n\n")},
	}
	want := []wire.HeaderField{
		{Name: "Host", Value: "example.test"},
		{Name: "X-b", Value: "1"},
		{Name: "x-a", Value: "two"},
		{Name: "X-B", Value: "3"},
		{Name: "Connection", Value: "close"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan []wire.HeaderField, 1)
			ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
				got <- r.Fields
				if r.Host != "example.test" || r.URL.Path != "/x" || r.Header.Values("X-B")[1] != "3" {
					t.Errorf("request = host %q path %q header %v", r.Host, r.URL.Path, r.Header)
				}
			})
			resp := ts.exchange(t, tt.request)
			if !strings.HasPrefix(resp, "HTTP/1.1 200 OK\r\n") {
				t.Fatalf("response = %q", resp)
			}
			if fields := <-got; !reflect.DeepEqual(fields, want) {
				t.Errorf("fields = %q, want %q", fields, want)
			}
		})
	}
}

func TestRequestMetadata(t *testing.T) {
	got := make(chan *wire.Request, 1)
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) { got <- r })
	c := ts.dial(t)
	fmt.Fprint(c, crlf("GET /p?q=1 HTTP/1.1\nHost: h\nConnection: close\n\n"))
	io.ReadAll(c)
	r := <-got
	if r.RemoteAddr != c.LocalAddr().String() {
		t.Errorf("RemoteAddr = %q, want %q", r.RemoteAddr, c.LocalAddr())
	}
	if r.Conn == nil || r.Conn.ID == 0 || r.StreamID != 0 || r.TLS != nil {
		t.Errorf("Conn = %+v, StreamID = %d, TLS = %v", r.Conn, r.StreamID, r.TLS)
	}
	if r.URL.RawQuery != "q=1" || r.RequestURI != "/p?q=1" {
		t.Errorf("URL = %v, RequestURI = %q", r.URL, r.RequestURI)
	}
}

func TestResponseHeadersExactlyAsSet(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		h := w.Header()
		h.Set("Content-Length", "abc")
		h.Set("X-Spaces", "  padded\t")
		h["x-lower"] = []string{"as-is"}
		h["X-Multi"] = []string{"1", "2"}
		h["X-Empty"] = []string{""}
		w.WriteHeader(299)
		io.WriteString(w, "raw body")
	})
	got := ts.exchange(t, crlf("GET / HTTP/1.1\nHost: h\n\n"))
	want := "HTTP/1.1 299 status 299\r\n" +
		"Content-Length: abc\r\n" +
		"X-Empty: \r\n" +
		"X-Multi: 1\r\n" +
		"X-Multi: 2\r\n" +
		"X-Spaces:   padded\t\r\n" +
		"x-lower: as-is\r\n" +
		"Connection: close\r\n" +
		"\r\n" +
		"raw body"
	if got != want {
		t.Errorf("response:\n got %q\nwant %q", got, want)
	}
	if r := ts.reason(t); r != "close after response: unparseable Content-Length" {
		t.Errorf("reason = %q", r)
	}
}

func TestResponseFraming(t *testing.T) {
	tests := []struct {
		name    string
		request string
		handler wire.HandlerFunc
		want    string
	}{
		{
			name:    "chunked without content-length",
			request: "GET / HTTP/1.1\nHost: h\nConnection: close\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				io.WriteString(w, "hello")
				io.WriteString(w, " world")
			},
			want: "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nConnection: close\n\nb\nhello world\n0\n\n",
		},
		{
			name:    "flush emits a chunk",
			request: "GET / HTTP/1.1\nHost: h\nConnection: close\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				io.WriteString(w, "ab")
				w.Flush()
				io.WriteString(w, "cde")
			},
			want: "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nConnection: close\n\n2\nab\n3\ncde\n0\n\n",
		},
		{
			name:    "empty chunked body",
			request: "GET / HTTP/1.1\nHost: h\nConnection: close\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {},
			want:    "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nConnection: close\n\n0\n\n",
		},
		{
			name:    "content-length",
			request: "GET / HTTP/1.1\nHost: h\nConnection: close\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("Content-Length", "5")
				w.Header().Set("Content-Type", "text/plain")
				io.WriteString(w, "hello")
			},
			want: "HTTP/1.1 200 OK\nContent-Length: 5\nContent-Type: text/plain\nConnection: close\n\nhello",
		},
		{
			name:    "trailers",
			request: "GET / HTTP/1.1\nHost: h\nConnection: close\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("Trailer", "X-Sum")
				io.WriteString(w, "hi")
				w.Header().Set("X-Sum", "42")
				w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
			},
			want: "HTTP/1.1 200 OK\nTrailer: X-Sum\nTransfer-Encoding: chunked\nConnection: close\n\n2\nhi\n0\nX-Late: yes\nX-Sum: 42\n\n",
		},
		{
			name:    "handler transfer-encoding is raw and closes",
			request: "GET / HTTP/1.1\nHost: h\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("Transfer-Encoding", "chunked")
				io.WriteString(w, "zz\r\nnot a chunk")
			},
			want: "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nConnection: close\n\nzz\nnot a chunk",
		},
		{
			name:    "http/1.0 without content-length",
			request: "GET / HTTP/1.0\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				io.WriteString(w, "old")
			},
			want: "HTTP/1.1 200 OK\nConnection: close\n\nold",
		},
		{
			name:    "handler connection header is kept",
			request: "GET / HTTP/1.1\nHost: h\nConnection: close\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("Connection", "keep-alive")
				w.Header().Set("Content-Length", "0")
			},
			want: "HTTP/1.1 200 OK\nConnection: keep-alive\nContent-Length: 0\n\n",
		},
		{
			name:    "informational response",
			request: "GET / HTTP/1.1\nHost: h\nConnection: close\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("Link", "</a.css>; rel=preload")
				w.WriteHeader(http.StatusEarlyHints)
				w.Header().Del("Link")
				w.Header().Set("Content-Length", "2")
				io.WriteString(w, "ok")
			},
			want: "HTTP/1.1 103 Early Hints\nLink: </a.css>; rel=preload\n\nHTTP/1.1 200 OK\nContent-Length: 2\nConnection: close\n\nok",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.handler)
			if got, want := ts.exchange(t, crlf(tt.request)), crlf(tt.want); got != want {
				t.Errorf("response:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestChunkedWithNetHTTPClient(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "part%d;", i)
			w.Flush()
		}
		if n := w.BodyBytes(); n != 18 {
			t.Errorf("BodyBytes = %d, want 18", n)
		}
	})
	resp, err := newClient(t, nil).Get(ts.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "part0;part1;part2;" {
		t.Fatalf("body = %q, %v", body, err)
	}
	if !reflect.DeepEqual(resp.TransferEncoding, []string{"chunked"}) {
		t.Errorf("TransferEncoding = %v", resp.TransferEncoding)
	}
	if d := resp.Header.Get("Date"); d != "" {
		t.Errorf("server added Date: %q", d)
	}
}

func TestContentLengthEnforced(t *testing.T) {
	t.Run("write past content-length", func(t *testing.T) {
		errs := make(chan error, 1)
		ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
			w.Header().Set("Content-Length", "4")
			io.WriteString(w, "abc")
			_, err := io.WriteString(w, "de")
			errs <- err
			io.WriteString(w, "d")
		})
		got := ts.exchange(t, crlf("GET / HTTP/1.1\nHost: h\nConnection: close\n\n"))
		if want := crlf("HTTP/1.1 200 OK\nContent-Length: 4\nConnection: close\n\nabcd"); got != want {
			t.Errorf("response = %q, want %q", got, want)
		}
		if err := <-errs; !errors.Is(err, http.ErrContentLength) {
			t.Errorf("overlong write error = %v", err)
		}
	})
	t.Run("short body closes the connection", func(t *testing.T) {
		ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "abc")
		})
		resp, err := newClient(t, nil).Get(ts.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, io.ErrUnexpectedEOF) || string(body) != "abc" {
			t.Errorf("body = %q, err = %v; want abc, unexpected EOF", body, err)
		}
		if r := ts.reason(t); r != "close after response: body short of Content-Length (3 of 10 bytes)" {
			t.Errorf("reason = %q", r)
		}
	})
}

func TestKeepAliveReuse(t *testing.T) {
	var calls atomic.Int32
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		calls.Add(1)
		io.WriteString(w, r.URL.Path)
	})
	client := newClient(t, nil)
	var reused []bool
	for _, path := range []string{"/one", "/two", "/three"} {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = append(reused, info.Reused) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", ts.url(path), nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != path {
			t.Errorf("body = %q, want %q", body, path)
		}
	}
	if want := []bool{false, true, true}; !reflect.DeepEqual(reused, want) {
		t.Errorf("reused = %v, want %v", reused, want)
	}
	client.CloseIdleConnections()
	if r := ts.reason(t); r != "client closed" {
		t.Errorf("reason = %q", r)
	}
}

func TestConnectionClose(t *testing.T) {
	tests := []struct {
		name       string
		request    string
		handler    wire.HandlerFunc
		wantHead   string
		wantReason string
	}{
		{
			name:       "client asks",
			request:    "GET / HTTP/1.1\nHost: h\nConnection: close\n\n",
			handler:    func(w wire.ResponseWriter, r *wire.Request) { w.Header().Set("Content-Length", "0") },
			wantHead:   "HTTP/1.1 200 OK\nContent-Length: 0\nConnection: close\n\n",
			wantReason: "close after response: client sent Connection: close",
		},
		{
			name:    "handler asks",
			request: "GET / HTTP/1.1\nHost: h\n\n",
			handler: func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("Connection", "close")
				w.Header().Set("Content-Length", "0")
			},
			wantHead:   "HTTP/1.1 200 OK\nConnection: close\nContent-Length: 0\n\n",
			wantReason: "close after response: handler set Connection: close",
		},
		{
			name:       "http/1.0 default",
			request:    "GET / HTTP/1.0\n\n",
			handler:    func(w wire.ResponseWriter, r *wire.Request) { w.Header().Set("Content-Length", "0") },
			wantHead:   "HTTP/1.1 200 OK\nContent-Length: 0\nConnection: close\n\n",
			wantReason: "close after response: HTTP/1.0 client without keep-alive",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.handler)
			if got, want := ts.exchange(t, crlf(tt.request)), crlf(tt.wantHead); got != want {
				t.Errorf("response = %q, want %q", got, want)
			}
			if r := ts.reason(t); r != tt.wantReason {
				t.Errorf("reason = %q, want %q", r, tt.wantReason)
			}
		})
	}
}

func TestHTTP10KeepAlive(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		if r.URL.Path == "/cl" {
			w.Header().Set("Content-Length", "2")
		}
		io.WriteString(w, "ok")
	})
	c := ts.dial(t)
	br := bufio.NewReader(c)
	fmt.Fprint(c, crlf("GET /cl HTTP/1.0\nConnection: keep-alive\n\n"))
	resp, body := readResponse(t, br, "GET")
	if resp.Header.Get("Connection") != "keep-alive" || body != "ok" || resp.Close {
		t.Fatalf("first response: header %v, body %q, close %v", resp.Header, body, resp.Close)
	}
	// Without Content-Length the body can only be ended by closing.
	fmt.Fprint(c, crlf("GET /raw HTTP/1.0\nConnection: keep-alive\n\n"))
	resp, body = readResponse(t, br, "GET")
	if !resp.Close || body != "ok" {
		t.Fatalf("second response: header %v, body %q", resp.Header, body)
	}
	c.Close()
	if r := ts.reason(t); r != "close after response: HTTP/1.0 response without Content-Length" {
		t.Errorf("reason = %q", r)
	}
}

func TestPipelining(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Length", fmt.Sprint(len(r.URL.Path)+len(body)))
		io.WriteString(w, r.URL.Path+string(body))
	})
	c := ts.dial(t)
	fmt.Fprint(c, crlf("GET /a HTTP/1.1\nHost: h\n\nPOST /b HTTP/1.1\nHost: h\nContent-Length: 3\n\nxyzHEAD /c HTTP/1.1\nHost: h\n\n")+
		crlf("POST /d HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n2\nqq\n0\n\nGET /e HTTP/1.1\nHost: h\nConnection: close\n\n"))
	br := bufio.NewReader(c)
	for _, want := range []struct{ method, body string }{{"GET", "/a"}, {"POST", "/bxyz"}, {"HEAD", ""}, {"POST", "/dqq"}, {"GET", "/e"}} {
		if _, body := readResponse(t, br, want.method); body != want.body {
			t.Errorf("%s: body = %q, want %q", want.method, body, want.body)
		}
	}
	c.Close()
	if r := ts.reason(t); r != "close after response: client sent Connection: close" {
		t.Errorf("reason = %q", r)
	}
}

func TestRequestBodies(t *testing.T) {
	type seen struct {
		body    string
		trailer http.Header
	}
	tests := []struct {
		name    string
		request string
		want    seen
	}{
		{"content-length", "POST / HTTP/1.1\nHost: h\nContent-Length: 5\n\nhello", seen{body: "hello"}},
		{"chunked", "POST / HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n3\nhel\n2\nlo\n0\n\n", seen{body: "hello"}},
		{"chunked with trailers", "POST / HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n5\nhello\n0\nX-Checksum: abc\n\n",
			seen{body: "hello", trailer: http.Header{"X-Checksum": {"abc"}}}},
		{"declared trailers", "POST / HTTP/1.1\nHost: h\nTrailer: X-Checksum\nTransfer-Encoding: chunked\n\n5\nhello\n0\nX-Checksum: abc\n\n",
			seen{body: "hello", trailer: http.Header{"X-Checksum": {"abc"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan seen, 1)
			ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("read body: %v", err)
				}
				if r.Method == "POST" {
					got <- seen{string(body), r.Trailer}
				}
			})
			c := ts.dial(t)
			// A second request on the same connection proves the body was
			// consumed exactly.
			fmt.Fprint(c, crlf(tt.request+"GET /next HTTP/1.1\nHost: h\nConnection: close\n\n"))
			br := bufio.NewReader(c)
			readResponse(t, br, "POST")
			if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 200 {
				t.Errorf("second response status = %d", resp.StatusCode)
			}
			if s := <-got; !reflect.DeepEqual(s, tt.want) {
				t.Errorf("handler saw %+v, want %+v", s, tt.want)
			}
		})
	}
}

func TestRequestBodyFromNetHTTPClient(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		fmt.Fprintf(w, "%s|%s", body, r.Trailer.Get("X-Trailer"))
	})
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", ts.url("/"), pr)
	req.Trailer = http.Header{"X-Trailer": nil}
	go func() {
		io.WriteString(pw, "streamed")
		req.Trailer.Set("X-Trailer", "tv")
		pw.Close()
	}()
	resp, err := newClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "streamed|tv" {
		t.Errorf("body = %q", body)
	}
}

func TestUnreadRequestBody(t *testing.T) {
	tests := []struct {
		name      string
		body      int
		wantClose bool
	}{
		{"small body is drained", 10 << 10, false},
		{"huge body closes", 1 << 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("Content-Length", "2")
				io.WriteString(w, "ok")
			})
			c := ts.dial(t)
			go func() {
				fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", tt.body)
				c.Write(make([]byte, tt.body))
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
			}()
			br := bufio.NewReader(c)
			resp, _ := readResponse(t, br, "POST")
			if resp.Close != tt.wantClose {
				t.Fatalf("first response close = %v, want %v", resp.Close, tt.wantClose)
			}
			if tt.wantClose {
				if r := ts.reason(t); r != "close after response: unread request body too large" {
					t.Errorf("reason = %q", r)
				}
				return
			}
			if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
				t.Errorf("second response = %d %q", resp.StatusCode, body)
			}
		})
	}
}

func TestResponsesWithoutBody(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		status  int
		wantErr error
	}{
		{"head", "HEAD", 200, nil},
		{"no content", "GET", 204, http.ErrBodyNotAllowed},
		{"not modified", "GET", 304, http.ErrBodyNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := make(chan error, 1)
			ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
				if r.URL.Path == "/next" {
					io.WriteString(w, "next")
					return
				}
				w.Header().Set("Content-Length", "5")
				w.WriteHeader(tt.status)
				_, err := io.WriteString(w, "hello")
				errs <- err
				if n := w.BodyBytes(); n != 0 {
					t.Errorf("BodyBytes = %d", n)
				}
			})
			c := ts.dial(t)
			fmt.Fprintf(c, "%s / HTTP/1.1\r\nHost: h\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", tt.method)
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Length: 5\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\nnext\r\n0\r\n\r\n", tt.status, http.StatusText(tt.status))
			if string(got) != want {
				t.Errorf("responses:\n got %q\nwant %q", got, want)
			}
			if err := <-errs; err != tt.wantErr {
				t.Errorf("Write error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestExpectContinue(t *testing.T) {
	t.Run("sent when the handler reads", func(t *testing.T) {
		ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Write(body)
		})
		c := ts.dial(t)
		br := bufio.NewReader(c)
		fmt.Fprint(c, crlf("POST / HTTP/1.1\nHost: h\nExpect: 100-continue\nContent-Length: 4\n\n"))
		line, err := br.ReadString('\n')
		if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
			t.Fatalf("interim line = %q, %v", line, err)
		}
		if blank, _ := br.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("after 100 Continue: %q", blank)
		}
		io.WriteString(c, "ping")
		if resp, body := readResponse(t, br, "POST"); resp.StatusCode != 200 || body != "ping" || resp.Close {
			t.Errorf("response = %d %q close=%v", resp.StatusCode, body, resp.Close)
		}
	})
	t.Run("not sent when the handler answers first", func(t *testing.T) {
		ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		})
		got := ts.exchange(t, crlf("POST / HTTP/1.1\nHost: h\nExpect: 100-continue\nContent-Length: 4\n\n"))
		if want := crlf("HTTP/1.1 413 Request Entity Too Large\nContent-Length: 0\nConnection: close\n\n"); got != want {
			t.Errorf("response = %q, want %q", got, want)
		}
	})
	t.Run("net/http client", func(t *testing.T) {
		ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Write(body)
		})
		client := newClient(t, &http.Transport{ExpectContinueTimeout: time.Minute})
		req, _ := http.NewRequest("POST", ts.url("/"), strings.NewReader("payload"))
		req.Header.Set("Expect", "100-continue")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "payload" {
			t.Errorf("body = %q", body)
		}
	})
}

func TestMalformedRequests(t *testing.T) {
	tests := []struct {
		name       string
		request    string
		wantStatus string
		wantReason string
	}{
		{"garbage request line", "HELLO\r\n\r\n", "400 Bad Request", "bad request: malformed HTTP request"},
		{"header without colon", crlf("GET / HTTP/1.1\nHost: h\nnocolon\n\n"), "400 Bad Request", "bad request: header line without colon"},
		{"obs-fold", crlf("GET / HTTP/1.1\nHost: h\nX-A: 1\n  continued\n\n"), "400 Bad Request", "bad request: obsolete line folding"},
		{"space before colon", crlf("GET / HTTP/1.1\nHost : h\n\n"), "400 Bad Request", "bad request: invalid header field name"},
		{"control character in value", crlf("GET / HTTP/1.1\nHost: h\nX-A: a\x00b\n\n"), "400 Bad Request", "bad request: invalid value"},
		{"missing host", crlf("GET / HTTP/1.1\n\n"), "400 Bad Request", "bad request: missing Host header"},
		{"two hosts", crlf("GET / HTTP/1.1\nHost: a\nHost: b\n\n"), "400 Bad Request", "bad request: too many Host headers"},
		{"bad content-length", crlf("POST / HTTP/1.1\nHost: h\nContent-Length: x\n\n"), "400 Bad Request", "bad request: bad Content-Length"},
		{"unknown transfer-encoding", crlf("POST / HTTP/1.1\nHost: h\nTransfer-Encoding: gzip\n\n"), "400 Bad Request", "bad request: unsupported transfer encoding"},
		{"http/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "505 HTTP Version Not Supported", "bad request: unsupported protocol version"},
		{"head too large", "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n",
			"431 Request Header Fields Too Large", "bad request: request head over 65536 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
				t.Errorf("handler called for %s", r.RequestURI)
			})
			got := ts.exchange(t, tt.request)
			if !strings.HasPrefix(got, "HTTP/1.1 "+tt.wantStatus+"\r\n") || !strings.Contains(got, "Connection: close\r\n") {
				t.Errorf("response = %q, want status %s", got, tt.wantStatus)
			}
			if r := ts.reason(t); !strings.HasPrefix(r, tt.wantReason) {
				t.Errorf("reason = %q, want prefix %q", r, tt.wantReason)
			} else if _, why, _ := strings.Cut(r, ": "); !strings.Contains(got, "\r\n\r\n"+why) {
				t.Errorf("response body does not name the problem %q: %q", why, got)
			}
		})
	}
}

func TestSmallHeaderLimit(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {}, withServer(func(s *Server) { s.MaxHeaderBytes = 100 }))
	got := ts.exchange(t, crlf("GET / HTTP/1.1\nHost: h\nX-Pad: "+strings.Repeat("p", 100)+"\n\n"))
	if !strings.HasPrefix(got, "HTTP/1.1 431 ") {
		t.Errorf("response = %q", got)
	}
	if got := ts.exchange(t, crlf("GET / HTTP/1.1\nHost: h\nConnection: close\n\n")); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Errorf("small request response = %q", got)
	}
}

func TestAbort(t *testing.T) {
	tests := []struct {
		name       string
		header     map[string]string
		write      int
		kind       wire.AbortKind
		wantBody   int // bytes the client reads before the error
		wantErr    func(error) bool
		wantReason string
	}{
		{
			name: "close after N bytes of content-length", header: map[string]string{"Content-Length": "1000"}, write: 100,
			kind: wire.AbortClose, wantBody: 100, wantErr: isUnexpectedEOF, wantReason: "aborted: close",
		},
		{
			name: "close mid chunked body", write: 100,
			kind: wire.AbortClose, wantBody: 100, wantErr: isUnexpectedEOF, wantReason: "aborted: close",
		},
		{
			name: "close with buffered unflushed body", header: map[string]string{"Content-Length": "100000"}, write: 50000,
			kind: wire.AbortClose, wantBody: 50000, wantErr: isUnexpectedEOF, wantReason: "aborted: close",
		},
		{
			name: "reset after N bytes", header: map[string]string{"Content-Length": "1000"}, write: 100,
			kind: wire.AbortReset, wantBody: 100, wantErr: isConnReset, wantReason: "aborted: reset",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := make(chan error, 2)
			ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.Write(make([]byte, tt.write))
				if err := w.Abort(tt.kind, 0); err != nil {
					t.Errorf("Abort: %v", err)
				}
				if n := w.BodyBytes(); n != int64(tt.write) {
					t.Errorf("BodyBytes = %d, want %d", n, tt.write)
				}
				_, err := w.Write([]byte("more"))
				after <- err
				after <- w.Flush()
			})
			resp, err := newClient(t, nil).Get(ts.url("/"))
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if len(body) != tt.wantBody || !tt.wantErr(err) {
				t.Errorf("client read %d bytes, err %v; want %d bytes and a matching error", len(body), err, tt.wantBody)
			}
			if r := ts.reason(t); r != tt.wantReason {
				t.Errorf("reason = %q, want %q", r, tt.wantReason)
			}
			for range 2 {
				if err := <-after; !errors.Is(err, wire.ErrAborted) {
					t.Errorf("Write/Flush after Abort = %v, want ErrAborted", err)
				}
			}
		})
	}
}

func TestAbortBeforeHeaders(t *testing.T) {
	for kind, reason := range map[wire.AbortKind]string{wire.AbortClose: "aborted: close", wire.AbortReset: "aborted: reset"} {
		t.Run(kind.String(), func(t *testing.T) {
			ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("X-Never", "sent")
				w.Abort(kind, 0)
			})
			resp, err := newClient(t, nil).Get(ts.url("/"))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got response %v, want an error", resp.Status)
			}
			if r := ts.reason(t); r != reason {
				t.Errorf("reason = %q, want %q", r, reason)
			}
		})
	}
}

func TestAbortRawBytes(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		io.WriteString(w, "abc")
		w.Abort(wire.AbortClose, 0)
	})
	got := ts.exchange(t, crlf("GET / HTTP/1.1\nHost: h\n\n"))
	// The buffered chunk is flushed, the final chunk never sent.
	if want := crlf("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n"); got != want {
		t.Errorf("response = %q, want %q", got, want)
	}
}

func TestAbortUnsupportedKinds(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		for _, kind := range []wire.AbortKind{wire.AbortRSTStream, wire.AbortGoAway} {
			if err := w.Abort(kind, 2); !errors.Is(err, wire.ErrUnsupported) {
				t.Errorf("Abort(%v) = %v, want ErrUnsupported", kind, err)
			}
		}
		io.WriteString(w, "still fine")
	})
	resp, err := newClient(t, nil).Get(ts.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "still fine" {
		t.Errorf("body = %q", body)
	}
}

func TestHandlerPanic(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		if r.URL.Path == "/panic" {
			io.WriteString(w, "partial")
			panic("boom")
		}
		io.WriteString(w, "fine")
	})
	client := newClient(t, &http.Transport{DisableKeepAlives: true})
	if resp, err := client.Get(ts.url("/panic")); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatal("panicking handler produced a complete response")
		}
	}
	if r := ts.reason(t); r != "handler panic: boom" {
		t.Errorf("reason = %q", r)
	}
	if logs := ts.logs.String(); !strings.Contains(logs, "boom") || !strings.Contains(logs, "handler panic") {
		t.Errorf("panic not logged: %s", logs)
	}
	resp, err := client.Get(ts.url("/ok"))
	if err != nil {
		t.Fatalf("server stopped serving after a panic: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "fine" {
		t.Errorf("body = %q", body)
	}
}

func TestTLS(t *testing.T) {
	cfg, pool := selfSignedTLS(t)
	got := make(chan *wire.Request, 1)
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		got <- r
		if r.URL.Path == "/abort" {
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "short")
			w.Abort(wire.AbortClose, 0)
			return
		}
		io.WriteString(w, "secure")
	}, withTLS(cfg))
	client := newClient(t, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}})

	resp, err := client.Get(ts.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := <-got
	if string(body) != "secure" || r.TLS == nil || !r.TLS.HandshakeComplete || r.TLS.ServerName != "localhost" {
		t.Errorf("body %q, req.TLS %+v", body, r.TLS)
	}

	resp, err = client.Get(ts.url("/abort"))
	if err != nil {
		t.Fatal(err)
	}
	<-got
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "short" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("aborted body = %q, %v", body, err)
	}
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {}, withServer(func(s *Server) { s.IdleTimeout = 50 * time.Millisecond }))
	c := ts.dial(t)
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("read: %v", err)
	}
	if r := ts.reason(t); r != "idle timeout" {
		t.Errorf("reason = %q", r)
	}
}

func TestClientGoneCancelsRequestContext(t *testing.T) {
	done := make(chan error, 1)
	ts := startServer(t, func(w wire.ResponseWriter, r *wire.Request) {
		select {
		case <-r.Context().Done():
			done <- context.Cause(r.Context())
		case <-time.After(5 * time.Second):
			done <- errors.New("context not cancelled")
		}
	})
	c := ts.dial(t)
	io.WriteString(c, crlf("GET / HTTP/1.1\nHost: h\n\n"))
	c.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "client gone") {
		t.Errorf("cause = %v", err)
	}
	ts.reason(t)
}

func TestShutdown(t *testing.T) {
	started := make(chan struct{})
	srv := &Server{Handler: wire.HandlerFunc(func(w wire.ResponseWriter, r *wire.Request) {
		close(started)
		<-r.Context().Done()
	})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server, client := tcpPair(t)
	reason := make(chan string, 1)
	go func() { reason <- srv.ServeConn(ctx, server, nil) }()
	io.WriteString(client, crlf("GET / HTTP/1.1\nHost: h\n\n"))
	<-started
	cancel()
	select {
	case r := <-reason:
		if r != "server shutdown" {
			t.Errorf("reason = %q", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeConn did not return after cancel")
	}
	if _, err := io.ReadAll(client); err != nil {
		t.Errorf("client read after shutdown: %v", err)
	}
}
