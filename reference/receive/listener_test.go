package receive

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Large bodies go straight through (no copy) and the follower still finds
// the next head after them: a 100 KiB Content-Length body, then a 100 KiB
// chunked one, then a head with both Content-Length and Transfer-Encoding,
// on one connection written at once. The handler sees the two bodies whole
// and never the third request (RFC 9112 6.1).
func TestListenerFollowsLargeBodies(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %d %v", r.Method, r.URL.Path, n, err))
		mu.Unlock()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	l := DefaultLimits()
	Configure(srv, l, slog.New(slog.DiscardHandler))
	go srv.Serve(Listener(ln, l, slog.New(slog.DiscardHandler)))
	defer srv.Close()

	body := strings.Repeat("b", 100<<10)
	var chunked strings.Builder
	for i := 0; i < len(body); i += 30000 {
		part := body[i:min(i+30000, len(body))]
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", len(part), part)
	}
	chunked.WriteString("0\r\n\r\n")
	const host = "Host: a.example\r\n"
	raw := "POST /one HTTP/1.1\r\n" + host + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body +
		"POST /two HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n" + chunked.String() +
		"POST /three HTTP/1.1\r\n" + host + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(nc, raw)
	br := bufio.NewReader(nc)
	var statuses []int
	for range 3 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("after %v: %v", statuses, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"POST /one 102400 <nil>", "POST /two 102400 <nil>"}
	if fmt.Sprint(statuses) != "[200 200 400]" || fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("statuses %v, handler saw %q; want [200 200 400] and %q", statuses, seen, want)
	}
}
