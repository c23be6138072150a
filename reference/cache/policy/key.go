package policy

import (
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
)

// Key is the request's cache key (CCH-6): by default host + path + sorted
// query string, shaped by the route's cacheKeyPolicy. Call it with the
// client's request as routed, before any urlRewrite (MTH-7). The format is
// in the package doc.
func (p Policy) Key(r *http.Request) string {
	k := p.key
	var b strings.Builder
	// One allocation for the common key (issue #14: the builder's growth
	// was two or three per hit): room for scheme, host, path and query.
	n := len("https://") + len(r.Host) + 1
	if r.URL != nil {
		n += len(r.URL.Path) + len(r.URL.RawPath) + len(r.URL.RawQuery) + 1
	}
	b.Grow(n)
	if k.IncludeProtocol {
		b.WriteString(scheme(r))
		b.WriteByte(':')
	}
	if !k.ExcludeHost {
		b.WriteString("//")
		b.WriteString(keyHost(r))
	}
	path := "/"
	if r.URL != nil {
		if ep := r.URL.EscapedPath(); ep != "" {
			path = ep
		}
	}
	b.WriteString(path)
	if !k.ExcludeQueryString && r.URL != nil {
		if q := sortedQuery(r.URL.RawQuery, k.IncludedQueryParameters, k.ExcludedQueryParameters); q != "" {
			b.WriteByte('?')
			b.WriteString(q)
		}
	}
	for _, name := range p.headers {
		b.WriteString("\nheader:")
		b.WriteString(name)
		if v := r.Header.Values(textproto.CanonicalMIMEHeaderKey(name)); len(v) > 0 {
			b.WriteByte('=')
			b.WriteString(strings.Join(v, ","))
		}
	}
	for _, name := range p.cookies {
		b.WriteString("\ncookie:")
		b.WriteString(name)
		if c, err := r.Cookie(name); err == nil {
			b.WriteByte('=')
			b.WriteString(c.Value)
		}
	}
	return b.String()
}

func scheme(r *http.Request) string {
	if r.URL != nil && r.URL.Scheme != "" {
		return strings.ToLower(r.URL.Scheme)
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// keyHost is the request host, lower-cased, without its port.
func keyHost(r *http.Request) string {
	h := r.Host
	if h == "" && r.URL != nil {
		h = r.URL.Host
	}
	h = strings.ToLower(h)
	if !strings.ContainsAny(h, ":[]") {
		return h // no port, no IPv6 literal: as it is (no SplitHostPort error to build)
	}
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h
}

type qpair struct{ name, raw string }

// sortedQuery filters and sorts a raw query: pairs by decoded name, then by
// raw text, keeping their raw encoding.
func sortedQuery(raw string, include, exclude []string) string {
	var pairs []qpair
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		n, _, _ := strings.Cut(part, "=")
		if d, err := url.QueryUnescape(n); err == nil {
			n = d
		}
		if len(include) > 0 && !slices.Contains(include, n) {
			continue
		}
		if slices.Contains(exclude, n) {
			continue
		}
		pairs = append(pairs, qpair{n, part})
	}
	slices.SortFunc(pairs, func(a, b qpair) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.raw, b.raw)
	})
	s := make([]string, len(pairs))
	for i, q := range pairs {
		s[i] = q.raw
	}
	return strings.Join(s, "&")
}

// defaultVary are the headers a Vary may name for every route (CCH-6).
var defaultVary = map[string]bool{"accept": true, "accept-encoding": true, "origin": true}

// varyNames are the lower-cased header names of Vary field lines.
func varyNames(vary []string) []string {
	var out []string
	for _, line := range vary {
		for n := range strings.SplitSeq(line, ",") {
			if n = strings.ToLower(strings.TrimSpace(n)); n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// varyAllowed reports whether every header vary names is allowed for this
// route, and if not, the first one that is not.
func (p Policy) varyAllowed(vary []string) (string, bool) {
	allowed := p.varyOK
	if allowed == nil {
		allowed = defaultVary
	}
	for _, n := range varyNames(vary) {
		if !allowed[n] {
			return n, false
		}
	}
	return "", true
}

// VaryKey extends a base key with the values of the request headers the
// response's Vary field lines (vary) name (CCH-6), allowing Accept,
// Accept-Encoding and Origin. ok is false (not cacheable) for Vary: * or
// any other header. Policy.VaryKey also allows the route's
// includedHeaderNames.
func VaryKey(base string, vary []string, r *http.Request) (string, bool) {
	return Policy{}.VaryKey(base, vary, r)
}

// VaryKey is the package VaryKey, also allowing the route's
// includedHeaderNames in Vary.
func (p Policy) VaryKey(base string, vary []string, r *http.Request) (string, bool) {
	if _, ok := p.varyAllowed(vary); !ok {
		return "", false
	}
	names := varyNames(vary)
	if len(names) == 0 {
		return base, true
	}
	var b strings.Builder
	b.WriteString(base)
	for _, n := range names {
		b.WriteString("\nvary:")
		b.WriteString(n)
		if v := r.Header.Values(textproto.CanonicalMIMEHeaderKey(n)); len(v) > 0 {
			b.WriteByte('=')
			b.WriteString(strings.Join(v, ","))
		}
	}
	return b.String(), true
}
