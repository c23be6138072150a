package routing

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"sort"
	"strings"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/pathtemplate"
)

// route is a compiled RouteRule.
type route struct {
	rule    config.RouteRule
	matches []matchRule
	methods map[string]bool
	allow   []string // methods, in a stable order, for 405's Allow

	prefixRewrite    string
	hasPrefixRewrite bool
	templateRewrite  *pathtemplate.Rewrite
	hostRewrite      string
	redirect         *redirectSpec
	respHeaders      *ResponseHeaders
}

type pathKind int

const (
	kindPrefix pathKind = iota
	kindFull
	kindTemplate
)

// matchRule is a compiled MatchRule: the path criterion and every header
// and query criterion must hold.
type matchRule struct {
	kind       pathKind
	value      string // prefixMatch or fullPathMatch
	ignoreCase bool
	tmpl       *pathtemplate.Template
	headers    []headerMatcher
	queries    []queryMatcher
}

// defaultMethods are allowed on a route without routeMethods (MTH-1).
var defaultMethods = []string{http.MethodGet, http.MethodHead, http.MethodOptions}

// methodOrder is the order of Allow lists; other methods follow sorted.
var methodOrder = []string{"GET", "HEAD", "OPTIONS", "PUT", "POST", "DELETE", "PATCH"}

func compileRoute(rr config.RouteRule, field string) (*route, error) {
	r := &route{rule: rr}
	rh, err := compileResponseHeaders(rr.HeaderAction, field)
	if err != nil {
		return nil, err
	}
	r.respHeaders = rh

	// Exactly one of origin and urlRedirect (a Result has exactly one).
	switch {
	case rr.Origin == "" && rr.URLRedirect == nil:
		return nil, fmt.Errorf("%s: one of origin and urlRedirect is required", field)
	case rr.Origin != "" && rr.URLRedirect != nil:
		return nil, fmt.Errorf("%s: origin and urlRedirect are mutually exclusive", field)
	}

	if len(rr.MatchRules) == 0 {
		return nil, fmt.Errorf("%s.matchRules: at least one match rule is required", field)
	}
	for i, mr := range rr.MatchRules {
		m, err := compileMatch(mr, fmt.Sprintf("%s.matchRules[%d]", field, i))
		if err != nil {
			return nil, err
		}
		r.matches = append(r.matches, m)
	}

	if r.methods, r.allow, err = compileMethods(rr.RouteMethods, field); err != nil {
		return nil, err
	}
	if ra := rr.RouteAction; ra != nil && ra.URLRewrite != nil {
		if err := r.compileRewrite(ra.URLRewrite, field+".routeAction.urlRewrite"); err != nil {
			return nil, err
		}
	}

	if rr.URLRedirect != nil {
		rd, err := compileRedirect(rr.URLRedirect, field+".urlRedirect")
		if err != nil {
			return nil, err
		}
		r.redirect = rd
	}
	return r, nil
}

// compileMethods is a route's allowed methods and its 405's Allow list
// (MTH-1). INT: HEAD is allowed whenever GET is; an empty list is the
// default set.
func compileMethods(rm *config.RouteMethods, field string) (map[string]bool, []string, error) {
	methods := defaultMethods
	if rm != nil && len(rm.AllowedMethods) > 0 {
		methods = nil
		for i, m := range rm.AllowedMethods {
			m = strings.ToUpper(strings.TrimSpace(m))
			if m == "" {
				return nil, nil, fmt.Errorf("%s.routeMethods.allowedMethods[%d]: empty method", field, i)
			}
			methods = append(methods, m)
			if m == http.MethodGet {
				methods = append(methods, http.MethodHead)
			}
		}
	}
	allowed := make(map[string]bool, len(methods))
	for _, m := range methods {
		allowed[m] = true
	}
	var allow []string
	for _, m := range methodOrder {
		if allowed[m] {
			allow = append(allow, m)
		}
	}
	var others []string
	for m := range allowed {
		if !slices.Contains(methodOrder, m) {
			others = append(others, m)
		}
	}
	sort.Strings(others)
	return allowed, append(allow, others...), nil
}

// compileRewrite compiles the route's urlRewrite (MTH-7) at field; the
// match rules are compiled already.
func (r *route) compileRewrite(uw *config.URLRewrite, f string) error {
	r.hostRewrite = uw.HostRewrite
	if uw.PathPrefixRewrite != "" && uw.PathTemplateRewrite != "" {
		return fmt.Errorf("%s: pathPrefixRewrite and pathTemplateRewrite are mutually exclusive", f)
	}
	if uw.PathPrefixRewrite != "" {
		if !strings.HasPrefix(uw.PathPrefixRewrite, "/") {
			return fmt.Errorf("%s.pathPrefixRewrite: must start with /", f)
		}
		r.prefixRewrite, r.hasPrefixRewrite = uw.PathPrefixRewrite, true
	}
	if uw.PathTemplateRewrite == "" {
		return nil
	}
	rw, err := pathtemplate.CompileRewrite(uw.PathTemplateRewrite)
	if err != nil {
		return fmt.Errorf("%s.pathTemplateRewrite: %v", f, err)
	}
	// Every match rule must be a template capturing every variable the
	// rewrite uses.
	for i, m := range r.matches {
		if m.kind != kindTemplate {
			return fmt.Errorf("%s.pathTemplateRewrite: needs a pathTemplateMatch in every match rule (matchRules[%d] has none)", f, i)
		}
		for _, v := range rw.Vars() {
			if !slices.Contains(m.tmpl.Vars(), v) {
				return fmt.Errorf("%s.pathTemplateRewrite: variable {%s} is not captured by matchRules[%d].pathTemplateMatch", f, v, i)
			}
		}
	}
	r.templateRewrite = rw
	return nil
}

func compileMatch(mr config.MatchRule, field string) (matchRule, error) {
	m := matchRule{ignoreCase: mr.IgnoreCase}
	n := 0
	if mr.PrefixMatch != "" {
		n++
		m.kind, m.value = kindPrefix, mr.PrefixMatch
		if !strings.HasPrefix(mr.PrefixMatch, "/") {
			return m, fmt.Errorf("%s.prefixMatch: must start with /", field)
		}
	}
	if mr.FullPathMatch != "" {
		n++
		m.kind, m.value = kindFull, mr.FullPathMatch
		if !strings.HasPrefix(mr.FullPathMatch, "/") {
			return m, fmt.Errorf("%s.fullPathMatch: must start with /", field)
		}
	}
	if mr.PathTemplateMatch != "" {
		n++
		t, err := pathtemplate.Compile(mr.PathTemplateMatch, mr.IgnoreCase)
		if err != nil {
			return m, fmt.Errorf("%s.pathTemplateMatch: %v", field, err)
		}
		m.kind, m.tmpl = kindTemplate, t
	}
	if n != 1 {
		return m, fmt.Errorf("%s: exactly one of prefixMatch, fullPathMatch and pathTemplateMatch is required (%d set)", field, n)
	}
	for i, hm := range mr.HeaderMatches {
		h, err := compileHeaderMatch(hm)
		if err != nil {
			return m, fmt.Errorf("%s.headerMatches[%d]: %v", field, i, err)
		}
		m.headers = append(m.headers, h)
	}
	for i, qm := range mr.QueryParameterMatches {
		if qm.Name == "" {
			return m, fmt.Errorf("%s.queryParameterMatches[%d].name: required", field, i)
		}
		if qm.PresentMatch != nil && qm.ExactMatch != "" {
			return m, fmt.Errorf("%s.queryParameterMatches[%d]: presentMatch and exactMatch are mutually exclusive", field, i)
		}
		q := queryMatcher{name: qm.Name, value: qm.ExactMatch}
		if qm.PresentMatch != nil {
			q.isPresent, q.present = true, *qm.PresentMatch
		}
		m.queries = append(m.queries, q)
	}
	return m, nil
}

// match reports whether the request satisfies every criterion of m, with
// the template's captures.
func (m *matchRule) match(rc *reqCtx) (map[string]string, bool) {
	var caps map[string]string
	switch m.kind {
	case kindPrefix:
		if !hasPrefix(rc.path, m.value, m.ignoreCase) {
			return nil, false
		}
	case kindFull:
		if !equal(rc.path, m.value, m.ignoreCase) {
			return nil, false
		}
	case kindTemplate:
		var ok bool
		if caps, ok = m.tmpl.Match(rc.path); !ok {
			return nil, false
		}
	}
	for i := range m.headers {
		if !m.headers[i].match(rc.req) {
			return nil, false
		}
	}
	for i := range m.queries {
		if !m.queries[i].match(rc.query) {
			return nil, false
		}
	}
	return caps, true
}

// replacePrefix replaces what m matched of path with repl: the prefix of a
// prefixMatch, or (INT) the whole path for a fullPathMatch or template.
func (m *matchRule) replacePrefix(path, repl string) string {
	if m.kind == kindPrefix && len(path) >= len(m.value) {
		return repl + path[len(m.value):]
	}
	return repl
}

// hasPrefix compares byte for byte, or ASCII-case-insensitively over the
// same byte length (ignoreCase), so that the matched prefix has exactly
// len(prefix) bytes.
func hasPrefix(s, prefix string, fold bool) bool {
	if len(s) < len(prefix) {
		return false
	}
	return equal(s[:len(prefix)], prefix, fold)
}

func equal(a, b string, fold bool) bool {
	if !fold {
		return a == b
	}
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

type headerKind int

const (
	headerPresent headerKind = iota
	headerExact
	headerPrefix
	headerSuffix
)

type headerMatcher struct {
	name    string // canonical
	isHost  bool
	kind    headerKind
	value   string
	present bool
	invert  bool
}

func compileHeaderMatch(hm config.HeaderMatch) (headerMatcher, error) {
	if hm.HeaderName == "" {
		return headerMatcher{}, fmt.Errorf("headerName: required")
	}
	h := headerMatcher{name: textproto.CanonicalMIMEHeaderKey(hm.HeaderName), invert: hm.InvertMatch}
	h.isHost = h.name == "Host"
	n := 0
	if hm.PresentMatch != nil {
		n++
		h.kind, h.present = headerPresent, *hm.PresentMatch
	}
	if hm.ExactMatch != "" {
		n++
		h.kind, h.value = headerExact, hm.ExactMatch
	}
	if hm.PrefixMatch != "" {
		n++
		h.kind, h.value = headerPrefix, hm.PrefixMatch
	}
	if hm.SuffixMatch != "" {
		n++
		h.kind, h.value = headerSuffix, hm.SuffixMatch
	}
	switch n {
	case 0: // INT: indistinguishable from exactMatch: ""
		h.kind = headerExact
	case 1:
	default:
		return h, fmt.Errorf("only one of presentMatch, exactMatch, prefixMatch and suffixMatch may be set")
	}
	return h, nil
}

func (h *headerMatcher) match(req *http.Request) bool {
	var values []string
	if h.isHost {
		if req.Host != "" {
			values = []string{req.Host}
		}
	} else {
		values = req.Header[h.name]
	}
	ok := false
	switch h.kind {
	case headerPresent:
		ok = (len(values) > 0) == h.present
	default:
		for _, v := range values { // values as sent; any may match
			switch h.kind {
			case headerExact:
				ok = v == h.value
			case headerPrefix:
				ok = strings.HasPrefix(v, h.value)
			case headerSuffix:
				ok = strings.HasSuffix(v, h.value)
			}
			if ok {
				break
			}
		}
	}
	return ok != h.invert
}

type queryMatcher struct {
	name      string
	isPresent bool
	present   bool
	value     string // exactMatch, compared with the decoded value
}

func (q *queryMatcher) match(query map[string][]string) bool {
	values, has := query[q.name]
	if q.isPresent {
		return has == q.present
	}
	for _, v := range values {
		if v == q.value {
			return true
		}
	}
	return false
}
