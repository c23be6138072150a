package h2

import (
	"io"
	"strconv"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// BenchmarkSmallResponses measures requests per second for a small response
// over one TLS connection with many concurrent streams.
func BenchmarkSmallResponses(b *testing.B) {
	body := []byte("hello, world\n")
	ts := newTLSServer(b, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	client := ts.client(b, xnetTLS)
	url := ts.url() + "/small"
	warm, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, warm.Body)
	warm.Body.Close()

	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(ts.accepted.Load()), "conns")
}

// BenchmarkLargeBody measures the throughput of one large streamed response
// over TLS (MB/s from SetBytes).
func BenchmarkLargeBody(b *testing.B) {
	const size = 64 << 20
	chunk := make([]byte, 32<<10)
	ts := newTLSServer(b, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	client := ts.client(b, xnetTLS)
	buf := make([]byte, 256<<10)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := client.Get(ts.url() + "/large")
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, resp.Body, buf)
		resp.Body.Close()
		if err != nil || n != size {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
}
