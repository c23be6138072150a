package edge

import (
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

const benchConfig = `
origins:
  - {name: o, originAddress: 127.0.0.1, protocol: HTTP, port: {{port "http"}}}
service:
  name: bench
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers:
      - name: m
        routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: o}]
`

// BenchmarkProxy measures 1 KiB requests per second through the reference to
// an emulator on loopback (keep-alive, parallel clients), and the latency the
// edge adds: p50 and p99 through the edge minus the same percentiles going
// to the emulator directly.
func BenchmarkProxy(b *testing.B) {
	r := newBenchRig(b, benchConfig)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	fetch := func(url string) time.Duration {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	b.SetParallelism(4)
	b.ResetTimer()
	before := readAllocs()
	edgeLat, rps := runParallel(b, func() time.Duration { return fetch(r.edge.URL + "/obj") })
	throughEdge := readAllocs().minus(before)
	b.StopTimer()
	before = readAllocs()
	directLat, _ := runParallel(b, func() time.Duration { return fetch(r.emu.URL("http") + "/obj") })
	direct := readAllocs().minus(before)
	b.ReportMetric(rps, "req/s")
	b.ReportMetric(float64(percentile(edgeLat, 0.5)-percentile(directLat, 0.5))/1e3, "added-p50-µs")
	b.ReportMetric(float64(percentile(edgeLat, 0.99)-percentile(directLat, 0.99))/1e3, "added-p99-µs")
	// What the edge itself allocates per proxied request: the requests
	// through it (client, edge and emulator) less the same requests sent
	// to the emulator directly (client and emulator).
	edge := throughEdge.minus(direct)
	b.ReportMetric(float64(edge.bytes)/float64(len(edgeLat)), "edge-B/req")
	b.ReportMetric(float64(edge.mallocs)/float64(len(edgeLat)), "edge-allocs/req")
}

// allocs are the process's cumulative allocation counters.
type allocs struct{ bytes, mallocs int64 }

func readAllocs() allocs {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return allocs{int64(m.TotalAlloc), int64(m.Mallocs)}
}

func (a allocs) minus(b allocs) allocs { return allocs{a.bytes - b.bytes, a.mallocs - b.mallocs} }

// runParallel runs one timed request per b.RunParallel iteration and
// returns every latency and the requests per second.
func runParallel(b *testing.B, one func() time.Duration) ([]time.Duration, float64) {
	var mu sync.Mutex
	var lat []time.Duration
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			mine = append(mine, one())
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	return lat, float64(len(lat)) / time.Since(start).Seconds()
}

// percentile is the p-quantile (0..1) of d, which it sorts.
func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[int(float64(len(d)-1)*p)]
}
