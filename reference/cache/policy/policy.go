package policy

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/internal/httpdate"
	"github.com/edgeconform/edgeconform/reference/config"
)

// Cache modes (cdnPolicy.cacheMode).
const (
	CacheAllStatic   = "CACHE_ALL_STATIC"
	UseOriginHeaders = "USE_ORIGIN_HEADERS"
	ForceCacheAll    = "FORCE_CACHE_ALL"
	BypassCache      = "BYPASS_CACHE"
)

// Defaults of an unset cdnPolicy (behaviour.md resource model).
const (
	DefaultTTL = 3600 * time.Second
	DefaultMax = 86400 * time.Second
)

// MaxObjectSize is CCH-1's size limit (100 GiB).
const MaxObjectSize = 100 << 30

// maxDelta caps delta-seconds (RFC 9111 1.2.2).
const maxDelta = 2147483648

// DefaultNegativeTTLs are CCH-5's negative caching TTLs.
var DefaultNegativeTTLs = map[int]time.Duration{
	300: 10 * time.Minute, 301: 10 * time.Minute, 308: 10 * time.Minute,
	404: 120 * time.Second, 410: 120 * time.Second, 451: 120 * time.Second,
	405: 60 * time.Second, 501: 60 * time.Second,
}

// cacheable is CCH-1's status set.
var cacheable = map[int]bool{
	200: true, 203: true, 204: true, 206: true,
	300: true, 301: true, 302: true, 307: true, 308: true,
	400: true, 403: true, 404: true, 405: true, 410: true, 451: true,
	500: true, 501: true, 502: true, 503: true, 504: true,
}

// CacheableStatus reports whether status is in CCH-1's set.
func CacheableStatus(status int) bool { return cacheable[status] }

// positive reports whether status follows the cache mode rather than
// negative caching (INT, see the package doc).
func positive(status int) bool {
	return status == 200 || status == 203 || status == 204 || status == 206
}

// Policy is a route's compiled cdnPolicy.
type Policy struct {
	Mode       string
	DefaultTTL time.Duration
	MaxTTL     time.Duration
	// ClientTTL is meaningful only when ClientTTLSet.
	ClientTTL    time.Duration
	ClientTTLSet bool
	// Negative maps the statuses negative caching stores to their TTLs;
	// nil when negative caching is off (CCH-5).
	Negative map[int]time.Duration
	key      config.CacheKeyPolicy
	// varyOK are the lower-cased header names a Vary may name (CCH-6).
	varyOK map[string]bool
	// headers are the lower-cased includedHeaderNames, sorted.
	headers []string
	cookies []string
}

// New compiles p; nil means Media CDN's defaults (CACHE_ALL_STATIC,
// defaultTtl 3600s, maxTtl 86400s, no clientTtl, negative caching off).
func New(p *config.CDNPolicy) Policy {
	pol := Policy{Mode: CacheAllStatic, DefaultTTL: DefaultTTL, MaxTTL: DefaultMax}
	if p != nil {
		if p.CacheMode != "" {
			pol.Mode = p.CacheMode
		}
		if p.DefaultTTL != nil {
			pol.DefaultTTL = p.DefaultTTL.D()
		}
		if p.MaxTTL != nil {
			pol.MaxTTL = p.MaxTTL.D()
		}
		if p.ClientTTL != nil {
			pol.ClientTTL, pol.ClientTTLSet = p.ClientTTL.D(), true
		}
		if p.NegativeCaching {
			pol.Negative = map[int]time.Duration{}
			if len(p.NegativeCachingPolicy) == 0 {
				for c, d := range DefaultNegativeTTLs {
					pol.Negative[c] = d
				}
			}
			for c, d := range p.NegativeCachingPolicy {
				if n, err := strconv.Atoi(c); err == nil {
					pol.Negative[n] = d.D()
				}
			}
		}
		if p.CacheKeyPolicy != nil {
			pol.key = *p.CacheKeyPolicy
		}
	}
	pol.varyOK = map[string]bool{"accept": true, "accept-encoding": true, "origin": true}
	for _, h := range pol.key.IncludedHeaderNames {
		l := strings.ToLower(strings.TrimSpace(h))
		pol.varyOK[l] = true
		if !slices.Contains(pol.headers, l) {
			pol.headers = append(pol.headers, l)
		}
	}
	slices.Sort(pol.headers)
	pol.cookies = slices.Clone(pol.key.IncludedCookieNames)
	slices.Sort(pol.cookies)
	pol.cookies = slices.Compact(pol.cookies)
	return pol
}

// Decision is Decide's verdict on one response.
type Decision struct {
	// Store: the response may be stored.
	Store bool
	// TTL is the freshness lifetime (0: revalidate before every use).
	TTL time.Duration
	// Reason says why not, or which rule gave the TTL, with its rule ID.
	Reason string
	// MustRevalidate: once stale, revalidate before use (CCH-4).
	MustRevalidate bool
	// NoCache: revalidate before every use (CCH-4).
	NoCache bool
	// ClientCacheControl is the Cache-Control to send the client when
	// clientTtl is set (empty: pass the origin's through).
	ClientCacheControl string
}

func no(format string, a ...any) Decision {
	return Decision{Reason: fmt.Sprintf(format, a...)}
}

// Decide says whether the response (status, h) to req may be stored, and
// for how long (CCH-1, CCH-2, CCH-3, CCH-4, CCH-5, CCH-7). now is when the
// response was received; it stands in for a missing Date.
func (p Policy) Decide(req *http.Request, status int, h http.Header, now time.Time) Decision {
	method := http.MethodGet
	var reqH http.Header
	if req != nil {
		method, reqH = req.Method, req.Header
		if method == "" {
			method = http.MethodGet
		}
	}
	cc := ParseCacheControl(h)
	if why := p.refusal(method, reqH, status, h, cc); why != "" {
		return Decision{Reason: why}
	}
	var d Decision
	if p.Mode != ForceCacheAll {
		_, sMaxAge := cc.Seconds("s-maxage")
		d.NoCache = cc.Has("no-cache")
		d.MustRevalidate = cc.Has("must-revalidate") || cc.Has("proxy-revalidate") || sMaxAge
	}
	d, ok := p.lifetime(d, status, cc, h, now)
	if !ok {
		return d
	}
	d.Store = true
	d.ClientCacheControl = p.clientCC(cc, d.TTL)
	return d
}

// refusal says why a response (status, h, its Cache-Control cc) to a
// request (method, reqH) may not be stored whatever its lifetime, with the
// rule ID, or "" when nothing forbids it (CCH-1, CCH-2, CCH-6).
func (p Policy) refusal(method string, reqH http.Header, status int, h http.Header, cc CacheControl) string {
	switch p.Mode {
	case CacheAllStatic, UseOriginHeaders, ForceCacheAll:
	case BypassCache:
		return "CCH-2: BYPASS_CACHE"
	default:
		return fmt.Sprintf("CCH-2: unknown cache mode %q", p.Mode)
	}
	if method != http.MethodGet && method != http.MethodHead {
		return fmt.Sprintf("CCH-1: method %s is not cacheable", method)
	}
	if !cacheable[status] {
		return fmt.Sprintf("CCH-1: status %d is not cacheable", status)
	}
	if _, ok := h["Set-Cookie"]; ok {
		return "CCH-1: response has Set-Cookie"
	}
	if ParseCacheControl(reqH).Has("no-store") {
		return "CCH-1: request has Cache-Control: no-store"
	}
	if n, ok := objectSize(status, h); ok && n > MaxObjectSize {
		return fmt.Sprintf("CCH-1: object of %d bytes exceeds 100 GiB", n)
	}
	_, sMaxAge := cc.Seconds("s-maxage")
	if reqH.Get("Authorization") != "" && !cc.Has("public") && !sMaxAge && !cc.Has("must-revalidate") {
		return "CCH-1: request has Authorization and the response is not public"
	}
	if name, ok := p.varyAllowed(h.Values("Vary")); !ok {
		return fmt.Sprintf("CCH-6: Vary on %s is not allowed", name)
	}
	if p.Mode != ForceCacheAll {
		if cc.Has("no-store") {
			return "CCH-1: response has no-store"
		}
		if cc.Has("private") {
			return "CCH-1: response is private"
		}
	}
	return ""
}

// lifetime sets d's TTL and reason for a storable response (CCH-2, CCH-3,
// CCH-4, CCH-5, CCH-7), or returns the refusal and false when its mode,
// status or directives give it none.
func (p Policy) lifetime(d Decision, status int, cc CacheControl, h http.Header, now time.Time) (Decision, bool) {
	force := p.Mode == ForceCacheAll
	ttl, src, explicit := explicitTTL(cc, len(cc) > 0, h, now)
	capped := func() (time.Duration, string) {
		if p.Mode == CacheAllStatic && ttl > p.MaxTTL {
			return p.MaxTTL, "CCH-2: " + src + " capped at maxTtl"
		}
		return ttl, "CCH-3: " + src
	}
	switch {
	case !positive(status):
		if p.Negative == nil {
			return no("CCH-5: negative caching is off (status %d)", status), false
		}
		nttl, ok := p.Negative[status]
		if !ok {
			return no("CCH-5: status %d is not in the negative caching policy", status), false
		}
		if !force && explicit {
			d.TTL, d.Reason = capped()
		} else {
			d.TTL, d.Reason = nttl, fmt.Sprintf("CCH-5: negative caching TTL for %d", status)
		}
	case force:
		d.TTL, d.Reason = p.DefaultTTL, "CCH-2: FORCE_CACHE_ALL defaultTtl"
	case explicit:
		d.TTL, d.Reason = capped()
	case p.Mode == CacheAllStatic && StaticContentType(h.Get("Content-Type")):
		d.TTL, d.Reason = p.DefaultTTL, "CCH-2: static content type without directives, defaultTtl"
	case d.NoCache:
		d.TTL, d.Reason = 0, "CCH-4: no-cache, revalidate before each use"
	case p.Mode == CacheAllStatic:
		return no("CCH-2: non-static content type %q without freshness directives", h.Get("Content-Type")), false
	default:
		return no("CCH-7: no explicit freshness (heuristic freshness is not used)"), false
	}
	return d, true
}

// clientCC is the client Cache-Control under clientTtl.
func (p Policy) clientCC(cc CacheControl, ttl time.Duration) string {
	if !p.ClientTTLSet || (p.Mode != CacheAllStatic && p.Mode != ForceCacheAll) {
		return ""
	}
	n := min(p.ClientTTL, ttl)
	if p.Mode == CacheAllStatic {
		if s, ok := cc.Seconds("max-age"); ok {
			n = min(s, p.ClientTTL)
		}
	}
	return "public, max-age=" + strconv.FormatInt(int64(n/time.Second), 10)
}

// explicitTTL is the response's explicit freshness lifetime (RFC 9111
// 4.2.1, CCH-3): s-maxage, else max-age, else Expires - Date when there is
// no Cache-Control at all.
func explicitTTL(cc CacheControl, hasCC bool, h http.Header, now time.Time) (time.Duration, string, bool) {
	if s, ok := cc.Seconds("s-maxage"); ok {
		return s, "s-maxage", true
	}
	if s, ok := cc.Seconds("max-age"); ok {
		return s, "max-age", true
	}
	if hasCC {
		return 0, "", false
	}
	ev, ok := h["Expires"]
	if !ok {
		return 0, "", false
	}
	if len(ev) > 1 { // RFC 9111 4.2.1: several Expires lines, considered stale
		return 0, "Expires (several field lines: already expired)", true
	}
	exp, err := ParseHTTPDate(first(ev)) // RFC 9111 5.3: strictly an HTTP-date
	if err != nil {
		return 0, "Expires (invalid: already expired)", true
	}
	date, err := httpdate.Parse(h.Get("Date"))
	if err != nil {
		date = now
	}
	if !exp.After(date) {
		return 0, "Expires (not after Date: already expired)", true
	}
	return min(exp.Sub(date), maxDelta*time.Second), "Expires", true
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// staticTypes are CACHE_ALL_STATIC's exact static media types; font/*,
// image/*, video/* and audio/* are static too.
var staticTypes = map[string]bool{
	"text/css":                      true,
	"text/javascript":               true,
	"text/ecmascript":               true,
	"application/javascript":        true,
	"application/x-javascript":      true,
	"application/ecmascript":        true,
	"application/pdf":               true,
	"application/wasm":              true,
	"application/vnd.apple.mpegurl": true,
	"application/x-mpegurl":         true,
	"application/dash+xml":          true,
	"application/vnd.ms-sstr+xml":   true,
	"application/vnd.ms-fontobject": true,
	"application/font-woff":         true,
	"application/font-woff2":        true,
	"application/x-font-ttf":        true,
	"application/x-font-truetype":   true,
	"application/x-font-opentype":   true,
}

// StaticContentType reports whether a Content-Type value is static content
// for CACHE_ALL_STATIC (CCH-2): text/css, text/javascript, text/ecmascript,
// application/javascript, application/x-javascript, application/ecmascript,
// font/*, image/*, video/*, audio/*, application/pdf, application/wasm, HLS
// (application/vnd.apple.mpegurl, application/x-mpegurl), DASH
// (application/dash+xml), Smooth Streaming (application/vnd.ms-sstr+xml) and
// the legacy font types (application/vnd.ms-fontobject,
// application/font-woff, application/font-woff2, application/x-font-ttf,
// application/x-font-truetype, application/x-font-opentype).
func StaticContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	if staticTypes[mt] {
		return true
	}
	top, sub, ok := strings.Cut(mt, "/")
	if !ok || sub == "" {
		return false
	}
	switch top {
	case "font", "image", "video", "audio":
		return true
	}
	return false
}

// objectSize is the whole object's size: a 206's complete length, else
// Content-Length.
func objectSize(status int, h http.Header) (int64, bool) {
	if status == http.StatusPartialContent {
		if _, _, total, ok := ParseContentRange(h.Get("Content-Range")); ok {
			return total, true
		}
	}
	return parseContentLength(h)
}

// CacheControl is a parsed Cache-Control field: lower-cased directive names
// to their (unquoted) values; the first occurrence of a directive counts.
type CacheControl map[string]string

// Has reports whether directive d is present.
func (c CacheControl) Has(d string) bool { _, ok := c[d]; return ok }

// Seconds is a delta-seconds directive's value, if valid (capped at
// 2147483648 s).
func (c CacheControl) Seconds(d string) (time.Duration, bool) {
	v, ok := c[d]
	if !ok || v == "" {
		return 0, false
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > maxDelta {
		n = maxDelta
	}
	return time.Duration(n) * time.Second, true
}

// ParseCacheControl parses every Cache-Control field line of h.
func ParseCacheControl(h http.Header) CacheControl {
	cc := CacheControl{}
	for _, line := range h.Values("Cache-Control") {
		for _, part := range splitQuoted(line) {
			name, val, _ := strings.Cut(part, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			val = strings.TrimSpace(val)
			if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
				val = strings.ReplaceAll(val[1:len(val)-1], `\`, "")
			}
			if _, dup := cc[name]; !dup {
				cc[name] = val
			}
		}
	}
	return cc
}

// splitQuoted splits s on commas outside quoted strings.
func splitQuoted(s string) []string {
	var out []string
	quoted, esc, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case esc:
			esc = false
		case quoted && c == '\\':
			esc = true
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
