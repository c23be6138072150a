package edge

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/routing"
	"github.com/edgeconform/edgeconform/reference/shield"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// A hit is served from stored bytes: no flush per write (issue #14: a
// flush is a system call, needed only while a fill streams in, COL-5), and
// its entry's metadata is decoded once per entry, not on every hit.
func TestHitIsNotFlushedAndItsHeadIsDecodedOnce(t *testing.T) {
	r := newRig(t, cacheConfig)
	size := int64(1 << 20)
	r.put(objects.Spec{Path: "/o/hot", Size: &size, CacheControl: "max-age=600"})
	r.get("/o/hot") // the fill
	r.waitLogged("/o/hot", 1)
	srv := r.server()

	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://client.example/o/hot", nil)
	srv.ServeHTTP(rec, req)
	if rec.Code != 200 || int64(rec.Body.Len()) != size || !strings.Contains(rec.Header().Get("Cache-Status"), "; hit") {
		t.Fatalf("second GET: %d with %d bytes, Cache-Status %q; want a 200 hit of %d bytes",
			rec.Code, rec.Body.Len(), rec.Header().Get("Cache-Status"), size)
	}
	if rec.Flushed {
		t.Error("a hit of stored bytes was flushed write by write")
	}

	route, rerr := srv.router.Route(req)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pol := srv.policyFor(route.Rule)
	key := pol.Key(req)
	a, aok := srv.store.Open(key)
	b, bok := srv.store.Open(key)
	if !aok || !bok {
		t.Fatal("the entry is not in the store")
	}
	defer a.Close()
	defer b.Close()
	ma, aerr := entry.Decode(a)
	mb, berr := entry.Decode(b)
	if aerr != nil || berr != nil {
		t.Fatalf("decoding the entry: %v, %v", aerr, berr)
	}
	if ma != mb || reflect.ValueOf(ma.Header).UnsafePointer() != reflect.ValueOf(mb.Header).UnsafePointer() {
		t.Error("two lookups of one entry decoded its metadata twice")
	}
}

// copyHeader copies every field and value; adding to one copied field
// changes neither the source nor the field copied beside it.
func TestCopyHeader(t *testing.T) {
	src := http.Header{"A": {"1", "2"}, "B": {"3"}, "C": {}, "D": {"4"}}
	want := src.Clone()
	dst := http.Header{"Keep": {"k"}}
	copyHeader(dst, src)
	for k, v := range src {
		if !slices.Equal(dst[k], v) {
			t.Errorf("%s: %q, want %q", k, dst[k], v)
		}
	}
	for _, k := range []string{"A", "B", "C", "D"} {
		dst.Add(k, "added")
	}
	if !reflect.DeepEqual(src, want) {
		t.Errorf("the source changed: %v, want %v", src, want)
	}
	for k, v := range want {
		if got := dst[k]; !slices.Equal(got, append(slices.Clone(v), "added")) {
			t.Errorf("after Add, %s: %q, want %q + added", k, got, v)
		}
	}
	if dst.Get("Keep") != "k" {
		t.Error("a field dst had is gone")
	}
}

// serveWhole answers a request without Range or conditionals exactly as
// http.ServeContent does: the same status, head and body (issue #14: the
// direct path of a hit).
func TestServeWholeIsServeContent(t *testing.T) {
	srv := &Server{}
	lm := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		method  string
		header  http.Header
		modTime time.Time
		body    string
	}{
		{"get", "GET", http.Header{"Content-Type": {"application/octet-stream"}, "Etag": {`"v1"`}}, lm, strings.Repeat("x", 70<<10)},
		{"head", "HEAD", http.Header{"Content-Type": {"text/plain"}}, lm, "hello"},
		{"no content type sent", "GET", http.Header{"Content-Type": nil}, time.Time{}, "<html>"},
		{"content encoding", "GET", http.Header{"Content-Type": {"text/plain"}, "Content-Encoding": {"gzip"}}, lm, "zzz"},
		{"last-modified rewritten", "GET", http.Header{"Content-Type": {"a/b"}, "Last-Modified": {"Monday, 30-Nov-26 10:00:00 GMT"}}, lm, "b"},
		{"last-modified kept", "GET", http.Header{"Content-Type": {"a/b"}, "Last-Modified": {"Mon, 30 Nov 2026 10:00:00 GMT"}}, lm, "b"},
		{"last-modified of another time", "GET", http.Header{"Content-Type": {"a/b"}, "Last-Modified": {"Mon, 30 Nov 2026 09:00:00 GMT"}}, lm, "b"},
		{"epoch", "GET", http.Header{"Content-Type": {"a/b"}}, time.Unix(0, 0), "b"},
		{"empty", "GET", http.Header{"Content-Type": {"a/b"}}, lm, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://client.example/o", nil)
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			maps.Copy(want.Header(), tc.header)
			maps.Copy(got.Header(), tc.header)
			http.ServeContent(want, req, "", tc.modTime, strings.NewReader(tc.body))
			sw := &statusWriter{ResponseWriter: got}
			if !srv.serveWhole(sw, req, tc.modTime, strings.NewReader(tc.body), new(headValues), nil) {
				t.Fatal("serveWhole declined")
			}
			sw.commit()
			if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
				t.Fatalf("serveWhole: %d %v %d bytes\nServeContent: %d %v %d bytes",
					got.Code, got.Header(), got.Body.Len(), want.Code, want.Header(), want.Body.Len())
			}
		})
	}
	// Without a Content-Type field ServeContent sniffs: serveWhole declines.
	if srv.serveWhole(&statusWriter{ResponseWriter: httptest.NewRecorder()}, httptest.NewRequest("GET", "/", nil), lm, strings.NewReader("x"), new(headValues), nil) {
		t.Error("serveWhole answered a response whose type ServeContent would sniff")
	}
	for _, h := range []string{"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set(h, "x")
		if plainRequest(req) {
			t.Errorf("a request with %s is plain: ServeContent must answer it (RNG-3)", h)
		}
	}
}

// reusingViewer hands out its bytes as views of one buffer that each call
// overwrites, as an origin connection's buffer is reused once released.
type reusingViewer struct {
	chunks []string
	buf    []byte
	calls  int
}

func (v *reusingViewer) Read([]byte) (int, error) { panic("Read on a viewable body") }
func (v *reusingViewer) Viewable() bool           { return true }
func (v *reusingViewer) Next(int) ([]byte, error) {
	for i := range v.buf {
		v.buf[i] = '#' // what the last view showed is gone
	}
	if v.calls == len(v.chunks) {
		return nil, io.EOF
	}
	p := append(v.buf[:0], v.chunks[v.calls]...)
	v.calls++
	return p, nil
}

// A body that hands out views is delivered from them, each written before
// the next is asked for (issue #14: no copy of an origin body into a
// buffer of ours); any other body goes through a pooled buffer.
func TestBodiesDeliveredFromViews(t *testing.T) {
	s := &Server{}
	for _, tc := range []struct {
		name string
		body io.Reader
	}{
		{"views", &reusingViewer{chunks: []string{"hello, ", "views", "!"}, buf: make([]byte, 16)}},
		{"reader", strings.NewReader("hello, views!")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			v := &visit{w: rec, r: httptest.NewRequest(http.MethodGet, "/", nil)}
			s.sendAfterFirstByte(v, tc.body, func() { rec.WriteHeader(http.StatusOK) })
			if got := rec.Body.String(); got != "hello, views!" || v.bytes != int64(len(got)) {
				t.Fatalf("delivered %q (%d bytes counted), want %q", got, v.bytes, "hello, views!")
			}
		})
	}
}

// originFields is copyHeader then upstream.RemoveHopByHop, whichever way
// it takes (issue #14: no deletes when none is needed).
func TestOriginFields(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dst, src http.Header
	}{
		{"plain", http.Header{}, http.Header{"Content-Type": {"a/b"}, "Etag": {`"1"`}, "Content-Length": {"5"}}},
		{"fixed hop-by-hop", http.Header{}, http.Header{"Keep-Alive": {"timeout=5"}, "Transfer-Encoding": {"chunked"}, "Te": {"trailers"},
			"Trailer": {"X"}, "Upgrade": {"h2c"}, "Proxy-Connection": {"keep-alive"}, "Proxy-Authenticate": {"Basic"}, "Proxy-Authorization": {"x"}, "X-Kept": {"1"}}},
		{"connection names others", http.Header{}, http.Header{"Connection": {"X-Gone, keep-alive"}, "X-Gone": {"1"}, "X-Kept": {"2"}}},
		{"connection names one in another case", http.Header{}, http.Header{"Connection": {"x-gone"}, "X-Gone": {"1"}, "X-Kept": {"2"}}},
		{"connection: keep-alive", http.Header{}, http.Header{"Connection": {"keep-alive"}, "Keep-Alive": {"timeout=5"}, "X-Kept": {"2"}}},
		{"connection names an absent field", http.Header{}, http.Header{"Connection": {"close, X-Absent"}, "X-Kept": {"2"}}},
		{"fields already set", http.Header{"Keep-Alive": {"set before"}, "X-Before": {"b"}}, http.Header{"X-Kept": {"3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.dst.Clone()
			copyHeader(want, tc.src)
			upstream.RemoveHopByHop(want)
			got := tc.dst.Clone()
			originFields(got, tc.src)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	// The copy without deletes is taken for what origins send.
	for _, tc := range []struct {
		src  http.Header
		want bool
	}{
		{http.Header{"Connection": {"keep-alive"}, "Keep-Alive": {"timeout=5"}}, false},
		{http.Header{"Connection": {"close"}}, false},
		{http.Header{"Etag": {"x"}}, false},
		{http.Header{"Connection": {"Etag"}, "Etag": {"x"}}, true},
		{http.Header{"Connection": {"keep-alive", " etag "}, "Etag": {"x"}}, true},
	} {
		if got := namesOthers(tc.src); got != tc.want {
			t.Errorf("namesOthers(%v) = %v, want %v", tc.src, got, tc.want)
		}
	}
	for _, k := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		h := http.Header{k: {"x"}}
		upstream.RemoveHopByHop(h)
		if len(h) != 0 || !upstream.IsHopByHop(k) {
			t.Errorf("%s: RemoveHopByHop left %v, IsHopByHop %v: the two lists differ", k, h, upstream.IsHopByHop(k))
		}
	}
}

// declares: only a single plain decimal equal to the length is kept as
// it is; anything else is set again.
func TestDeclares(t *testing.T) {
	for _, tc := range []struct {
		vals []string
		n    int64
		want bool
	}{
		{[]string{"1024"}, 1024, true},
		{[]string{"0"}, 0, true},
		{[]string{"1023"}, 1024, false},
		{nil, 1024, false},
		{[]string{"1024", "1024"}, 1024, false},
		{[]string{"+1024"}, 1024, false},
		{[]string{"01024"}, 1024, false},
		{[]string{"1024, 1024"}, 1024, false},
		{[]string{""}, 0, false},
	} {
		h := http.Header{}
		if tc.vals != nil {
			h["Content-Length"] = tc.vals
		}
		if got := declares(h, tc.n); got != tc.want {
			t.Errorf("declares(%q, %d) = %v, want %v", tc.vals, tc.n, got, tc.want)
		}
	}
}

// The pass path sends the client's header as it is when nothing would
// change it (issue #14), and otherwise exactly what copying it, dropping
// hop-by-hop fields and preparing it for the parent gives; fills always
// get a copy of their own.
func TestUpstreamHeaderSharedOnlyWhenUnchanged(t *testing.T) {
	add := &config.HeaderAction{RequestHeadersToAdd: []config.HeaderToAdd{{HeaderName: "X-Added", HeaderValue: "1"}}}
	shieldTo := shieldParent{tier: "edge-1"}
	for _, tc := range []struct {
		name   string
		header http.Header
		action *config.HeaderAction
		to     parent
		share  bool
		shared bool
	}{
		{"plain", http.Header{"User-Agent": {"wrk"}, "Range": {"bytes=0-1"}}, nil, nil, true, true},
		{"plain fill", http.Header{"User-Agent": {"wrk"}}, nil, nil, false, false},
		{"hop-by-hop", http.Header{"User-Agent": {"wrk"}, "Keep-Alive": {"timeout=5"}}, nil, nil, true, false},
		{"connection names one", http.Header{"Connection": {"X-Private"}, "X-Private": {"1"}, "X-Kept": {"2"}}, nil, nil, true, false},
		{"tier marker", http.Header{shield.TierHeader: {"forged"}}, nil, nil, true, false},
		{"request header action", http.Header{"User-Agent": {"wrk"}}, add, nil, true, false},
		{"empty action", http.Header{"User-Agent": {"wrk"}}, &config.HeaderAction{}, nil, true, true},
		{"shield parent", http.Header{"User-Agent": {"wrk"}}, nil, shieldTo, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{origins: originParent{}, parents: map[string]parent{}}
			to := parent(originParent{})
			if tc.to != nil {
				s.parents["o"] = tc.to
				to = tc.to
			}
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			r.Header = tc.header.Clone()
			route := &routing.Result{Origin: "o", Rule: &config.RouteRule{HeaderAction: tc.action}}
			want := tc.header.Clone()
			upstream.RemoveHopByHop(want)
			to.prepare(want, route.Rule)

			u := s.upstreamFor(r, route, "id", tc.share)
			if !reflect.DeepEqual(u.header, want) {
				t.Errorf("header %v, want %v", u.header, want)
			}
			if shared := reflect.ValueOf(u.header).UnsafePointer() == reflect.ValueOf(r.Header).UnsafePointer(); shared != tc.shared {
				t.Errorf("the client's header map sent as it is: %v, want %v", shared, tc.shared)
			}
			if !reflect.DeepEqual(r.Header, tc.header) {
				t.Errorf("the client's header changed: %v, want %v", r.Header, tc.header)
			}
		})
	}
}

// Request ids are the server's base, "-" and a sequence number, unique
// across goroutines (LOG-1), whatever the base's length.
func TestNextID(t *testing.T) {
	for _, base := range []string{"b4ynjc", strings.Repeat("x", 40)} {
		s := &Server{idBase: base}
		ids := make(chan string, 4000)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 1000 {
					ids <- s.nextID()
				}
			})
		}
		wg.Wait()
		close(ids)
		seen := map[string]bool{}
		for id := range ids {
			n, err := strconv.ParseUint(strings.TrimPrefix(id, base+"-"), 10, 64)
			if !strings.HasPrefix(id, base+"-") || err != nil || n < 1 || n > 4000 || seen[id] {
				t.Fatalf("id %q: want %s-N with N in 1..4000, each once", id, base)
			}
			seen[id] = true
		}
	}
}
