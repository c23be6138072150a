package h1serve

import (
	"bufio"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/reference/receive"
)

var fuzzSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n",
	"GET http://a.example/x?y HTTP/1.1\r\nHost: b.example\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
	"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
	"POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET / HTTP/1.0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX:  spaced \t\r\nx-lower: v\r\nX: again\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\n\n",
	"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n",
	"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
}

// readAndParse runs raw through the server's head reader and parser.
func readAndParse(raw string) (*parsed, error) {
	br := bufio.NewReaderSize(strings.NewReader(raw), 4<<10)
	h, _, err := readHead(br, nil, receive.DefaultLimits(), nil)
	if err != nil {
		return nil, err
	}
	p := &parsed{}
	return p, parseHead(h, p)
}

// The parser never panics, and what it accepts net/http's
// http.ReadRequest accepts with the same method, target, Host, headers
// and framing (differential: the refusals may differ only where the
// receive step refuses more).
func FuzzParseHead(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := readAndParse(raw)
		if err != nil {
			return
		}
		req, rerr := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if rerr != nil {
			// net/http's own server refuses these too, after ReadRequest.
			t.Fatalf("accepted what http.ReadRequest refuses (%v):\n%q", rerr, raw)
		}
		if req.Method != p.method || req.RequestURI != p.target || req.Host != p.host || req.URL.String() != p.url.String() {
			t.Fatalf("%q: got %s %s host %q url %q; net/http %s %s host %q url %q", raw,
				p.method, p.target, p.host, p.url, req.Method, req.RequestURI, req.Host, req.URL)
		}
		if req.ContentLength != p.contentLength && !(p.chunked && req.ContentLength == -1) {
			t.Fatalf("%q: Content-Length %d, net/http %d", raw, p.contentLength, req.ContentLength)
		}
		for k, vs := range req.Header {
			if k == "Transfer-Encoding" || k == "Content-Length" && p.chunked {
				continue
			}
			if !slices.Equal(vs, p.header[k]) {
				t.Fatalf("%q: header %s = %q, net/http %q", raw, k, p.header[k], vs)
			}
		}
		if len(p.header) > len(req.Header) {
			t.Fatalf("%q: header %v, net/http %v", raw, p.header, req.Header)
		}
	})
}

// The seeds parse as expected: what the handler gets, and which are
// refused, by whom.
func TestParseSeeds(t *testing.T) {
	for _, raw := range fuzzSeeds {
		p, err := readAndParse(raw)
		var rej *receive.Error
		var perr *protoError
		switch {
		case strings.Contains(raw, " folded"):
			if !errors.As(err, &rej) || rej.Status != 400 {
				t.Errorf("%q: %v, want the receive step's obs-fold 400", raw, err)
			}
		case strings.Contains(raw, "%zz"):
			if !errors.As(err, &perr) || perr.status != 400 {
				t.Errorf("%q: %v, want a 400 as net/http", raw, err)
			}
		case err != nil:
			t.Errorf("%q: %v", raw, err)
		case strings.Contains(raw, "X:  spaced"):
			if got := p.header["X"]; !slices.Equal(got, []string{"spaced", "again"}) || p.header.Get("X-Lower") != "v" {
				t.Errorf("%q: header %v", raw, p.header)
			}
		case strings.HasPrefix(raw, "OPTIONS"):
			if p.url.Path != "*" {
				t.Errorf("%q: URL %v, want *", raw, p.url)
			}
		}
	}
}

// Host (RFC 9112 3.2) is the request's Host, never one of its header
// fields, as with net/http: required on HTTP/1.1, refused twice or
// malformed, and the absolute target's authority wins over it.
func TestParseHost(t *testing.T) {
	for _, c := range []struct {
		raw, host string
		status    int // 0: accepted
	}{
		{"GET / HTTP/1.1\r\nHost: a.example:8080\r\n\r\n", "a.example:8080", 0},
		{"GET / HTTP/1.1\r\nUser-Agent: x\r\nhost: b\r\nAccept: */*\r\n\r\n", "b", 0},
		{"GET http://t.example/x HTTP/1.1\r\nHost: h.example\r\n\r\n", "t.example", 0},
		{"GET / HTTP/1.0\r\n\r\n", "", 0},
		{"GET / HTTP/1.1\r\n\r\n", "", 400},
		{"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", "", 400},
		{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "", 400},
	} {
		p, err := readAndParse(c.raw)
		var perr *protoError
		switch {
		case c.status == 0 && err != nil:
			t.Errorf("%q: %v", c.raw, err)
		case c.status != 0 && (!errors.As(err, &perr) || perr.status != c.status):
			t.Errorf("%q: %v, want a %d", c.raw, err, c.status)
		case c.status == 0 && (p.host != c.host || p.header["Host"] != nil):
			t.Errorf("%q: host %q, header %v; want host %q and no Host field", c.raw, p.host, p.header, c.host)
		}
	}
}
