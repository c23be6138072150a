package routing

import (
	"net/http"

	"github.com/edgeconform/edgeconform/reference/config"
)

// ApplyRequestHeaders applies a route's headerAction to the request
// headers sent to the origin: requestHeadersToRemove first, then
// requestHeadersToAdd. a may be nil. The Host header is not the fetch
// layer's http.Header: its precedence (HST-1) lives there.
func ApplyRequestHeaders(h http.Header, a *config.HeaderAction) {
	if a == nil {
		return
	}
	apply(h, a.RequestHeadersToRemove, a.RequestHeadersToAdd)
}

// ApplyResponseHeaders applies a route's headerAction to the response
// headers sent to the client: responseHeadersToRemove first, then
// responseHeadersToAdd. a may be nil.
func ApplyResponseHeaders(h http.Header, a *config.HeaderAction) {
	if a == nil {
		return
	}
	apply(h, a.ResponseHeadersToRemove, a.ResponseHeadersToAdd)
}

// apply removes, then adds. INT: replace=true deletes the values the
// header had before this action; every add is then appended, so several
// adds of one name all survive.
func apply(h http.Header, remove []config.HeaderToRemove, add []config.HeaderToAdd) {
	for _, r := range remove {
		h.Del(r.HeaderName)
	}
	for _, a := range add {
		if a.Replace {
			h.Del(a.HeaderName)
		}
	}
	for _, a := range add {
		h.Add(a.HeaderName, a.HeaderValue)
	}
}
