package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/store"
)

// A miss stores the body the fill holds, not a second copy of it (issue
// #14, pump with collapse.Fill.Bytes and store.Adopt): filling an object
// allocates about its size once, where a copy for the store would
// allocate it twice. And whatever the size against the buffers' 64 KiB
// (one short, exact, one over, several and a tail), the hit serves the
// same bytes as the miss.
func TestFillKeepsOneCopy(t *testing.T) {
	bodies := map[string][]byte{}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	}))
	defer origin.Close()
	const chunk = collapse.ChunkSize
	sizes := []int{1000, chunk - 1, chunk, chunk + 1, 3*chunk + 7, 15 * chunk}
	for _, n := range sizes {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*31 + i>>13 + n)
		}
		bodies[fmt.Sprint("/o", n)] = b
	}
	g := collapse.New(context.Background())
	t.Cleanup(func() { g.Close() })
	c := New(store.NewMemory(32<<20), g, "n", slog.New(slog.DiscardHandler))
	var fills atomic.Int64

	for _, n := range sizes {
		path := fmt.Sprint("/o", n)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		a := lookup(c, "GET", origin.URL, path, "", &fills)
		if a.Kind != Live || a.Status != http.StatusOK {
			t.Fatalf("%d bytes: the miss is kind %d status %d", n, a.Kind, a.Status)
		}
		// io.Discard reads with a small pooled buffer: the fill's
		// buffers and the store's are what this allocates.
		if _, err := io.Copy(io.Discard, a.Body); err != nil {
			t.Fatalf("%d bytes: reading the miss: %v", n, err)
		}
		a.Close()
		runtime.ReadMemStats(&ms)
		if alloc := ms.TotalAlloc - before; n >= 10*chunk {
			t.Logf("%d bytes: the miss allocated %d bytes, %.2f times the body", n, alloc, float64(alloc)/float64(n))
			if alloc > uint64(n)*3/2 {
				t.Errorf("%d bytes: the miss allocated %d bytes, %.2f times the body (a second copy makes it 2)", n, alloc, float64(alloc)/float64(n))
			}
		}
		a = lookup(c, "GET", origin.URL, path, "", &fills)
		if a.Kind != Ranged || a.Cache != "hit" {
			t.Fatalf("%d bytes: the second GET is kind %d cache %q, want a hit", n, a.Kind, a.Cache)
		}
		got, err := io.ReadAll(a.Body)
		a.Close()
		if err != nil || !bytes.Equal(got, bodies[path]) {
			t.Fatalf("%d bytes: the hit served %d bytes (%v), not the body", n, len(got), err)
		}
	}
	if got := fills.Load(); got != int64(len(sizes)) {
		t.Fatalf("%d fills for %d objects", got, len(sizes))
	}
}

// A revalidated entry (no-cache, the origin answers 304: CCH-4) is
// re-committed with its refreshed metadata over the stored body itself,
// not a copy of it (restore through store.Bodied and store.Adopt, issue
// #14), and still serves the same bytes.
func TestRevalidationSharesTheBody(t *testing.T) {
	const size = 16 * collapse.ChunkSize
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i*7 + i>>12)
	}
	var revalidated atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Etag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			revalidated.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer origin.Close()
	g := collapse.New(context.Background())
	t.Cleanup(func() { g.Close() })
	c := New(store.NewMemory(32<<20), g, "n", slog.New(slog.DiscardHandler))
	var fills atomic.Int64
	read := func(want string) uint64 {
		t.Helper()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		a := lookup(c, "GET", origin.URL, "/o", "", &fills)
		if _, err := io.Copy(io.Discard, a.Body); err != nil {
			t.Fatalf("%s: %v", want, err)
		}
		a.Close()
		runtime.ReadMemStats(&ms)
		if a.Status != http.StatusOK {
			t.Fatalf("%s: status %d", want, a.Status)
		}
		return ms.TotalAlloc - before
	}
	read("the miss")
	for i := range 3 {
		alloc := read("a revalidation")
		t.Logf("revalidation %d allocated %d bytes for a %d-byte body", i+1, alloc, size)
		if alloc > size/4 {
			t.Errorf("revalidation %d allocated %d bytes for a %d-byte body: the body was copied", i+1, alloc, size)
		}
	}
	if got := revalidated.Load(); got != 3 {
		t.Fatalf("%d revalidations answered 304, want 3", got)
	}
	a := lookup(c, "GET", origin.URL, "/o", "", &fills)
	got, err := io.ReadAll(a.Body)
	a.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("after revalidating, %d bytes (%v), not the body", len(got), err)
	}
}
