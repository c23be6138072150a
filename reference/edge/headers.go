package edge

import (
	"net/http"

	"github.com/edgeconform/edgeconform/reference/headervars"
	"github.com/edgeconform/edgeconform/reference/routing"
)

// WithGeo sets the client geography the response header variables
// {client_region}, {client_region_subdivision}, {client_city} and
// {client_city_lat_long} render (the same for every client: the reference
// has no IP geolocation). Without it they render "".
func WithGeo(g headervars.Geo) Option { return func(o *options) { o.geo = &g } }

// applyResponseHeaders applies the route's response header action,
// rendering its variables from this visit (Facts are built only for a
// route whose values have variables).
func (s *Server) applyResponseHeaders(h http.Header, v *visit) {
	rh := v.route.ResponseHeaders
	if !rh.Dynamic() {
		routing.ApplyResponseHeaders(h, rh, nil)
		return
	}
	f := headervars.Facts{
		CacheStatus: cacheStatusVar(v.cache),
		CacheID:     s.name,
		RequestID:   v.id,
		Geo:         s.geo,
		Request:     v.r,
	}
	routing.ApplyResponseHeaders(h, rh, &f)
}

// cacheStatusVar maps the edge's cache outcome (the log's cache_status) to
// Media CDN's {cdn_cache_status} values: a fresh hit is "hit", a stored
// object revalidated with the origin "revalidated_hit", a fill (also one a
// collapsed request waited for) "miss", and a route that does not cache
// "uncacheable".
func cacheStatusVar(outcome string) string {
	switch outcome {
	case "hit":
		return "hit"
	case "revalidated":
		return "revalidated_hit"
	case "miss", "collapsed":
		return "miss"
	}
	return "uncacheable"
}
