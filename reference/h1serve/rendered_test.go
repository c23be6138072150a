package h1serve

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// A response sent with rendered fields (Render, WriteFields) is byte for
// byte the response the same header map gives through WriteHeader, for
// GET, HEAD and HTTP/1.0, a body within and past the 4 KiB held back, a
// Content-Length or none, sniffing or not, the handler's Date or the
// server's, Connection from either side, fields the writer skips or
// mends; and WriteFields refuses what it cannot render.
func TestRenderedFieldsAsTheMap(t *testing.T) {
	base := http.Header{
		"Accept-Ranges":  {"bytes"},
		"Age":            {"17"},
		"Cache-Status":   {"edge; hit"},
		"Content-Length": {"1024"},
		"Content-Type":   {"application/octet-stream"},
		"Date":           {"Wed, 02 Dec 2026 16:20:33 GMT"},
		"Etag":           {`"abc"`},
		"Vary":           {"Accept", "Origin"},
		"X-Early":        {"  padded  "},
	}
	with := func(edit func(h http.Header)) http.Header {
		h := base.Clone()
		edit(h)
		return h
	}
	for _, tc := range []struct {
		name    string
		header  http.Header
		request string // the first request's line and fields
		body    int
	}{
		{"GET", base, "GET /x HTTP/1.1\r\nHost: a\r\n", 1024},
		{"HEAD", base, "HEAD /x HTTP/1.1\r\nHost: a\r\n", 1024},
		{"HTTP/1.0", base, "GET /x HTTP/1.0\r\n", 1024},
		{"HTTP/1.0 keep-alive", base, "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n", 1024},
		{"client close", base, "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n", 1024},
		{"large body", with(func(h http.Header) { h.Set("Content-Length", "20000") }), "GET /x HTTP/1.1\r\nHost: a\r\n", 20000},
		{"no length, small", with(func(h http.Header) { h.Del("Content-Length") }), "GET /x HTTP/1.1\r\nHost: a\r\n", 100},
		{"no length, large", with(func(h http.Header) { h.Del("Content-Length") }), "GET /x HTTP/1.1\r\nHost: a\r\n", 9000},
		{"sniffed", with(func(h http.Header) { h.Del("Content-Type"); h.Set("Content-Length", "5") }), "GET /x HTTP/1.1\r\nHost: a\r\n", 5},
		{"server date", with(func(h http.Header) { h.Del("Date") }), "GET /x HTTP/1.1\r\nHost: a\r\n", 1024},
		{"handler close", with(func(h http.Header) { h.Set("Connection", "close") }), "GET /x HTTP/1.1\r\nHost: a\r\n", 1024},
		{"mended and skipped", with(func(h http.Header) {
			h["X-Crlf"] = []string{"a\r\nb"}
			h["Bad Name"] = []string{"v"}
			h["Transfer-Encoding"] = []string{"gzip"}
		}), "GET /x HTTP/1.1\r\nHost: a\r\n", 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Repeat([]byte("0123456789"), tc.body/10+1)[:tc.body]
			fields := Render(tc.header, "Age")
			if fields == nil {
				t.Fatal("Render refused the header")
			}
			age := strings.Join(tc.header["Age"], "")
			addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/map":
					for k, v := range tc.header {
						w.Header()[k] = v
					}
					w.WriteHeader(http.StatusOK)
				case "/fields":
					if !w.(FieldsWriter).WriteFields(http.StatusOK, fields, age) {
						t.Error("WriteFields refused a 200")
					}
				default:
					io.WriteString(w, "end")
					return
				}
				w.Write(body)
			}))
			get := func(path string) string {
				raw := strings.Replace(tc.request, "/x", path, 1) + "\r\nGET /end HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
				return rawExchange(t, addr, raw)
			}
			want, got := get("/map"), get("/fields")
			if got != want {
				t.Errorf("rendered fields:\n%q\nthe map:\n%q", got, want)
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		if Render(http.Header{"Content-Length": {"x"}}, "Age") != nil {
			t.Error("Render took an invalid Content-Length")
		}
		if Render(http.Header{}, "age") != nil || Render(http.Header{}, "") != nil {
			t.Error("Render took a name that is not canonical")
		}
		f := Render(http.Header{"Etag": {"e"}}, "Age")
		results := map[string]bool{}
		addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fw := w.(FieldsWriter)
			results["304"] = fw.WriteFields(http.StatusNotModified, f, "1")
			results["nil"] = fw.WriteFields(http.StatusOK, nil, "1")
			w.WriteHeader(http.StatusOK)
			results["after WriteHeader"] = fw.WriteFields(http.StatusOK, f, "1")
		}))
		rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		for k, ok := range results {
			if ok {
				t.Errorf("WriteFields took %s", k)
			}
		}
		if len(results) != 3 {
			t.Fatalf("%d refusals checked, want 3", len(results))
		}
	})
}

var serverDate = regexp.MustCompile(`Date: [A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT\r\n`)

// rawExchange writes raw on a new connection and returns all the server
// sent until it closed, every Date value but the fixed one made "-".
func rawExchange(t *testing.T, addr, raw string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(nc, raw); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	return serverDate.ReplaceAllStringFunc(string(b), func(s string) string {
		if strings.Contains(s, "16:20:33") {
			return s
		}
		return "Date: -\r\n"
	})
}

// A body written with WriteBuffers is on the wire byte for byte what a
// Write of each buffer gives: with a Content-Length (gathered with the
// head), without one (chunked), for HEAD, within the 4 KiB held back,
// sniffed, and past the declared length (ErrContentLength, what fitted
// sent).
func TestWriteBuffersAsWrites(t *testing.T) {
	part := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }
	big := [][]byte{part(64<<10, 'a'), part(64<<10, 'b'), part(1000, 'c')}
	for _, tc := range []struct {
		name    string
		length  string // Content-Length, "" for none
		request string
		bufs    [][]byte
		wantErr error
	}{
		{"declared", "132072", "GET /x HTTP/1.1\r\nHost: a\r\n", big, nil},
		{"no length", "", "GET /x HTTP/1.1\r\nHost: a\r\n", big, nil},
		{"HEAD", "132072", "HEAD /x HTTP/1.1\r\nHost: a\r\n", big, nil},
		{"small", "30", "GET /x HTTP/1.1\r\nHost: a\r\n", [][]byte{part(10, 'a'), part(20, 'b')}, nil},
		{"sniffed", "132072", "GET /x HTTP/1.1\r\nHost: a\r\n", append([][]byte{{}}, big...), nil},
		{"past the length", "70000", "GET /x HTTP/1.1\r\nHost: a\r\n", big, http.ErrContentLength},
		{"HTTP/1.0", "132072", "GET /x HTTP/1.0\r\n", big, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			errs := map[string]error{}
			addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/end" {
					io.WriteString(w, "end")
					return
				}
				if tc.length != "" {
					w.Header().Set("Content-Length", tc.length)
				}
				if tc.name != "sniffed" {
					w.Header().Set("Content-Type", "application/octet-stream")
				}
				var err error
				if r.URL.Path == "/buffers" {
					_, err = w.(BuffersWriter).WriteBuffers(tc.bufs)
				} else {
					for _, b := range tc.bufs {
						if _, err = w.Write(b); err != nil {
							break
						}
					}
				}
				mu.Lock()
				errs[r.URL.Path] = err
				mu.Unlock()
			}))
			get := func(path string) string {
				raw := strings.Replace(tc.request, "/x", path, 1) + "\r\nGET /end HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
				return rawExchange(t, addr, raw)
			}
			want, got := get("/writes"), get("/buffers")
			if got != want {
				t.Errorf("WriteBuffers sent %d bytes:\n%.300q\nWrite of each %d:\n%.300q", len(got), got, len(want), want)
			}
			mu.Lock()
			defer mu.Unlock()
			if errs["/buffers"] != tc.wantErr || errs["/writes"] != tc.wantErr {
				t.Errorf("errors: WriteBuffers %v, Write of each %v; want %v", errs["/buffers"], errs["/writes"], tc.wantErr)
			}
		})
	}
}
