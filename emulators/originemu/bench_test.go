package originemu

import (
	"context"
	"fmt"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
)

// BenchmarkSmallResponses measures 1 KiB object responses per second over
// keep-alive HTTP/1.1 on loopback, clients in parallel.
func BenchmarkSmallResponses(b *testing.B) {
	for _, ln := range []string{"http", "h2"} {
		b.Run(ln, func(b *testing.B) {
			e := startEmu(b, allProfiles())
			e.Journal() // the journal stays on, as in real use
			c := clientFor(b, e, ln, "origin.test")
			if tr, ok := c.Transport.(*http.Transport); ok {
				tr.MaxIdleConnsPerHost = 64
			}
			parallelGets(b, c, e.URL(ln)+"/small")
		})
	}
}

// BenchmarkServe10GiB streams a 10 GiB synthetic object over loopback
// HTTP/1.1 and reports throughput and the peak heap seen while serving:
// memory must not grow with the object.
func BenchmarkServe10GiB(b *testing.B) {
	e := startEmu(b, Config{Listeners: []ListenerConfig{{Name: "http", Profile: HTTP}}})
	const size = 10 << 30
	if err := e.PutObjects(objects.Spec{Path: "/huge", Size: ptr[int64](size)}); err != nil {
		b.Fatal(err)
	}
	var peak atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var ms runtime.MemStats
		for ctx.Err() == nil {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := http.Get(e.URL("http") + "/huge")
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

// BenchmarkUnmatchedWithRules measures 1 KiB responses per second for paths
// no rule matches, with 0 and 10,000 rules on other paths (#12 item 9: the
// rule lookup must not cut this throughput).
func BenchmarkUnmatchedWithRules(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			e := startEmu(b, Config{Listeners: []ListenerConfig{{Name: "http", Profile: HTTP}}})
			rs := make([]rules.Rule, n)
			for i := range rs {
				m := rules.Match{Path: fmt.Sprintf("/obj/%d", i)}
				if i%10 == 0 {
					m = rules.Match{PathPrefix: fmt.Sprintf("/p%d/", i)}
				}
				rs[i] = rules.Rule{Match: m, Unlimited: true, Action: rules.Action{Status: 503}}
			}
			mustAdd(b, e, rs...)
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			parallelGets(b, c, e.URL("http")+"/unmatched/small")
		})
	}
}

// parallelGets GETs url from 4 goroutines per core until b.N and reports
// requests per second; every answer must be a 200.
func parallelGets(b *testing.B, c *http.Client, url string) {
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}
