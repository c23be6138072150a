package receive

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestValidHost(t *testing.T) {
	cases := []struct {
		host string
		want bool
	}{
		{"", true}, // HTTP/1.0 without Host
		{"media.example.com", true},
		{"Media.Example.COM.", true},
		{"a_b.example", true},
		{"media.example.com:8080", true},
		{"127.0.0.1", true},
		{"127.0.0.1:80", true},
		{"[::1]", true},
		{"[2001:db8::1]:443", true},
		{"xn--mnchen-3ya.de", true},
		{"exa$mple.com", false},
		{"a..b", false},
		{".example", false},
		{"example.com:", false},
		{"example.com:99999", false},
		{"example.com:+80", false},
		{"example.com:80:80", false},
		{"münchen.de", false}, // RFC 3986 reg-name bytes: A-labels only
		{"[::1", false},
		{"[::1]x", false},
		{"[::1]:", false},
		{"[127.0.0.1]", false},
		{"[fe80::1%eth0]", false},
		{"exa mple.com", false},
		{strings.Repeat("a", 64) + ".example", false},
		{strings.Repeat("a.", 127) + "aa", false},
	}
	for _, c := range cases {
		if got := ValidHost(c.host); got != c.want {
			t.Errorf("RFC 9110 7.2: ValidHost(%q) = %v, want %v", c.host, got, c.want)
		}
	}
}

// The one-pass port and name checks agree with the rule read literally
// (digits that convert to at most 65535; dot-separated labels of 1-63
// allowed bytes) on random hosts built from the bytes that matter.
func TestValidHostOnePass(t *testing.T) {
	literalPort := func(p string) bool {
		if p == "" || len(p) > 5 || strings.Trim(p, "0123456789") != "" {
			return false
		}
		n, err := strconv.Atoi(p)
		return err == nil && n <= 65535
	}
	literalName := func(h string) bool {
		h = strings.TrimSuffix(h, ".")
		if h == "" || len(h) > 253 {
			return false
		}
		for _, label := range strings.Split(h, ".") {
			if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
				return false
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := "aZ09-_.:+ $\xff"
	for i := range 100000 {
		var b strings.Builder
		n := rng.IntN(12)
		if i%10 == 0 {
			n = 50 + rng.IntN(220) // around the 63 and 253 bounds
		}
		for range n {
			c := alphabet[rng.IntN(len(alphabet))]
			if i%10 == 0 && rng.IntN(8) != 0 {
				c = 'a'
			}
			b.WriteByte(c)
		}
		s := b.String()
		if got, want := validName(s), literalName(s); got != want {
			t.Fatalf("validName(%q) = %v, the rule says %v", s, got, want)
		}
		if got, want := validPort(s), literalPort(s); got != want {
			t.Fatalf("validPort(%q) = %v, the rule says %v", s, got, want)
		}
	}
	for p := range 100000 {
		s := strconv.Itoa(p)
		if got, want := validPort(s), literalPort(s); got != want {
			t.Fatalf("validPort(%q) = %v, the rule says %v", s, got, want)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := DefaultLimits().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	l := DefaultLimits()
	l.MaxHeaderBytes, l.MaxURLBytes, l.H2ResetWindow = 10, 0, 0
	err := l.Validate()
	for _, want := range []string{"max header bytes must be between 1024 and 16777216, got 10", "max URL bytes", "h2 reset window"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
}

// feedAll runs raw through a scanner in pieces of n bytes.
func feedAll(raw string, n int) (out string, rej *Error) {
	s := newH1(DefaultLimits(), "tok")
	var b []byte
	for i := 0; i < len(raw); i += n {
		var e *Error
		b, e, _, _ = s.feed([]byte(raw[i:min(i+n, len(raw))]), b)
		if e != nil && rej == nil {
			rej = e
		}
	}
	return string(b), rej
}

// The HTTP/1.1 follower gives net/http the same bytes however the client's
// writes are split, and refuses the same heads (RFC 9112 framing).
func TestH1ScanSplits(t *testing.T) {
	const host = "Host: a.example\r\n"
	good := "POST /a HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhello" +
		"POST /b HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n" +
		"GET /c HTTP/1.1\r\n" + host + "\r\n"
	cases := []struct {
		name, raw, out string
		status         int
	}{
		{"keep-alive bodies pass", good, good, 0},
		{"RFC 9112 6.1 CL and TE", "POST /a HTTP/1.1\r\n" + host + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", rejectHead("tok"), 400},
		{"RFC 9112 6.1 CL and TE in the second request", "GET /a HTTP/1.1\r\n" + host + "\r\nPOST /b HTTP/1.1\r\n" + host + "transfer-encoding: chunked\r\ncontent-length: 1\r\n\r\n",
			"GET /a HTTP/1.1\r\n" + host + "\r\n" + rejectHead("tok"), 400},
		{"RFC 9112 5.2 obs-fold with a tab", "GET /a HTTP/1.1\r\n" + host + "X: 1\r\n\t2\r\n\r\n", rejectHead("tok"), 400},
		{"a chunk's data that looks like a head is data", "POST /a HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n10\r\n\r\n X: fold\r\n\r\n \r\n0\r\n\r\n",
			"POST /a HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n10\r\n\r\n X: fold\r\n\r\n \r\n0\r\n\r\n", 0},
		{"a bad chunk size passes to net/http", "POST /a HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
			"POST /a HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 0},
		{"414", "GET /" + strings.Repeat("a", 17<<10) + " HTTP/1.1\r\n" + host + "\r\n", rejectHead("tok"), 414},
		{"431 fields", "GET /a HTTP/1.1\r\n" + strings.Repeat("X: 1\r\n", 257) + "\r\n", rejectHead("tok"), 431},
	}
	for _, c := range cases {
		for _, n := range []int{1, 7, 4096} {
			out, rej := feedAll(c.raw, n)
			status := 0
			if rej != nil {
				status = rej.Status
			}
			if out != c.out || status != c.status {
				t.Errorf("%s, pieces of %d: status %d (%v), out %q, want %d and %q", c.name, n, status, rej, clip(out), c.status, clip(c.out))
			}
		}
	}
}

func TestCheckCountsFields(t *testing.T) {
	l := DefaultLimits()
	r, _ := http.NewRequest("GET", "http://a.example/", nil)
	r.RequestURI = "/"
	for i := range l.MaxHeaderFields { // with Host, one more than allowed
		r.Header.Add("X", strings.Repeat("v", i%3))
	}
	if e := Check(r, l); e == nil || e.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("Check = %v, want 431", e)
	}
	r.Header.Del("X")
	if e := Check(r, l); e != nil {
		t.Fatalf("Check = %v, want nil", e)
	}
}

// The server-side frame follower finds the end of the frame in progress
// however the frames are split across writes.
func TestH2OutBoundary(t *testing.T) {
	frame := func(n int) []byte { return append([]byte{0, 0, byte(n), 0, 0, 0, 0, 0, 1}, make([]byte, n)...) }
	var o h2out
	if o.boundary([]byte{1, 2}) != 0 {
		t.Fatal("at the start the stream is between frames")
	}
	p := append(frame(4), frame(0)...)
	o.advance(p[:5]) // in the first frame's header
	if got := o.boundary(p[5:]); got != 8 {
		t.Fatalf("boundary = %d, want 8 (the rest of the first frame)", got)
	}
	o.advance(p[5:13])
	if got := o.boundary(p[13:]); got != 0 {
		t.Fatalf("boundary = %d, want 0", got)
	}
	o.advance(p[13:15])
	if o.between() {
		t.Fatal("mid-header is not between frames")
	}
	if got := o.boundary(p[15:]); got != 7 {
		t.Fatalf("boundary = %d, want 7", got)
	}
}
