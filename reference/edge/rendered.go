package edge

import (
	"net/http"

	"github.com/edgeconform/edgeconform/reference/cache/session"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/h1serve"
	"github.com/edgeconform/edgeconform/reference/routing"
	"github.com/edgeconform/edgeconform/reference/shield"
)

// renderedHead is what the edge keeps in a stored entry's memo
// (entry.Memo, issue #14): the response fields of a plain GET hit on one
// route, all but Age, rendered once by the client-facing server
// (h1serve.Render) from the head the map path built. A hit that finds it
// for its route sends it with its own Age (h1serve.FieldsWriter) and
// builds no header map: no copy of the stored fields, no route header
// action applied again, no sort. The bytes are the map path's: only the
// fields that vary per hit are Age (given each time) and Date when the
// origin sent none (the server's own, as on the map path).
type renderedHead struct {
	rule    *config.RouteRule // the route rule and its header action
	headers *routing.ResponseHeaders
	member  string // the Cache-Status member the fields hold
	fields  *h1serve.Fields
	// key and keyPrint: the entry's cache key and its log fingerprint
	// (LOG-2), hashed once per entry rather than on every hit.
	key, keyPrint string
}

// renderable reports whether v's answer a may be sent with, and recorded
// as, rendered fields: a fresh hit of a stored entry for a plain GET (no
// Range, no conditional field: serveWhole's case), not from a child tier
// (which may get shield.UncacheableHeader), on a route whose response
// header action does not depend on the request, through a writer that
// takes rendered fields.
func renderable(v *visit, a *session.Answer) bool {
	if a.Memo == nil || a.Age == "" || v.r.Method != http.MethodGet || !plainRequest(v.r) {
		return false
	}
	if _, tier := v.r.Header[shield.TierHeader]; tier {
		return false
	}
	if v.route.ResponseHeaders.Dynamic() {
		return false
	}
	_, ok := v.w.(h1serve.FieldsWriter)
	return ok
}

// rendered is the entry's rendered head for v's route, or nil.
func rendered(v *visit, a *session.Answer) *renderedHead {
	rh, _ := a.Memo.Load().(*renderedHead)
	if rh == nil || rh.rule != v.route.Rule || rh.headers != v.route.ResponseHeaders || rh.member != a.Member {
		return nil
	}
	return rh
}

// remember renders h, the head the map path built for v's answer a, into
// the entry's memo for the hits after it.
func remember(v *visit, a *session.Answer, h http.Header) {
	if f := h1serve.Render(h, "Age"); f != nil {
		a.Memo.Store(&renderedHead{rule: v.route.Rule, headers: v.route.ResponseHeaders, member: a.Member, fields: f,
			key: v.cacheKey, keyPrint: keyFingerprint(v.cacheKey)})
	}
}
