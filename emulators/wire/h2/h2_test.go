package h2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

var allClients = []clientKind{xnetTLS, netHTTPTLS, xnetH2C}

// serverFor starts the server kind a client needs.
func serverFor(t testing.TB, kind clientKind, h wire.Handler, opts ...serverOption) *testServer {
	if kind == xnetH2C {
		return newH2CServer(t, h, opts...)
	}
	return newTLSServer(t, h, opts...)
}

func TestRequestFieldsInArrivalOrder(t *testing.T) {
	got := make(chan *wire.Request, 1)
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		got <- r
		w.WriteHeader(http.StatusNoContent)
	}))
	rc := dialRaw(t, ts)
	rc.handshake()
	sent := []string{
		":method", "GET", ":scheme", "https", ":path", "/a/b?x=1&y=2", ":authority", "example.test:8443",
		"zz-last", "1", "aa-first", "2", "x-dup", "one", "cookie", "a=1", "x-dup", "two", "cookie", "b=2",
	}
	rc.request(1, true, sent...)
	resp := rc.readResponse(1)

	r := <-got
	var want []wire.HeaderField
	for i := 0; i < len(sent); i += 2 {
		want = append(want, wire.HeaderField{Name: sent[i], Value: sent[i+1]})
	}
	if !reflect.DeepEqual(r.Fields, want) {
		t.Errorf("Fields =\n %v\nwant\n %v", r.Fields, want)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Method", r.Method, "GET"},
		{"URL", r.URL.String(), "https://example.test:8443/a/b?x=1&y=2"},
		{"RequestURI", r.RequestURI, "/a/b?x=1&y=2"},
		{"Host", r.Host, "example.test:8443"},
		{"Proto", r.Proto, "HTTP/2.0"},
		{"ProtoMajor", r.ProtoMajor, 2},
		{"ContentLength", r.ContentLength, int64(0)},
		{"StreamID", r.StreamID, uint32(1)},
		{"X-Dup", r.Header["X-Dup"], []string{"one", "two"}},
		{"Cookie", r.Header["Cookie"], []string{"a=1", "b=2"}},
		{"Zz-Last", r.Header.Get("Zz-Last"), "1"},
		{"pseudo in Header", len(r.Header), 4},
		{"TLS", r.TLS != nil, true},
		{"RemoteAddr", r.RemoteAddr != "", true},
		{"Body", r.Body, http.NoBody},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if fields := resp.fields; len(fields) != 1 || fields[0].Value != "204" || !reflect.DeepEqual(resp.frames, []string{"HEADERS"}) {
		t.Errorf("response = %v %v, want a lone HEADERS :status 204 with END_STREAM", resp.frames, fields)
	}
}

func TestGetWithClients(t *testing.T) {
	for _, kind := range allClients {
		t.Run(string(kind), func(t *testing.T) {
			ts := serverFor(t, kind, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
				var names []string
				for _, f := range r.Fields {
					names = append(names, f.Name)
				}
				w.Header().Set("X-Fields", strings.Join(names, ","))
				w.Header().Set("X-Host", r.Host)
				_, _ = io.WriteString(w, "hello "+r.URL.Path)
			}))
			req, _ := http.NewRequest("GET", ts.url()+"/greet?q=1", nil)
			req.Header.Set("X-Test", "v")
			resp, err := ts.client(t, kind).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 2 || string(body) != "hello /greet" {
				t.Errorf("got %s %q", resp.Proto, body)
			}
			names := strings.Split(resp.Header.Get("X-Fields"), ",")
			for i, n := range names[:4] {
				if !strings.HasPrefix(n, ":") {
					t.Errorf("field %d is %q; pseudo-header fields must come first: %v", i, n, names)
				}
			}
			if !strings.Contains(resp.Header.Get("X-Fields"), "x-test") {
				t.Errorf("x-test missing from fields %v", names)
			}
			if resp.Header.Get("X-Host") != ts.addr {
				t.Errorf("Host = %q, want %q", resp.Header.Get("X-Host"), ts.addr)
			}
		})
	}
}

func passthroughHandler() wire.Handler {
	return handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		h := w.Header()
		h["X-Custom"] = []string{"b", "a"}
		h["x-MiXeD"] = []string{"v"}
		h.Set("Content-Type", "text/plain")
		h.Set("Server", "edge")
		h.Set("Content-Length", "999") // wrong on purpose: passed through
		for _, k := range []string{"Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Proxy-Connection"} {
			h.Set(k, "x")
		}
		w.WriteHeader(http.StatusCreated)
		w.WriteHeader(http.StatusInternalServerError) // ignored: first wins
		_, _ = io.WriteString(w, "hi")
	})
}

func TestResponseHeadersOnTheWire(t *testing.T) {
	ts := newTLSServer(t, passthroughHandler())
	rc := dialRaw(t, ts)
	rc.handshake()
	rc.get(1, "/")
	resp := rc.readResponse(1)
	want := []hpack.HeaderField{
		{Name: ":status", Value: "201"},
		{Name: "content-length", Value: "999"},
		{Name: "content-type", Value: "text/plain"},
		{Name: "server", Value: "edge"},
		{Name: "x-custom", Value: "b"},
		{Name: "x-custom", Value: "a"},
		{Name: "x-mixed", Value: "v"},
	}
	if !reflect.DeepEqual(resp.fields, want) {
		t.Errorf("fields =\n %v\nwant\n %v", resp.fields, want)
	}
	if string(resp.body) != "hi" || !reflect.DeepEqual(resp.frames, []string{"HEADERS", "DATA"}) {
		t.Errorf("frames %v body %q, want HEADERS, DATA(END_STREAM) \"hi\"", resp.frames, resp.body)
	}
}

func TestResponseHeaderPassthroughClients(t *testing.T) {
	for _, kind := range allClients {
		t.Run(string(kind), func(t *testing.T) {
			ts := serverFor(t, kind, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
				w.Header()["X-Custom"] = []string{"b", "a"}
				w.Header().Set("Content-Type", "application/x-test")
				_, _ = io.WriteString(w, "body")
			}))
			resp, err := ts.client(t, kind).Get(ts.url() + "/")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := resp.Header["X-Custom"]; !reflect.DeepEqual(got, []string{"b", "a"}) {
				t.Errorf("X-Custom = %q", got)
			}
			for _, k := range []string{"Date", "Content-Length"} {
				if v, ok := resp.Header[k]; ok {
					t.Errorf("server added %s: %q", k, v)
				}
			}
			if resp.Header.Get("Content-Type") != "application/x-test" {
				t.Errorf("Content-Type = %q", resp.Header.Get("Content-Type"))
			}
		})
	}
}

// randomStream writes n bytes of a seeded pseudo-random stream to w in
// chunks of varying sizes.
func randomStream(w io.Writer, seed uint64, n int64) error {
	src := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	sizes := []int{1, 100, 4096, 16 << 10, 32 << 10, 100_000, 1 << 20}
	buf := make([]byte, 1<<20)
	for i := 0; n > 0; i++ {
		k := int(min(int64(sizes[i%len(sizes)]), n))
		_, _ = src.Read(buf[:k])
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= int64(k)
	}
	return nil
}

// checkRandomStream reads r to EOF and compares it with randomStream's
// output.
func checkRandomStream(r io.Reader, seed uint64, n int64) error {
	src := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	got := make([]byte, 64<<10)
	want := make([]byte, 64<<10)
	var off int64
	for {
		k, err := io.ReadFull(r, got)
		if k > 0 {
			if off+int64(k) > n {
				return fmt.Errorf("more than %d bytes", n)
			}
			_, _ = src.Read(want[:k])
			if !bytes.Equal(got[:k], want[:k]) {
				return fmt.Errorf("bytes differ in [%d, %d)", off, off+int64(k))
			}
			off += int64(k)
		}
		switch err {
		case nil:
			continue
		case io.EOF, io.ErrUnexpectedEOF:
			if off != n {
				return fmt.Errorf("got %d bytes, want %d", off, n)
			}
			return nil
		default:
			return fmt.Errorf("after %d bytes: %w", off, err)
		}
	}
}

func TestLargeBody(t *testing.T) {
	for _, kind := range allClients {
		t.Run(string(kind), func(t *testing.T) {
			size := int64(8 << 20)
			if kind == xnetTLS {
				size = 64 << 20
			}
			if testing.Short() {
				size = 4 << 20
			}
			ts := serverFor(t, kind, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
				w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
				if err := randomStream(w, 7, size); err != nil {
					t.Errorf("handler write: %v", err)
				}
				if w.BodyBytes() != size {
					t.Errorf("BodyBytes = %d, want %d", w.BodyBytes(), size)
				}
			}))
			resp, err := ts.client(t, kind).Get(ts.url() + "/large")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if err := checkRandomStream(resp.Body, 7, size); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConcurrentStreamsOneConnection(t *testing.T) {
	const n = 40
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		arrived.Done()
		select { // every handler runs at the same time, or none finishes
		case <-all:
		case <-time.After(10 * time.Second):
			t.Error("not all requests arrived concurrently")
		}
		fmt.Fprintf(w, "stream %d", r.StreamID)
	}))
	client := ts.client(t, xnetTLS)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(fmt.Sprintf("%s/%d", ts.url(), i))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || !strings.HasPrefix(string(b), "stream ") {
				errs <- fmt.Errorf("body %q, %v", b, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := ts.accepted.Load(); got != 1 {
		t.Errorf("%d connections accepted; streams should share one", got)
	}
}

func TestMaxConcurrentStreams(t *testing.T) {
	const limit, n = 3, 12
	var mu sync.Mutex
	active := map[uint64]int{}
	peak := 0
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		mu.Lock()
		active[r.Conn.ID]++
		peak = max(peak, active[r.Conn.ID])
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		active[r.Conn.ID]--
		mu.Unlock()
	}), withMaxStreams(limit))
	client := ts.client(t, xnetTLS)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(ts.url())
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if peak > limit || peak == 0 {
		t.Errorf("peak concurrent streams on a connection = %d, limit %d", peak, limit)
	}
}

func TestRefusedOverLimit(t *testing.T) {
	release := make(chan struct{})
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) { <-release }), withMaxStreams(1))
	defer close(release)
	rc := dialRaw(t, ts)
	rc.handshake()
	rc.get(1, "/")
	rc.get(3, "/")
	rst := waitStream[*http2.RSTStreamFrame](rc, 3)
	if rst.ErrCode != http2.ErrCodeRefusedStream {
		t.Errorf("RST_STREAM code %v, want REFUSED_STREAM", rst.ErrCode)
	}
}

// echoHandler answers with the request body's length, sha256, declared
// length and trailers.
func echoHandler(t *testing.T) wire.Handler {
	return handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			t.Errorf("reading body: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Len", strconv.FormatInt(n, 10))
		w.Header().Set("X-Sha", hex.EncodeToString(h.Sum(nil)))
		w.Header().Set("X-Declared", strconv.FormatInt(r.ContentLength, 10))
		w.Header().Set("X-Trailer", r.Trailer.Get("X-Checksum"))
	})
}

// hideLength hides a reader's length from http.NewRequest.
type hideLength struct{ io.Reader }

func TestPostBody(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16+7) // > stream window
	sum := sha256.Sum256(payload)
	cases := []struct {
		name         string
		body         func() io.Reader
		trailer      http.Header
		wantDeclared string
	}{
		{"content-length", func() io.Reader { return bytes.NewReader(payload) }, nil, strconv.Itoa(len(payload))},
		{"no-content-length", func() io.Reader { return hideLength{bytes.NewReader(payload)} }, nil, "-1"},
		{"trailers", func() io.Reader { return hideLength{bytes.NewReader(payload)} }, http.Header{"X-Checksum": {"abc"}}, "-1"},
	}
	for _, kind := range allClients {
		for _, tc := range cases {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				ts := serverFor(t, kind, echoHandler(t))
				req, _ := http.NewRequest("POST", ts.url()+"/upload", tc.body())
				req.Trailer = tc.trailer
				resp, err := ts.client(t, kind).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				h := resp.Header
				if h.Get("X-Len") != strconv.Itoa(len(payload)) || h.Get("X-Sha") != hex.EncodeToString(sum[:]) {
					t.Errorf("server got %s bytes, sha %s", h.Get("X-Len"), h.Get("X-Sha"))
				}
				if h.Get("X-Declared") != tc.wantDeclared {
					t.Errorf("ContentLength = %s, want %s", h.Get("X-Declared"), tc.wantDeclared)
				}
				if want := tc.trailer.Get("X-Checksum"); h.Get("X-Trailer") != want {
					t.Errorf("trailer = %q, want %q", h.Get("X-Trailer"), want)
				}
			})
		}
	}
}

func TestUnreadBodyDoesNotStallConnection(t *testing.T) {
	release := make(chan struct{})
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		if r.URL.Path == "/stall" {
			<-release // never reads its body
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	client := ts.client(t, xnetTLS)
	payload := make([]byte, 4<<20)
	stalled := make(chan error, 1)
	go func() {
		resp, err := client.Post(ts.url()+"/stall", "application/octet-stream", bytes.NewReader(payload))
		if err == nil {
			resp.Body.Close()
		}
		stalled <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the stalled upload fill its window
	resp, err := client.Post(ts.url()+"/read", "application/octet-stream", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != strconv.Itoa(len(payload)) {
		t.Errorf("read %s bytes", b)
	}
	close(release)
	if err := <-stalled; err != nil {
		t.Logf("stalled upload ended with %v", err) // the handler returned without reading: allowed
	}
	if got := ts.accepted.Load(); got != 1 {
		t.Errorf("%d connections, want 1", got)
	}
}

func TestHead(t *testing.T) {
	h := handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		w.Header().Set("Content-Length", "11")
		_, _ = io.WriteString(w, "hello world")
	})
	t.Run("client", func(t *testing.T) {
		ts := newTLSServer(t, h)
		resp, err := ts.client(t, xnetTLS).Head(ts.url())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.ContentLength != 11 || len(b) != 0 {
			t.Errorf("ContentLength %d, body %q", resp.ContentLength, b)
		}
	})
	t.Run("wire", func(t *testing.T) {
		ts := newTLSServer(t, h)
		rc := dialRaw(t, ts)
		rc.handshake()
		rc.request(1, true, ":method", "HEAD", ":scheme", "https", ":authority", "x", ":path", "/")
		resp := rc.readResponse(1)
		if !reflect.DeepEqual(resp.frames, []string{"HEADERS"}) {
			t.Errorf("frames %v, want one HEADERS with END_STREAM", resp.frames)
		}
	})
}

func TestResponseTrailers(t *testing.T) {
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		w.Header().Set("Trailer", "X-Sum")
		_, _ = io.WriteString(w, "data")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
	}))
	resp, err := ts.client(t, xnetTLS).Get(ts.url())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get("X-Late") != "yes" {
		t.Errorf("trailers %v", resp.Trailer)
	}
}

func TestInterimResponse(t *testing.T) {
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusOK)
	}))
	rc := dialRaw(t, ts)
	rc.handshake()
	rc.get(1, "/")
	resp := rc.readResponse(1)
	if len(resp.frames) != 2 || resp.fields[0].Value != "103" || resp.fields[2].Value != "200" {
		t.Errorf("frames %v fields %v, want 103 then 200", resp.frames, resp.fields)
	}
}

func TestClientCancelEndsHandlerContext(t *testing.T) {
	done := make(chan error, 1)
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		_ = w.Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			done <- fmt.Errorf("request context not done")
			return
		}
		// Writes fail once the stream is gone.
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			_, err = w.Write(make([]byte, 32<<10))
		}
		if err == nil {
			err = w.Flush()
		}
		if err == nil {
			done <- fmt.Errorf("writes after reset succeeded")
			return
		}
		done <- nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.url(), nil)
	resp, err := ts.client(t, xnetTLS).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

func TestHandlerPanic(t *testing.T) {
	var calls atomic.Int32
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		calls.Add(1)
		switch r.URL.Path {
		case "/panic":
			panic("boom")
		case "/panic-late":
			_, _ = io.WriteString(w, "partial")
			_ = w.Flush()
			panic("late boom")
		}
		_, _ = io.WriteString(w, "ok")
	}))
	cc := ts.clientConn(t)
	get := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", ts.url()+path, nil)
		return cc.RoundTrip(req)
	}
	if _, err := get("/panic"); !isStreamErrorCode(err, http2.ErrCodeInternal) {
		t.Errorf("panic before headers: err %v, want INTERNAL_ERROR stream error", err)
	}
	resp, err := get("/panic-late")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	if !isStreamErrorCode(err, http2.ErrCodeInternal) {
		t.Errorf("panic after body: err %v, want INTERNAL_ERROR stream error", err)
	}
	resp, err = get("/ok")
	if err != nil {
		t.Fatalf("connection unusable after panics: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "ok" {
		t.Errorf("body %q", b)
	}
}

func TestIdleTimeout(t *testing.T) {
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {}), withIdle(150*time.Millisecond))
	rc := dialRaw(t, ts)
	rc.handshake()
	start := time.Now() // the idle timer starts when the stream ends, after this
	rc.get(1, "/")
	rc.readResponse(1)
	ga := rc.waitGoAway()
	if ga.ErrCode != http2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Errorf("GOAWAY %v last %d, want NO_ERROR last 1", ga.ErrCode, ga.LastStreamID)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("GOAWAY after %v, before the idle timeout", d)
	}
	_ = rc.nc.Close()
	ts.waitReason(t, func(r string) bool { return r == "idle timeout" })
}

func TestServerShutdown(t *testing.T) {
	ctxDone := make(chan struct{})
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		for {
			if _, err := io.WriteString(w, "tick\n"); err != nil {
				break
			}
			if w.Flush() != nil {
				break
			}
			select {
			case <-r.Context().Done():
				close(ctxDone)
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		<-r.Context().Done()
		close(ctxDone)
	}))
	resp, err := ts.client(t, xnetTLS).Get(ts.url())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	ts.cancel()
	_, err = io.Copy(io.Discard, resp.Body)
	var ga http2.GoAwayError
	if !errorsAs(err, &ga) || ga.ErrCode != http2.ErrCodeNo {
		t.Errorf("body read error %v, want GoAwayError NO_ERROR", err)
	}
	select {
	case <-ctxDone:
	case <-time.After(10 * time.Second):
		t.Error("handler context not done after shutdown")
	}
	ts.waitReason(t, func(r string) bool { return r == "server shutdown" })
}

func TestClientGoAway(t *testing.T) {
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {}))
	rc := dialRaw(t, ts)
	rc.handshake()
	if err := rc.fr.WriteGoAway(0, http2.ErrCodeNo, nil); err != nil {
		t.Fatal(err)
	}
	ts.waitReason(t, func(r string) bool { return r == "client goaway NO_ERROR" })
}

func TestPing(t *testing.T) {
	ts := newH2CServer(t, nil)
	rc := dialRaw(t, ts)
	rc.handshake()
	data := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	if err := rc.fr.WritePing(false, data); err != nil {
		t.Fatal(err)
	}
	f := rc.waitFor("PING ACK", func(f http2.Frame) bool { p, ok := f.(*http2.PingFrame); return ok && p.IsAck() })
	if f.(*http2.PingFrame).Data != data {
		t.Errorf("PING ACK data %v", f.(*http2.PingFrame).Data)
	}
	// nil Handler answers 404.
	rc.get(1, "/")
	if resp := rc.readResponse(1); resp.fields[0].Value != "404" {
		t.Errorf("nil handler status %v", resp.fields)
	}
}

// A client with a tiny window gets no more than it allows, and a SETTINGS
// change of INITIAL_WINDOW_SIZE applies to the open stream.
func TestSendFlowControl(t *testing.T) {
	const size = 10000
	ts := newH2CServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		_, _ = w.Write(make([]byte, size))
	}))
	rc := dialRaw(t, ts)
	rc.write([]byte(http2.ClientPreface))
	if err := rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 100}); err != nil {
		t.Fatal(err)
	}
	rc.get(1, "/")
	total, ended := 0, false
	// readUntil reads DATA until total reaches want, then checks that
	// nothing more comes.
	readUntil := func(want int) {
		t.Helper()
		for total < want && !ended {
			f := rc.waitFor("DATA", func(f http2.Frame) bool { _, ok := f.(*http2.DataFrame); return ok })
			total += len(f.(*http2.DataFrame).Data())
			ended = f.(*http2.DataFrame).StreamEnded()
		}
		if total != want {
			t.Fatalf("received %d bytes, window allows %d", total, want)
		}
		if ended {
			return
		}
		_ = rc.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		for {
			f, err := rc.fr.ReadFrame()
			if err != nil {
				break // timeout: nothing beyond the window
			}
			if d, ok := f.(*http2.DataFrame); ok {
				t.Fatalf("DATA beyond the window: %d bytes", len(d.Data()))
			}
		}
	}
	readUntil(100)
	if err := rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 5000}); err != nil {
		t.Fatal(err)
	}
	readUntil(5000)
	if err := rc.fr.WriteWindowUpdate(1, size-5000); err != nil {
		t.Fatal(err)
	}
	readUntil(size)
	if !ended {
		t.Error("no END_STREAM")
	}
}
