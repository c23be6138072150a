package session

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/outcome"
)

// httpUpstream sends fills over a real socket to base, turning a failed
// exchange into a synthesized 502 (as the fetch engine does).
type httpUpstream struct {
	base string
	path string
	n    *atomic.Int64
}

func (u httpUpstream) Header() http.Header { return http.Header{} }

func (u httpUpstream) Fetch(ctx context.Context, h http.Header) *fetch.Result {
	u.n.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.base+u.path, nil)
	if err != nil {
		return &fetch.Result{Status: http.StatusBadGateway, Reason: outcome.ProxyInternalError}
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &fetch.Result{Status: http.StatusBadGateway, Reason: outcome.ConnectionRefused}
	}
	return &fetch.Result{Response: resp, Status: resp.StatusCode}
}

// newCache is a cache over a memory store in front of origin.
func newCache(t *testing.T) *Cache {
	t.Helper()
	g := collapse.New(context.Background())
	t.Cleanup(func() { g.Close() })
	return New(store.NewMemory(1<<20), g, "n", slog.New(slog.DiscardHandler))
}

// lookup asks c about method path with Range rng (if any), filling from
// base.
func lookup(c *Cache, method, base, path, rng string, n *atomic.Int64) *Answer {
	r := httptest.NewRequest(method, "http://client.example"+path, nil)
	if rng != "" {
		r.Header.Set("Range", rng)
	}
	pol := policy.New(nil)
	return c.Lookup(Request{HTTP: r, Policy: &pol, Key: pol.Key(r), ID: "req",
		Upstream: httpUpstream{base: base, path: path, n: n}})
}

// The states a request goes through, seen from edge: a miss streams the
// fill (Live), the next GET is a hit from the store (Ranged, with Age), a
// HEAD of an object not stored bypasses the cache without a fill, a range
// of an arriving whole object is Ranged over the fill (COL-5, RNG-3), and
// a fill without an origin response is every caller's 502 (COL-7).
func TestLookupStates(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello, cache")
	}))
	defer origin.Close()
	c := newCache(t)
	var n atomic.Int64
	body := func(a *Answer) string {
		t.Helper()
		defer a.Close()
		b, err := io.ReadAll(a.Body)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		return string(b)
	}

	a := lookup(c, "GET", origin.URL, "/o", "", &n)
	if a.Kind != Live || a.Cache != "miss" || a.Member != "n; fwd=miss" || a.Status != 200 || body(a) != "hello, cache" {
		t.Fatalf("miss: kind %d cache %q member %q status %d", a.Kind, a.Cache, a.Member, a.Status)
	}
	a = lookup(c, "GET", origin.URL, "/o", "", &n)
	if a.Kind != Ranged || a.Cache != "hit" || a.Member != "n; hit" || a.Age == "" || body(a) != "hello, cache" {
		t.Fatalf("hit: kind %d cache %q member %q age %q", a.Kind, a.Cache, a.Member, a.Age)
	}
	if a := lookup(c, "HEAD", origin.URL, "/not-stored", "", &n); a.Kind != Bypass || a.Cache != "miss" {
		t.Fatalf("HEAD miss: kind %d cache %q, want Bypass", a.Kind, a.Cache)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d fills, want 1 (the hit and the HEAD miss fetch nothing)", got)
	}
	a = lookup(c, "GET", origin.URL, "/r", "bytes=7-", &n)
	if a.Kind != Ranged || a.Size != 12 || a.Header.Get("Content-Range") != "" {
		t.Fatalf("range miss: kind %d size %d header %v", a.Kind, a.Size, a.Header)
	}
	if s := body(a); s != "hello, cache" { // edge's http.ServeContent seeks to the range
		t.Fatalf("range miss body %q", s)
	}
	a = lookup(c, "GET", origin.URL, "/down", "", &n)
	if a.Kind != Synthesized || a.Status != http.StatusBadGateway || a.Reason != outcome.ConnectionRefused {
		t.Fatalf("fill without a response: kind %d status %d reason %q, want a synthesized 502", a.Kind, a.Status, a.Reason)
	}
}

// A fill's body as it arrives reads forward only: seeking anywhere but
// where it is fails with an error, never silently.
func TestStreamSeek(t *testing.T) {
	s := &stream{ReadCloser: io.NopCloser(strings.NewReader("abc"))}
	if off, err := s.Seek(0, io.SeekCurrent); off != 0 || err != nil {
		t.Fatalf("Seek(0, current) = %d, %v", off, err)
	}
	if _, err := s.Seek(0, io.SeekEnd); err == nil {
		t.Fatal("Seek to the end of a live stream succeeded")
	}
	b := make([]byte, 2)
	s.Read(b)
	if off, err := s.Seek(2, io.SeekStart); off != 2 || err != nil {
		t.Fatalf("Seek(2, start) after 2 bytes = %d, %v", off, err)
	}
}
