package routing

import (
	"fmt"
	"net/http"
	"net/textproto"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/headervars"
)

// ApplyRequestHeaders applies a route's headerAction to the request
// headers sent to the origin: requestHeadersToRemove first, then
// requestHeadersToAdd (static values only: config validation refuses
// variables there). a may be nil. The Host header is not the fetch
// layer's http.Header: its precedence (HST-1) lives there.
func ApplyRequestHeaders(h http.Header, a *config.HeaderAction) {
	if a == nil {
		return
	}
	for _, r := range a.RequestHeadersToRemove {
		h.Del(r.HeaderName)
	}
	for _, a := range a.RequestHeadersToAdd {
		if a.Replace {
			h.Del(a.HeaderName)
		}
	}
	for _, a := range a.RequestHeadersToAdd {
		h.Add(a.HeaderName, a.HeaderValue)
	}
}

// ResponseHeaders is a route's compiled response header action: the
// values parsed once, when the route was compiled, into literal and
// variable parts (package headervars).
type ResponseHeaders struct {
	remove  []string // canonical names
	add     []responseHeader
	dynamic bool // some value has a variable
}

type responseHeader struct {
	name    string // canonical
	value   headervars.Template
	replace bool
}

// compileResponseHeaders compiles a's response headers; nil when it has
// none.
func compileResponseHeaders(a *config.HeaderAction, field string) (*ResponseHeaders, error) {
	if a == nil || len(a.ResponseHeadersToAdd) == 0 && len(a.ResponseHeadersToRemove) == 0 {
		return nil, nil
	}
	rh := &ResponseHeaders{}
	for _, r := range a.ResponseHeadersToRemove {
		rh.remove = append(rh.remove, textproto.CanonicalMIMEHeaderKey(r.HeaderName))
	}
	for i, h := range a.ResponseHeadersToAdd {
		t, err := headervars.Parse(h.HeaderValue)
		if err != nil {
			return nil, fmt.Errorf("%s.headerAction.responseHeadersToAdd[%d].headerValue: %v", field, i, err)
		}
		rh.dynamic = rh.dynamic || !t.Static()
		rh.add = append(rh.add, responseHeader{name: textproto.CanonicalMIMEHeaderKey(h.HeaderName), value: t, replace: h.Replace})
	}
	return rh, nil
}

// Dynamic reports whether some value has a variable, so that the caller
// builds Facts only then. rh may be nil.
func (rh *ResponseHeaders) Dynamic() bool { return rh != nil && rh.dynamic }

// ApplyResponseHeaders applies a route's response header action to the
// response headers sent to the client: responseHeadersToRemove first,
// then responseHeadersToAdd, each value rendered with f (which may be nil
// when !rh.Dynamic()). rh may be nil. INT: replace=true deletes the values
// the header had before this action; every add is then appended, so
// several adds of one name all survive.
func ApplyResponseHeaders(h http.Header, rh *ResponseHeaders, f *headervars.Facts) {
	if rh == nil {
		return
	}
	for _, name := range rh.remove {
		delete(h, name)
	}
	for _, a := range rh.add {
		if a.replace {
			delete(h, a.name)
		}
	}
	if f == nil {
		f = &headervars.Facts{}
	}
	for _, a := range rh.add {
		h[a.name] = append(h[a.name], a.value.Render(f))
	}
}
