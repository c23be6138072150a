package h1serve

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/edgeconform/edgeconform/reference/receive"
)

// checking is a handler that runs receive.Check first, as edge.Server does.
type checking struct {
	mu   sync.Mutex
	seen []string
}

func (h *checking) ChecksReceive() {}

func (h *checking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := receive.Check(r, receive.DefaultLimits())
	h.mu.Lock()
	if e != nil {
		h.seen = append(h.seen, "refused "+e.Reason)
	} else {
		h.seen = append(h.seen, r.Method+" "+r.URL.Path)
	}
	h.mu.Unlock()
	if e != nil {
		receive.Answer(w, r, e)
		return
	}
	w.Write([]byte("ok"))
}

// A head the receive step refuses reaches a receive.Checking handler as a
// placeholder whose refusal receive.Check returns, answered after the
// earlier pipelined request and ending the connection; a handler that is
// not Checking never sees it, the server answers.
func TestRefusedHeads(t *testing.T) {
	long := "/" + strings.Repeat("a", receive.DefaultMaxURLBytes)
	cases := []struct {
		name, raw string
		status    int
		reason    string
	}{
		{"obs-fold", "GET / HTTP/1.1\r\n" + host + "X: a\r\n b\r\n\r\n", 400, "obsolete line folding"},
		{"CL and TE", "POST / HTTP/1.1\r\n" + host + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "both Content-Length and Transfer-Encoding"},
		{"TE on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "HTTP/1.0"},
		{"long target", "GET " + long + " HTTP/1.1\r\n" + host + "\r\n", 414, "request target"},
		{"too many fields", "GET / HTTP/1.1\r\n" + host + strings.Repeat("X: y\r\n", receive.DefaultMaxHeaderFields+1) + "\r\n", 431, "header fields"},
		{"trailers (MTH-2)", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: v\r\n\r\n", 400, "trailers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &checking{}
			addr, _ := start(t, h)
			resps, bodies, closed := roundTrip(t, addr, "GET /first HTTP/1.1\r\n"+host+"\r\n"+c.raw, 2, false)
			if bodies[0] != "ok" || resps[1].StatusCode != c.status || !strings.Contains(bodies[1], c.reason) || !closed {
				t.Errorf("got %q, then %d %q, closed %v; want ok, then %d %q and closed", bodies[0], resps[1].StatusCode, bodies[1], closed, c.status, c.reason)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.seen) != 2 || h.seen[0] != "GET /first" || !strings.Contains(h.seen[1], c.reason) {
				t.Errorf("handler saw %q, want GET /first and the refusal", h.seen)
			}

			plain, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/first" && c.name != "trailers (MTH-2)" {
					t.Errorf("a handler that is not Checking got %s %s", r.Method, r.URL)
				}
				w.Write([]byte("ok"))
			}))
			if c.name == "trailers (MTH-2)" {
				return // found by receive.Check's read-ahead: the handler's to run
			}
			resps, _, closed = roundTrip(t, plain, "GET /first HTTP/1.1\r\n"+host+"\r\n"+c.raw, 2, false)
			if resps[1].StatusCode != c.status || !closed {
				t.Errorf("not Checking: %d, closed %v; want %d and closed", resps[1].StatusCode, closed, c.status)
			}
		})
	}
}
