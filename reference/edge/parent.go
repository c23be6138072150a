package edge

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/routing"
	"github.com/edgeconform/edgeconform/reference/shield"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// parent is where this node's fills and uncached requests go: the origins,
// through the fetch engine (originParent), or a shield node (shieldParent,
// SHD-1). Both answer with a fetch.Result whose attempts carry a typed
// outcome (package outcome), so the cache treats them alike.
type parent interface {
	// prepare turns the client's headers (less hop-by-hop ones) into the
	// headers this parent gets, for a request on rule.
	prepare(h http.Header, rule *config.RouteRule)
	// keeps reports whether prepare would leave h (without hop-by-hop
	// fields) as it is.
	keeps(h http.Header, rule *config.RouteRule) bool
	// fetch sends u.
	fetch(ctx context.Context, u *upstreamReq) *fetch.Result
}

// upstreamReq is a request to this node's parent tier.
type upstreamReq struct {
	to            parent
	origin        string // the route's origin (the primary of the attempt chain)
	method        string
	header        http.Header
	body          io.Reader // nil: none
	contentLength int64     // -1 unknown
	reqID         string
	clientHost    string // the client's Host
	requestURI    string // the client's request-target, as it came
	originPath    string // the path and query after the route's rewrites
	hostRewrite   string // the route's urlRewrite.hostRewrite (HST-1)
}

// upstreamRequest is what goes up for v: the client's request less
// hop-by-hop headers, prepared by the parent the route's origin fills from.
// It is sent once, now, and nothing changes v's header meanwhile, so a
// header nothing needs to change is sent as it is, not copied (issue #14:
// a map and its fields per proxied request).
func (s *Server) upstreamRequest(v *visit) *upstreamReq {
	return s.upstreamFor(v.r, v.route, v.id, true)
}

// upstreamFor is upstreamRequest for the client's r on route, logged as
// request id; share: r's header may be used as it is when nothing changes
// it (not for fills, which set their own fields on it and outlive r).
func (s *Server) upstreamFor(r *http.Request, route *routing.Result, id string, share bool) *upstreamReq {
	to, ok := s.parents[route.Origin]
	if !ok {
		to = s.origins
	}
	var body io.Reader
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		body = r.Body
	}
	h := r.Header
	if !share || hasHopByHop(h) || !to.keeps(h, route.Rule) {
		h = h.Clone()
		upstream.RemoveHopByHop(h)
		to.prepare(h, route.Rule)
	}
	return &upstreamReq{to: to, origin: route.Origin, method: r.Method, header: h, body: body,
		contentLength: r.ContentLength, reqID: id, clientHost: r.Host, requestURI: r.URL.RequestURI(),
		originPath: route.OriginPath, hostRewrite: route.HostRewrite}
}

// fetchUpstream sends u to its parent tier.
func (s *Server) fetchUpstream(ctx context.Context, u *upstreamReq) *fetch.Result {
	res := u.to.fetch(ctx, u)
	s.metrics.observeFetch(res)
	return res
}

// originParent fills from the origins through the fetch engine (retries,
// failover, timeouts, redirects, signing).
type originParent struct{ engine *fetch.Engine }

// prepare applies the route's header action (HST-6: origin-level header
// actions come later, per origin, in fetch) and drops the tier marker,
// which is between tiers only.
func (p originParent) prepare(h http.Header, rule *config.RouteRule) {
	h.Del(shield.TierHeader)
	routing.ApplyRequestHeaders(h, rule.HeaderAction)
}

// keeps: no tier marker to drop and no request header action.
func (p originParent) keeps(h http.Header, rule *config.RouteRule) bool {
	if _, ok := h[shield.TierHeader]; ok {
		return false
	}
	a := rule.HeaderAction
	return a == nil || len(a.RequestHeadersToRemove) == 0 && len(a.RequestHeadersToAdd) == 0
}

// hasHopByHop reports whether h has a field upstream.RemoveHopByHop
// deletes (a Connection field naming others is one itself).
func hasHopByHop(h http.Header) bool {
	for k := range h {
		if upstream.IsHopByHop(k) {
			return true
		}
	}
	return false
}

func (p originParent) fetch(ctx context.Context, u *upstreamReq) *fetch.Result {
	return p.engine.Fetch(ctx, u.origin, fetch.Request{
		Method:           u.method,
		PathAndQuery:     u.originPath,
		Header:           u.header,
		ClientHost:       u.clientHost,
		RouteHostRewrite: u.hostRewrite,
		RequestID:        u.reqID,
		ContentLength:    u.contentLength,
		Body:             u.body,
	})
}

// shieldParent fills from a shield node (SHD-1), which routes the
// client's request itself and applies the header actions.
type shieldParent struct {
	client *shield.Client
	base   *url.URL
	tier   string // this node's name, in shield.TierHeader
}

// prepare leaves the client's headers as they came and marks the request
// as a child tier's.
func (p shieldParent) prepare(h http.Header, _ *config.RouteRule) { h.Set(shield.TierHeader, p.tier) }

// keeps: never, the tier marker is always set.
func (p shieldParent) keeps(http.Header, *config.RouteRule) bool { return false }

func (p shieldParent) fetch(ctx context.Context, u *upstreamReq) *fetch.Result {
	return p.client.Fetch(ctx, p.base, shield.Request{Method: u.method, Host: u.clientHost, RequestURI: u.requestURI,
		Header: u.header, RequestID: u.reqID, Body: u.body, ContentLength: u.contentLength})
}
