package routing

import (
	"net/http"
	"testing"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/headervars"
)

// The per-response cost of a response header action: static values, and
// values with variables (rendered from Facts; nothing is parsed per
// response).
func BenchmarkApplyResponseHeaders(b *testing.B) {
	for _, bc := range []struct {
		name  string
		value string
	}{{"static", "vod"}, {"variables", "{cdn_cache_status}; region={client_region}"}} {
		rh, err := compileResponseHeaders(&config.HeaderAction{
			ResponseHeadersToRemove: []config.HeaderToRemove{{HeaderName: "server"}},
			ResponseHeadersToAdd:    []config.HeaderToAdd{{HeaderName: "x-cache-status", HeaderValue: bc.value, Replace: true}},
		}, "r")
		if err != nil {
			b.Fatal(err)
		}
		f := &headervars.Facts{CacheStatus: "hit", Geo: &headervars.Geo{Region: "FR"}}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			h := http.Header{}
			for b.Loop() {
				h["Server"] = nil
				delete(h, "X-Cache-Status")
				ApplyResponseHeaders(h, rh, f)
			}
		})
	}
}
