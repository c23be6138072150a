package http1

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// BenchmarkSmallResponses measures small keep-alive exchanges from parallel
// net/http clients.
func BenchmarkSmallResponses(b *testing.B) {
	ts := startServer(b, func(w wire.ResponseWriter, r *wire.Request) {
		w.Header().Set("Content-Length", "5")
		io.WriteString(w, "hello")
	})
	client := newClient(b, &http.Transport{MaxIdleConnsPerHost: 256})
	url := ts.url("/")
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Error(err)
			}
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}
