package edge

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
)

const benchCacheConfig = `
origins:
  - {name: o, originAddress: 127.0.0.1, protocol: HTTP, port: {{port "http"}}}
service:
  name: bench
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers:
      - name: m
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /}], origin: o, routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}}
`

// BenchmarkCacheHit measures cache hits per second and their p50/p99
// latency for 1 KiB and 1 MiB objects (parallel keep-alive clients on
// loopback, memory store).
func BenchmarkCacheHit(b *testing.B) {
	for _, size := range []int64{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			r := newBenchRig(b, benchCacheConfig)
			path := fmt.Sprintf("/hit-%d", size)
			sz := size
			if err := r.emu.PutObjects(objects.Spec{Path: path, Size: &sz, CacheControl: "max-age=3600"}); err != nil {
				b.Fatal(err)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			get := func() time.Duration {
				start := time.Now()
				resp, err := client.Get(r.edge.URL + path)
				if err != nil {
					b.Error(err)
					return 0
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if n != size {
					b.Errorf("%d bytes, want %d", n, size)
				}
				return time.Since(start)
			}
			get() // the fill
			r.waitStored(1)
			b.SetParallelism(4)
			b.SetBytes(size)
			b.ResetTimer()
			lat, rps := runParallel(b, get)
			b.StopTimer()
			b.ReportMetric(rps, "req/s")
			b.ReportMetric(float64(percentile(lat, 0.5))/1e3, "p50-µs")
			b.ReportMetric(float64(percentile(lat, 0.99))/1e3, "p99-µs")
			if st := r.server().store.Stats(); st.Hits < uint64(len(lat)) {
				b.Fatalf("%d store hits for %d requests: not all were hits", st.Hits, len(lat))
			}
		})
	}
}

// BenchmarkColdCollapse measures how long a cold object (256 KiB) takes to
// reach 1 client and 1,000 concurrent clients: with collapsing the origin
// sees one request either way, and the wall time says what the fan-out
// costs.
func BenchmarkColdCollapse(b *testing.B) {
	for _, clients := range []int{1, 1000} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			r := newBenchRig(b, benchCacheConfig)
			size := int64(256 << 10)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				path := fmt.Sprintf("/cold-%d", i)
				if err := r.emu.PutObjects(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=3600"}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						resp, err := client.Get(r.edge.URL + path)
						if err != nil {
							b.Error(err)
							return
						}
						if n, _ := io.Copy(io.Discard, resp.Body); n != size {
							b.Errorf("%d bytes", n)
						}
						resp.Body.Close()
					})
				}
				wg.Wait()
				b.StopTimer()
				if n := len(r.journal(path)); n != 1 {
					b.Fatalf("%d origin requests for %d clients, want 1", n, clients)
				}
				b.StartTimer()
			}
		})
	}
}

// waitStored waits until the store holds n entries (a fill commits after
// its client has its response); for a rig without a log to read.
func (r *rig) waitStored(n int) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.server().store.Stats().Entries < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("%d store entries after 5s, want %d", r.server().store.Stats().Entries, n)
		}
		time.Sleep(time.Millisecond)
	}
}
