package routing

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/edgeconform/edgeconform/reference/config"
)

// Router routes requests for one EdgeCacheService. It is immutable after
// New and safe for concurrent use.
type Router struct {
	hosts    hostTable
	matchers []pathMatcher
}

type pathMatcher struct {
	name   string
	routes []*route // sorted by ascending priority (MTH-4)
	// needQuery is set when some match rule looks at query parameters, so
	// that Route parses the query only when it has to.
	needQuery bool
}

// Result is the route a request matched and what to do with it.
type Result struct {
	Rule        *config.RouteRule // the matched route rule (the Router's copy: do not modify)
	PathMatcher string            // name of the path matcher the host selected
	Priority    int64
	Captures    map[string]string // pathTemplateMatch variables; nil for other match kinds
	Path        string            // normalised request path that was matched (MTH-6): the cache key's path

	// After rewrites (MTH-7: applied after matching; the cache key uses
	// the unrewritten request). Empty when Redirect is set.
	OriginPath  string // path and raw query to send to the origin
	HostRewrite string // route-level urlRewrite.hostRewrite ("" if none); Host precedence is the fetch layer's (HST-1)
	Origin      string // origin name, or "" when Redirect is set

	Redirect *Redirect // urlRedirect answered at the edge, or nil

	// ResponseHeaders is the route's compiled response header action
	// (ApplyResponseHeaders); nil when it has none.
	ResponseHeaders *ResponseHeaders
}

// Redirect is a redirect the edge answers itself (route urlRedirect).
type Redirect struct {
	Status   int    // 301, 302, 303, 307 or 308
	Location string // absolute URL
}

// Error is a request the router refuses: 400, 404 or 405.
type Error struct {
	Status int
	Reason string
	// Allow lists the methods the matched route allows (405 only), for
	// the server's Allow header.
	Allow []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Reason)
}

// New compiles svc's routing. svc should have passed config validation;
// whatever New cannot compile is reported as an error naming the field.
func New(svc config.Service) (*Router, error) {
	rt := &Router{}
	names := make(map[string]int, len(svc.Routing.PathMatchers))
	for i, pm := range svc.Routing.PathMatchers {
		field := fmt.Sprintf("routing.pathMatchers[%d]", i)
		if pm.Name == "" {
			return nil, fmt.Errorf("%s.name: required", field)
		}
		if _, dup := names[pm.Name]; dup {
			return nil, fmt.Errorf("%s.name: duplicate path matcher %q", field, pm.Name)
		}
		names[pm.Name] = i
		m := pathMatcher{name: pm.Name}
		for j, rr := range pm.RouteRules {
			r, err := compileRoute(rr, fmt.Sprintf("%s.routeRules[%d]", field, j))
			if err != nil {
				return nil, err
			}
			for _, mr := range r.matches {
				if len(mr.queries) > 0 {
					m.needQuery = true
				}
			}
			m.routes = append(m.routes, r)
		}
		// MTH-4: ascending priority; equal priorities (invalid) keep
		// their configuration order.
		sort.SliceStable(m.routes, func(a, b int) bool {
			return m.routes[a].rule.Priority < m.routes[b].rule.Priority
		})
		rt.matchers = append(rt.matchers, m)
	}
	ht, err := compileHosts(svc.Routing.HostRules, names)
	if err != nil {
		return nil, err
	}
	rt.hosts = ht
	return rt, nil
}

// Route matches req and returns what to do with it, or the error status to
// answer with. It never modifies req.
func (rt *Router) Route(req *http.Request) (*Result, *Error) {
	if e := checkRequest(req); e != nil {
		return nil, e
	}
	host := req.Host
	if host == "" && req.URL != nil {
		host = req.URL.Host
	}
	mi, ok := rt.hosts.lookup(host)
	if !ok {
		return nil, &Error{Status: http.StatusNotFound, Reason: "unknown host"} // MTH-3
	}
	pm := &rt.matchers[mi]

	raw := ""
	if req.URL != nil {
		raw = req.URL.EscapedPath()
	}
	path := normalizePath(raw) // MTH-6

	rc := reqCtx{req: req, path: path}
	if pm.needQuery && req.URL != nil {
		rc.query, _ = url.ParseQuery(req.URL.RawQuery) // malformed pairs are dropped
	}
	for _, r := range pm.routes { // MTH-4: first match wins
		for i := range r.matches {
			m := &r.matches[i]
			caps, ok := m.match(&rc)
			if !ok {
				continue
			}
			// MTH-1: the first matching route decides; a method it does
			// not allow is a 405, not a fall-through to later routes.
			if !r.methods[req.Method] {
				return nil, &Error{
					Status: http.StatusMethodNotAllowed,
					Reason: fmt.Sprintf("method %q not allowed on this route", req.Method),
					Allow:  append([]string(nil), r.allow...),
				}
			}
			return r.result(req, pm.name, path, m, caps), nil
		}
	}
	return nil, &Error{Status: http.StatusNotFound, Reason: "no route matches the path"} // MTH-3
}

// checkRequest applies MTH-2.
func checkRequest(req *http.Request) *Error {
	if req.Method == http.MethodGet || req.Method == http.MethodHead { // INT: HEAD too
		if hasBody(req) {
			return &Error{Status: http.StatusBadRequest, Reason: req.Method + " request with a body"}
		}
	}
	if len(req.Trailer) > 0 || len(req.Header["Trailer"]) > 0 {
		return &Error{Status: http.StatusBadRequest, Reason: "request declares trailers"}
	}
	return nil
}

func hasBody(req *http.Request) bool {
	if req.ContentLength > 0 {
		return true
	}
	for _, te := range req.TransferEncoding {
		if strings.EqualFold(te, "chunked") {
			return true
		}
	}
	for _, v := range req.Header["Transfer-Encoding"] {
		if strings.Contains(strings.ToLower(v), "chunked") {
			return true
		}
	}
	// A length that is unknown with a real body (a client-built request).
	return req.ContentLength < 0 && req.Body != nil && req.Body != http.NoBody
}

// reqCtx is one request as the match rules see it.
type reqCtx struct {
	req   *http.Request
	path  string
	query url.Values
}

// result builds the Result for route r matched by match rule m.
func (r *route) result(req *http.Request, pmName, path string, m *matchRule, caps map[string]string) *Result {
	res := &Result{
		Rule:        &r.rule,
		PathMatcher: pmName,
		Priority:    int64(r.rule.Priority),
		Captures:    caps,
		Path:        path,

		ResponseHeaders: r.respHeaders,
	}
	rawQuery := ""
	if req.URL != nil {
		rawQuery = req.URL.RawQuery
	}
	if r.redirect != nil {
		res.Redirect = r.redirect.build(req, path, rawQuery, m)
		return res
	}
	// MTH-7: rewrites apply after matching; nothing is matched again.
	op := path
	switch {
	case r.templateRewrite != nil:
		op = r.templateRewrite.Expand(caps)
	case r.hasPrefixRewrite:
		op = m.replacePrefix(path, r.prefixRewrite)
	}
	if rawQuery != "" {
		op += "?" + rawQuery
	}
	res.OriginPath = op
	res.HostRewrite = r.hostRewrite
	res.Origin = r.rule.Origin
	return res
}
