// Package headervars is Media CDN's dynamic header variables ("Define
// custom headers": a response header value such as "{cdn_cache_status}" or
// "region={client_region}"). A value is parsed once, when the configuration
// is loaded, into literal and variable parts (Parse); each response renders
// it from that request's Facts (Template.Render) without parsing again.
// Request headers take static values only (Static reports a value's first
// variable).
package headervars

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Var is one dynamic variable.
type Var uint8

// The variables, as Media CDN's "Define custom headers" page names them.
const (
	CDNCacheID Var = iota + 1
	CDNCacheStatus
	ClientCity
	ClientCityLatLong
	ClientRegion
	ClientRegionSubdivision
	ClientRTTMsec
	DeviceRequestType
	OriginRequestHeader
	OriginalRequestID
	TLSCipherSuite
	TLSSNIHostname
	TLSVersion
	UserAgentFamily
	XForwardedForRequestHeader
)

var names = map[string]Var{
	"cdn_cache_id":                   CDNCacheID,
	"cdn_cache_status":               CDNCacheStatus,
	"client_city":                    ClientCity,
	"client_city_lat_long":           ClientCityLatLong,
	"client_region":                  ClientRegion,
	"client_region_subdivision":      ClientRegionSubdivision,
	"client_rtt_msec":                ClientRTTMsec,
	"device_request_type":            DeviceRequestType,
	"origin_request_header":          OriginRequestHeader,
	"original_request_id":            OriginalRequestID,
	"tls_cipher_suite":               TLSCipherSuite,
	"tls_sni_hostname":               TLSSNIHostname,
	"tls_version":                    TLSVersion,
	"user_agent_family":              UserAgentFamily,
	"x_forwarded_for_request_header": XForwardedForRequestHeader,
}

// Names lists the variables' names, sorted.
func Names() []string {
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (v Var) String() string {
	for n, x := range names {
		if x == v {
			return "{" + n + "}"
		}
	}
	return fmt.Sprintf("Var(%d)", uint8(v))
}

// Template is a parsed header value. The zero Template renders "".
type Template struct {
	parts []part
	// literal is the whole value when it has no variables.
	literal string
	static  bool
}

type part struct {
	lit string
	v   Var // 0: lit only
}

// Parse splits s into literal text and {variable} parts. A brace pair
// around a lower-case name ("{client_region}") is a variable and must be
// one of Names; any other brace is literal text.
func Parse(s string) (Template, error) {
	t := Template{}
	var lit strings.Builder
	for i := 0; i < len(s); {
		name, n := varAt(s[i:])
		if n == 0 {
			lit.WriteByte(s[i])
			i++
			continue
		}
		v, ok := names[name]
		if !ok {
			return Template{}, fmt.Errorf("unknown header variable {%s} (Media CDN's are {%s})", name, strings.Join(Names(), "}, {"))
		}
		t.parts = append(t.parts, part{lit: lit.String(), v: v})
		lit.Reset()
		i += n
	}
	if len(t.parts) == 0 {
		return Template{literal: s, static: true}, nil
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{lit: lit.String()})
	}
	return t, nil
}

// varAt returns the name of a {name} at the start of s and its length,
// or 0 when s does not start with one.
func varAt(s string) (string, int) {
	if len(s) < 3 || s[0] != '{' {
		return "", 0
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '}' && i > 1:
			return s[1:i], i + 1
		case c >= 'a' && c <= 'z', c == '_', c >= '0' && c <= '9' && i > 1:
		default:
			return "", 0
		}
	}
	return "", 0
}

// Static returns the first variable in s ("" when s has none, or only
// braces that are not variables). Request headers take static values only.
func Static(s string) string {
	for i := 0; i < len(s); i++ {
		if name, n := varAt(s[i:]); n > 0 {
			return "{" + name + "}"
		}
	}
	return ""
}

// Static reports whether t has no variables.
func (t Template) Static() bool { return t.static || len(t.parts) == 0 }

// Vars lists the variables t uses, in order.
func (t Template) Vars() []Var {
	var out []Var
	for _, p := range t.parts {
		if p.v != 0 {
			out = append(out, p.v)
		}
	}
	return out
}

// Render is t with f's values.
func (t Template) Render(f *Facts) string {
	if t.static {
		return t.literal
	}
	var b strings.Builder
	for _, p := range t.parts {
		b.WriteString(p.lit)
		if p.v != 0 {
			b.WriteString(f.value(p.v))
		}
	}
	return b.String()
}

// Facts is what one response's variables are rendered from.
type Facts struct {
	// CacheStatus is {cdn_cache_status}: hit, miss, revalidated_hit,
	// uncacheable (see package edge for how its outcomes map).
	CacheStatus string
	// CacheID is {cdn_cache_id}: the node's name (--name).
	CacheID string
	// RequestID is {original_request_id}: the request's id in the log.
	RequestID string
	// Geo is the client's geography ({client_*}); see Geo.
	Geo *Geo
	// Request is the client's request: TLS, Origin, User-Agent and
	// X-Forwarded-For come from it.
	Request *http.Request
}

// Geo is client geography the reference cannot know: it has no IP
// geolocation database, so a node is told (edgecache serve
// --client-region etc.) and the values are the same for every client.
// A field not given renders as "" (the value is unknown).
type Geo struct {
	Region, Subdivision, City, CityLatLong string
}

func (f *Facts) value(v Var) string {
	r := f.Request
	switch v {
	case CDNCacheStatus:
		return f.CacheStatus
	case CDNCacheID:
		return f.CacheID
	case OriginalRequestID:
		return f.RequestID
	case ClientRegion, ClientRegionSubdivision, ClientCity, ClientCityLatLong:
		return f.geo(v)
	case ClientRTTMsec:
		return "" // the reference does not measure the client's RTT
	}
	if r == nil {
		return ""
	}
	return requestValue(v, r)
}

func (f *Facts) geo(v Var) string {
	if f.Geo == nil {
		return ""
	}
	switch v {
	case ClientRegion:
		return f.Geo.Region
	case ClientRegionSubdivision:
		return f.Geo.Subdivision
	case ClientCity:
		return f.Geo.City
	}
	return f.Geo.CityLatLong
}
