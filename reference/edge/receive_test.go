package edge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeconform/edgeconform/reference/receive"
)

// receiveEdge serves r's edge as edgecache serve does: reference/h1serve
// with the default limits, HTTP/1.1 and h2c (serveH1).
func (r *rig) receiveEdge() string { return r.receiveServer().Listener.Addr().String() }

func (r *rig) receiveServer() *httptest.Server {
	r.t.Helper()
	return serveH1(r.t, r.server(), r.server().log)
}

// rawH1 writes raw to addr and reads one response; closed reports whether
// the edge closed the connection after it.
func rawH1(t *testing.T, addr, raw string) (status int, body string, closed bool) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	// The edge may answer and close before reading everything: a failed
	// write past the response is fine.
	go func() { _, _ = io.WriteString(nc, raw) }()
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = br.ReadByte()
	return resp.StatusCode, string(b), isClosed(err)
}

// isClosed reports whether a read error means the peer closed (EOF, or a
// reset when it closed with our bytes unread), not a timeout.
func isClosed(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// h2Result is what a raw h2c client saw for its stream.
type h2Result struct {
	status int    // :status of the response, 0 if none
	reset  string // the RST_STREAM code, if the stream was reset
	goAway string // a GOAWAY's code, if one came
}

// h2Conn is a raw h2c (prior knowledge) client on the framer.
type h2Conn struct {
	t    *testing.T
	nc   net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder
}

func dialH2(t *testing.T, addr string) *h2Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	c := &h2Conn{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(64<<10, nil)
	c.fr.MaxHeaderListSize = 1 << 20
	c.fr.AllowIllegalWrites = true
	c.henc = hpack.NewEncoder(&c.hbuf)
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// headers sends a header block (split into CONTINUATION frames as needed).
func (c *h2Conn) headers(stream uint32, fields [][2]string, endStream bool) {
	c.t.Helper()
	if err := c.tryHeaders(stream, fields, endStream); err != nil {
		c.t.Fatal(err)
	}
}

func (c *h2Conn) tryHeaders(stream uint32, fields [][2]string, endStream bool) error {
	c.hbuf.Reset()
	for _, f := range fields {
		if err := c.henc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			return err
		}
	}
	block := c.hbuf.Bytes()
	const max = 16384
	first := block[:min(max, len(block))]
	rest := block[len(first):]
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: first, EndStream: endStream, EndHeaders: len(rest) == 0}); err != nil {
		return err
	}
	for len(rest) > 0 {
		n := min(max, len(rest))
		if err := c.fr.WriteContinuation(stream, n == len(rest), rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// wait reads frames until stream has a response, a reset, or the
// connection a GOAWAY.
func (c *h2Conn) wait(stream uint32) h2Result {
	c.t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.t.Fatalf("reading frames for stream %d: %v", stream, err)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID == stream {
				var st int
				fmt.Sscan(f.PseudoValue("status"), &st)
				return h2Result{status: st}
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == stream {
				return h2Result{reset: f.ErrCode.String()}
			}
		case *http2.GoAwayFrame:
			return h2Result{goAway: f.ErrCode.String()}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.fr.WriteSettingsAck()
			}
		}
	}
}

func get(path, authority string, extra ...[2]string) [][2]string {
	return append([][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", authority}, {":path", path}}, extra...)
}

func post(path string, extra ...[2]string) [][2]string {
	return append([][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "client.example"}, {":path", path}}, extra...)
}

func manyFields(n, size int) [][2]string {
	var out [][2]string
	for i := range n {
		out = append(out, [2]string{fmt.Sprintf("x-f%d", i), strings.Repeat("v", size)})
	}
	return out
}

func h1Fields(fields [][2]string) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f[0] + ": " + f[1] + "\r\n")
	}
	return b.String()
}

// Issue #12 items 3 and 4: what the receive step refuses, on HTTP/1.1 and
// h2c, written byte by byte; the origin never sees any of it.
func TestReceiveRefusesOnBothProtocols(t *testing.T) {
	r := newRig(t, testConfig)
	addr := r.receiveEdge()
	const host = "Host: client.example\r\n"
	longURL := "/plain/rx/long-url?" + strings.Repeat("a", 20<<10)
	hugeURL := "/plain/rx/huge-url?" + strings.Repeat("a", 100<<10)
	cases := []struct {
		name   string
		path   string // journal prefix that must stay empty
		h1     string // raw HTTP/1.1; "" skips
		status int    // on HTTP/1.1
		h2     [][2]string
		h2body string // DATA, then trailers if h2trl
		h2trl  [][2]string
		want2  h2Result
	}{
		{name: "RFC 9112 6.1 Content-Length with Transfer-Encoding (smuggling)", path: "/upload/rx/",
			h1:     "POST /upload/rx/clte HTTP/1.1\r\n" + host + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /upload/rx/smuggled HTTP/1.1\r\n" + host + "\r\n",
			status: 400,
			h2:     post("/upload/rx/clte-h2", [2]string{"content-length", "5"}, [2]string{"transfer-encoding", "chunked"}), h2body: "hello",
			want2: h2Result{status: 400}},
		{name: "RFC 9112 6.1 Transfer-Encoding in HTTP/1.0", path: "/upload/rx/te10",
			h1: "POST /upload/rx/te10 HTTP/1.0\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", status: 400},
		{name: "RFC 9112 5.2 obs-fold (h2: an invalid field value, RFC 9113 8.2.1)", path: "/plain/rx/fold",
			h1: "GET /plain/rx/fold HTTP/1.1\r\n" + host + "X-A: one\r\n  two\r\n\r\n", status: 400,
			h2: get("/plain/rx/fold-h2", "client.example", [2]string{"x-a", "one\r\n  two"}), want2: h2Result{reset: "PROTOCOL_ERROR"}},
		{name: "MTH-2 chunked request with trailers", path: "/upload/rx/trailers",
			h1:     "POST /upload/rx/trailers HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
			status: 400,
			h2:     post("/upload/rx/trailers-h2"), h2body: "hello", h2trl: [][2]string{{"x-t", "1"}},
			want2: h2Result{reset: "PROTOCOL_ERROR"}},
		{name: "RFC 9112 7.1 bad chunk size", path: "/upload/rx/chunk",
			h1: "POST /upload/rx/chunk HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", status: 400},
		{name: "RFC 9110 7.2 Host not a valid host", path: "/plain/rx/host",
			h1: "GET /plain/rx/host HTTP/1.1\r\nHost: exa$mple..com\r\n\r\n", status: 400,
			h2: get("/plain/rx/host-h2", "exa$mple..com"), want2: h2Result{status: 400}},
		{name: "RFC 9110 7.2 Host with a bad port", path: "/plain/rx/port",
			h1: "GET /plain/rx/port HTTP/1.1\r\nHost: client.example:99999\r\n\r\n", status: 400,
			h2: get("/plain/rx/port-h2", "client.example:99999"), want2: h2Result{status: 400}},
		{name: "the placeholder header of a refused head is reserved", path: "/plain/rx/forged",
			h1: "GET /plain/rx/forged HTTP/1.1\r\n" + host + receive.RejectHeader + ": guess\r\n\r\n", status: 400,
			h2: get("/plain/rx/forged-h2", "client.example", [2]string{strings.ToLower(receive.RejectHeader), "guess"}), want2: h2Result{status: 400}},
		{name: "414 a 20 KiB URL", path: "/plain/rx/long-url",
			h1: "GET " + longURL + " HTTP/1.1\r\n" + host + "\r\n", status: 414,
			h2: get(longURL+"-h2", "client.example"), want2: h2Result{status: 414}},
		{name: "414 a 100 KiB URL", path: "/plain/rx/huge-url",
			h1: "GET " + hugeURL + " HTTP/1.1\r\n" + host + "\r\n", status: 414},
		{name: "431 300 header fields", path: "/plain/rx/fields",
			h1: "GET /plain/rx/fields HTTP/1.1\r\n" + host + h1Fields(manyFields(300, 4)) + "\r\n", status: 431,
			h2: get("/plain/rx/fields-h2", "client.example", manyFields(300, 4)...), want2: h2Result{status: 431}},
		{name: "431 70 KiB of header fields", path: "/plain/rx/bytes",
			h1: "GET /plain/rx/bytes HTTP/1.1\r\n" + host + h1Fields(manyFields(10, 7<<10)) + "\r\n", status: 431,
			h2: get("/plain/rx/bytes-h2", "client.example", manyFields(10, 7<<10)...), want2: h2Result{status: 431}},
		{name: "431 900 KiB of header fields", path: "/plain/rx/huge-head",
			h1: "GET /plain/rx/huge-head HTTP/1.1\r\n" + host + h1Fields(manyFields(90, 10<<10)) + "\r\n", status: 431,
			// net/http ends an h2 connection whose header block passes its
			// bound by far (the CONTINUATION flood defence, CVE-2023-45288).
			h2: get("/plain/rx/huge-head-h2", "client.example", manyFields(90, 10<<10)...), want2: h2Result{goAway: "PROTOCOL_ERROR"}},
	}
	for _, c := range cases {
		t.Run("h1/"+c.name, func(t *testing.T) {
			status, body, closed := rawH1(t, addr, c.h1)
			if status != c.status || !closed {
				t.Errorf("got %d (closed %v) %q, want %d and the connection closed", status, closed, body, c.status)
			}
			// The edge closed the connection: every request it read
			// from it is done, so the journal is final.
			if n := len(r.journal(c.path)); n != 0 {
				t.Errorf("%d requests under %s reached the origin", n, c.path)
			}
		})
		if c.h2 == nil {
			continue
		}
		t.Run("h2c/"+c.name, func(t *testing.T) {
			hc := dialH2(t, addr)
			hc.headers(1, c.h2, c.h2body == "")
			if c.h2body != "" {
				if err := hc.fr.WriteData(1, c.h2trl == nil, []byte(c.h2body)); err != nil {
					t.Fatal(err)
				}
				if c.h2trl != nil {
					hc.headers(1, c.h2trl, true)
				}
			}
			if got := hc.wait(1); got != c.want2 {
				t.Errorf("got %+v, want %+v", got, c.want2)
			}
			if n := len(r.journal(c.path)); n != 0 {
				t.Errorf("%d requests under %s reached the origin", n, c.path)
			}
		})
	}
}

// The receive step's framing follower must not get in the way of good
// requests: a keep-alive HTTP/1.1 connection with a Content-Length body, a
// chunked body with extensions and a GET, written at once, all reach the
// origin and are answered in order.
func TestReceiveKeepsGoodRequests(t *testing.T) {
	r := newRig(t, testConfig)
	addr := r.receiveEdge()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	const host = "Host: client.example\r\n"
	raw := "POST /upload/ok/1 HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhello" +
		"POST /upload/ok/2 HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" +
		"GET /plain/ok/3 HTTP/1.1\r\n" + host + "\r\n"
	if _, err := io.WriteString(nc, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	for i := range 3 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("response %d: %d", i+1, resp.StatusCode)
		}
	}
	reqs := r.waitEnded("/upload/ok/", 2)
	if reqs[0].Method != "POST" || reqs[1].Method != "POST" {
		t.Errorf("origin got %s and %s, want two POSTs", reqs[0].Method, reqs[1].Method)
	}
	r.waitEnded("/plain/ok/", 1)
}

// Issue #12 item 2 (last clause), CVE-2023-44487: a client that opens and
// resets streams as fast as it can gets GOAWAY ENHANCE_YOUR_CALM once past
// the reset limit, and at most that many requests reach the origin.
func TestReceiveH2RapidReset(t *testing.T) {
	r := newRig(t, testConfig)
	ts := r.receiveServer()
	hc := dialH2(t, ts.Listener.Addr().String())
	limit := receive.DefaultH2MaxResets
	sent := limit + 50
	for i := range sent {
		id := uint32(2*i + 1)
		// The edge may close before the last pairs are written.
		if hc.tryHeaders(id, get(fmt.Sprintf("/plain/rr/%d", i), "client.example"), true) != nil ||
			hc.fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
			break
		}
	}
	got := hc.wait(0)
	if got.goAway != "ENHANCE_YOUR_CALM" {
		t.Fatalf("got %+v, want GOAWAY ENHANCE_YOUR_CALM", got)
	}
	r.waitRecord("h2 client passed the reset-stream limit: GOAWAY ENHANCE_YOUR_CALM, connection closed", func(m map[string]any) bool {
		return m["max_resets"] == float64(limit)
	})
	_ = hc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, hc.nc); err != nil && !isClosed(err) {
		t.Fatalf("the connection stayed open after the GOAWAY: %v", err)
	}
	// The edge delivered at most limit+1 HEADERS frames to net/http before
	// the GOAWAY, so no more handlers can start. Each origin request has
	// its handler's log record once that handler is done: wait until every
	// request in the journal has one (h2 handlers can outlive their closed
	// connection, so ts.Close alone is no barrier for them).
	ts.Close()
	count := func() (logged, origin int) {
		for _, rec := range r.logs.records("client request") {
			if u, _ := rec["uri"].(string); strings.HasPrefix(u, "/plain/rr/") {
				logged++
			}
		}
		return logged, len(r.journal("/plain/rr/"))
	}
	logged, origin := count()
	for deadline := time.Now().Add(10 * time.Second); logged < origin && time.Now().Before(deadline); logged, origin = count() {
		time.Sleep(5 * time.Millisecond)
	}
	if logged > limit+1 {
		t.Errorf("%d requests handled, want at most %d (the limit and the one past it)", logged, limit+1)
	}
	if origin > limit+1 {
		t.Errorf("%d requests reached the origin, want at most %d", origin, limit+1)
	}
	t.Logf("%d pairs sent, %d requests logged, %d reached the origin", sent, logged, origin)
}

// A refused head pipelined behind a good request refuses only itself: the
// good request is answered from the origin, the bad one gets 400, and the
// connection closes (RFC 9112 6.1, 9.3.2).
func TestReceivePipelinedRefusal(t *testing.T) {
	r := newRig(t, testConfig)
	addr := r.receiveEdge()
	for i := range 5 { // the bad head may be read while the first is handled, or after
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		good := fmt.Sprintf("/plain/pipe/good-%d", i)
		raw := "GET " + good + " HTTP/1.1\r\nHost: client.example\r\n\r\n" +
			"POST /plain/pipe/bad HTTP/1.1\r\nHost: client.example\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
		if _, err := io.WriteString(nc, raw); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(nc)
		var got []int
		for range 2 {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("round %d: reading a response: %v (have %v)", i, err, got)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got = append(got, resp.StatusCode)
		}
		nc.Close()
		if got[0] != 200 || got[1] != 400 {
			t.Errorf("round %d: statuses %v, want [200 400]", i, got)
		}
		// LOG-1: the refusal is a client request record of its own.
		r.waitRecord("client request", func(m map[string]any) bool {
			e, _ := m["error"].(string)
			return m["status"] == 400.0 && strings.Contains(e, "Content-Length and Transfer-Encoding")
		})
		if n := len(r.journal(good)); n != 1 {
			t.Errorf("round %d: %d origin requests for the good one, want 1", i, n)
		}
	}
	if n := len(r.journal("/plain/pipe/bad")) + len(r.journal("/")) - len(r.journal("/plain/")); n != 0 {
		t.Errorf("%d requests for the refused head reached the origin", n)
	}
}
