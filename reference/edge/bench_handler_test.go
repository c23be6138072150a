package edge

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/reference/h1serve"
	"github.com/edgeconform/edgeconform/reference/logjson"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// discardWriter is the least a ResponseWriter can be: a header map it
// keeps between requests and a body it drops, so BenchmarkHitHandler
// measures the handler alone, no server and no sockets.
type discardWriter struct {
	h      http.Header
	status int
	n      int64
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += int64(len(p))
	return len(p), nil
}
func (w *discardWriter) Flush() {}

// fieldsDiscardWriter is discardWriter that is also an
// h1serve.FieldsWriter, as h1serve's writer is: hits after the first
// send their rendered head (rendered.go) instead of the header map.
type fieldsDiscardWriter struct {
	discardWriter
	fields bool
}

func (w *fieldsDiscardWriter) WriteFields(code int, f *h1serve.Fields, value string) bool {
	if w.status != 0 || f == nil {
		return false
	}
	w.status, w.fields = code, true
	return true
}

// BenchmarkHitHandler measures what the edge handler alone costs per
// 1 KiB cache hit (CPU and allocations; issue #14), logging JSON to
// io.Discard as edgecache serve's default log would to its sink: "map"
// with a writer that takes a header map, "rendered" with one that takes
// the entry's rendered head as h1serve's does, so every hit after the
// first takes the path a real server's hits take.
func BenchmarkHitHandler(b *testing.B) {
	for _, rendered := range []bool{false, true} {
		name := map[bool]string{false: "map", true: "rendered"}[rendered]
		b.Run(name, func(b *testing.B) { benchHits(b, rendered) })
	}
}

func benchHits(b *testing.B, rendered bool) {
	r := newBenchRig(b, benchCacheConfig)
	size := int64(1 << 10)
	if err := r.emu.PutObjects(objects.Spec{Path: "/h", Size: &size, CacheControl: "max-age=3600"}); err != nil {
		b.Fatal(err)
	}
	log := slog.New(logjson.New(io.Discard, nil))
	client := upstream.New(upstream.Options{Logger: log})
	b.Cleanup(client.Close)
	srv, err := New(rigConfig(b, r.emu, benchCacheConfig), client, log, NewMetrics())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	tmpl, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://bench.test/h", nil)
	if err != nil {
		b.Fatal(err)
	}
	tmpl.RequestURI, tmpl.RemoteAddr = "/h", "127.0.0.1:40000"
	tmpl.Header.Set("User-Agent", "wrk")
	h := make(http.Header, 16) // kept and emptied per request, as h1serve's (issue #14)
	serve := func() *fieldsDiscardWriter {
		clear(h)
		w := &fieldsDiscardWriter{discardWriter: discardWriter{h: h}}
		req := *tmpl
		if rendered {
			srv.ServeHTTP(w, &req)
		} else {
			srv.ServeHTTP(&w.discardWriter, &req)
		}
		return w
	}
	for i := range 2 { // the fill, and a hit that renders the head
		if w := serve(); w.status != http.StatusOK || w.n != size {
			b.Fatalf("request %d: status %d, %d bytes", i, w.status, w.n)
		}
	}
	before := srv.store.Stats().Hits
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if w := serve(); w.n != size || w.fields != rendered {
			b.Fatalf("%d bytes, rendered head %v; want %d, %v", w.n, w.fields, size, rendered)
		}
	}
	b.StopTimer()
	if hits := srv.store.Stats().Hits - before; hits < uint64(b.N) {
		b.Fatalf("%d store hits for %d requests: not all were hits", hits, b.N)
	}
}

// benchPassConfig is benchCacheConfig with BYPASS_CACHE, as bench-peers'
// /pass/ route.
var benchPassConfig = strings.Replace(benchCacheConfig, "USE_ORIGIN_HEADERS", "BYPASS_CACHE", 1)

// BenchmarkPassHandler measures the edge handler and its origin client
// per uncached 1 KiB request (BYPASS_CACHE, as bench-peers' /pass/ rows)
// to the emulator on loopback, without a client-facing server.
func BenchmarkPassHandler(b *testing.B) {
	r := newBenchRig(b, benchPassConfig)
	size := int64(1 << 10)
	if err := r.emu.PutObjects(objects.Spec{Path: "/p", Size: &size}); err != nil {
		b.Fatal(err)
	}
	log := slog.New(logjson.New(io.Discard, nil))
	client := upstream.New(upstream.Options{Logger: log})
	b.Cleanup(client.Close)
	srv, err := New(rigConfig(b, r.emu, benchPassConfig), client, log, NewMetrics())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	tmpl, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://bench.test/p", nil)
	if err != nil {
		b.Fatal(err)
	}
	tmpl.RequestURI, tmpl.RemoteAddr = "/p", "127.0.0.1:40000"
	tmpl.Header.Set("User-Agent", "wrk")
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w := &discardWriter{h: http.Header{}}
			req := *tmpl
			srv.ServeHTTP(w, &req)
			if w.status != http.StatusOK || w.n != size {
				b.Errorf("status %d, %d bytes, want 200 and %d", w.status, w.n, size)
				return
			}
		}
	})
}
