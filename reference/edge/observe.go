package edge

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/logjson"
	"github.com/prometheus/client_golang/prometheus"
)

// logVisit writes the one record of a client request (LOG-1); its origin
// attempts have records of their own from package fetch, linked by
// request_id.
func (s *Server) logVisit(v *visit) {
	if v.logged {
		return
	}
	v.logged = true
	now := time.Now()
	latency := now.Sub(v.start)
	cacheStatus := v.cache
	if cacheStatus == "" {
		cacheStatus = "bypass"
	}
	s.metrics.observeRequest(v.status, v.trunc != "", latency)
	s.metrics.observeCache(cacheStatus)
	if !s.log.Enabled(v.r.Context(), slog.LevelInfo) {
		return // issue #14: no record built that nobody reads
	}
	var room [20]slog.Attr // every attribute below: no growing (issue #14)
	attrs := append(room[:0],
		slog.String("request_id", v.id),
		slog.String("method", v.r.Method),
		slog.String("host", v.r.Host),
		slog.String("uri", v.r.RequestURI),
		slog.String("range", v.r.Header.Get("Range")),
		slog.Int("status", v.status),
		slog.Int64("bytes", v.bytes),
		slog.Float64("latency_ms", float64(latency.Microseconds())/1000),
		slog.String("cache_status", cacheStatus),
	)
	if v.route != nil {
		attrs = append(attrs, slog.String("path_matcher", v.route.PathMatcher), slog.Int64("route_priority", v.route.Priority))
	}
	if res := v.result; res != nil {
		attrs = append(attrs,
			slog.String("origin", res.Origin),
			slog.Int("attempts", len(res.Attempts)),
			slog.String("proxy_status", string(res.Reason)),
		)
		if n := len(res.Attempts); n > 0 {
			last := res.Attempts[n-1]
			attrs = append(attrs, slog.String("origin_ip", last.IP),
				slog.Float64("backend_latency_ms", float64(last.Duration.Microseconds())/1000))
		}
	}
	if v.cacheKey != "" { // LOG-2
		fp := v.keyPrint
		if fp == "" {
			fp = keyFingerprint(v.cacheKey)
		}
		attrs = append(attrs, slog.String("cache_key_fingerprint", fp))
	}
	if v.fillID != "" {
		attrs = append(attrs, slog.String("fill_request_id", v.fillID))
	}
	if v.trunc != "" {
		attrs = append(attrs, slog.String("truncated", v.trunc))
	}
	if v.errText != "" {
		attrs = append(attrs, slog.String("error", v.errText))
	}
	logjson.LogAttrsAt(v.r.Context(), s.log, now, slog.LevelInfo, "client request", attrs...) // issue #14: no slog.Record
}

// keyFingerprint is the log's cache_key_fingerprint of key (LOG-2): the
// first 8 bytes of its SHA-256, in hex.
func keyFingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// Metrics are the Prometheus series the admin endpoint serves.
type Metrics struct {
	Registry  *prometheus.Registry
	requests  *prometheus.CounterVec
	truncated prometheus.Counter
	latency   prometheus.Histogram
	attempts  *prometheus.CounterVec
	attemptD  *prometheus.HistogramVec
	cache     *prometheus.CounterVec
	// The counters of each status and cache status, resolved once
	// (WithLabelValues hashes its labels on every call: issue #14).
	// Resolved on first use, so a series appears only once counted.
	byStatus [500]atomic.Pointer[prometheus.Counter] // statuses 100-599
	byCache  [len(cacheStatuses)]atomic.Pointer[prometheus.Counter]
}

// cacheStatuses are the log's cache_status values (cache.go).
var cacheStatuses = [...]string{"hit", "miss", "revalidated", "collapsed", "bypass"}

// NewMetrics registers the edge's series in a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgecache_requests_total", Help: "Client requests by response status.",
		}, []string{"status"}),
		truncated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edgecache_truncated_responses_total", Help: "Client responses cut short because the origin body failed or timed out.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "edgecache_request_duration_seconds", Help: "Client request latency, to the last body byte.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgecache_origin_attempts_total", Help: "Origin attempts by origin and outcome.",
		}, []string{"origin", "outcome"}),
		attemptD: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "edgecache_origin_attempt_duration_seconds", Help: "Origin attempt latency, to the response headers.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"origin"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgecache_cache_responses_total", Help: "Client requests by what the cache did: hit, miss, revalidated, collapsed or bypass.",
		}, []string{"cache_status"}),
	}
	m.Registry.MustRegister(m.requests, m.truncated, m.latency, m.attempts, m.attemptD, m.cache)
	return m
}

// RegisterCache adds gauges of s's store and collapse group to the
// registry: entries, bytes, hits, misses, evictions, fills and joins.
func (m *Metrics) RegisterCache(s *Server) {
	if m == nil {
		return
	}
	st := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.Registry.MustRegister(
		st("edgecache_store_entries", "Entries in the cache store (chunks count one each).", func() float64 { return float64(s.store.Stats().Entries) }),
		st("edgecache_store_bytes", "Bytes held by the cache store.", func() float64 { return float64(s.store.Stats().Bytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgecache_store_evictions_total", Help: "Entries evicted for the size bound."},
			func() float64 { return float64(s.store.Stats().Evictions) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgecache_fills_total", Help: "Fills started (one per key or chunk collapsed, COL-1)."},
			func() float64 { return float64(s.group.Stats().Fills) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgecache_fill_joins_total", Help: "Requests that joined a running fill instead of starting one."},
			func() float64 { return float64(s.group.Stats().Joins) }),
	)
}

func (m *Metrics) observeCache(status string) {
	if m == nil {
		return
	}
	for i, st := range cacheStatuses {
		if st == status {
			resolved(&m.byCache[i], m.cache, status).Inc()
			return
		}
	}
	m.cache.WithLabelValues(status).Inc()
}

func (m *Metrics) observeRequest(status int, truncated bool, d time.Duration) {
	if m == nil {
		return
	}
	m.statusCounter(status).Inc()
	if truncated {
		m.truncated.Inc()
	}
	m.latency.Observe(d.Seconds())
}

// statusCounter is the requests counter of status, resolved once per
// status in 100-599.
func (m *Metrics) statusCounter(status int) prometheus.Counter {
	if status < 100 || status > 599 {
		return m.requests.WithLabelValues(strconv.Itoa(status))
	}
	slot := &m.byStatus[status-100]
	if c := slot.Load(); c != nil {
		return *c // no label to format
	}
	return resolved(slot, m.requests, strconv.Itoa(status))
}

// resolved is the counter in slot, resolved from vec with label on first
// use (a race resolves the same counter twice, harmlessly).
func resolved(slot *atomic.Pointer[prometheus.Counter], vec *prometheus.CounterVec, label string) prometheus.Counter {
	if c := slot.Load(); c != nil {
		return *c
	}
	c := vec.WithLabelValues(label)
	slot.Store(&c)
	return c
}

func (m *Metrics) observeFetch(res *fetch.Result) {
	if m == nil || res == nil {
		return
	}
	for _, a := range res.Attempts {
		m.attempts.WithLabelValues(a.Origin, a.Outcome.Label()).Inc()
		m.attemptD.WithLabelValues(a.Origin).Observe(a.Duration.Seconds())
	}
}
