package routing

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/headervars"
)

// newRouter compiles a service written in YAML (Media CDN's field names).
func newRouter(t testing.TB, svcYAML string) *Router {
	t.Helper()
	var svc config.Service
	if err := yaml.UnmarshalStrict([]byte(svcYAML), &svc); err != nil {
		t.Fatalf("bad test config: %v\n%s", err, svcYAML)
	}
	r, err := New(svc)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// oneHost wraps route rules (YAML, indented for routeRules) in a service
// whose only host is example.com.
func oneHost(routes string) string {
	return `
name: svc
routing:
  hostRules:
  - hosts: [example.com]
    pathMatcher: main
  pathMatchers:
  - name: main
    routeRules:
` + routes
}

func get(target string) *http.Request {
	return httptest.NewRequest(http.MethodGet, "http://example.com"+target, nil)
}

// want is what a routed request should give: an origin (or a redirect
// Location), or an error status.
type want struct {
	origin   string
	status   int // error status; 0 for a Result
	location string
}

func check(t *testing.T, rt *Router, req *http.Request, w want) *Result {
	t.Helper()
	res, err := rt.Route(req)
	if w.status != 0 {
		if err == nil {
			t.Fatalf("%s %s (Host %s): got origin %q, want status %d", req.Method, req.URL, req.Host, res.Origin, w.status)
		}
		if err.Status != w.status {
			t.Fatalf("%s %s (Host %s): status %d (%s), want %d", req.Method, req.URL, req.Host, err.Status, err.Reason, w.status)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v, want origin %q", req.Method, req.URL, req.Host, err, w.origin)
	}
	if (res.Origin == "") == (res.Redirect == nil) {
		t.Fatalf("Result must have exactly one of Origin and Redirect: %+v", res)
	}
	if w.location != "" {
		if res.Redirect == nil || res.Redirect.Location != w.location {
			t.Fatalf("%s %s: redirect %+v, want Location %q", req.Method, req.URL, res.Redirect, w.location)
		}
	} else if res.Origin != w.origin {
		t.Fatalf("%s %s (Host %s): origin %q, want %q", req.Method, req.URL, req.Host, res.Origin, w.origin)
	}
	return res
}

// MTH-5: exact, then suffix wildcards, then prefix wildcards (longest
// first in each), then "*"; port and case ignored.
func TestHostPrecedence(t *testing.T) {
	rt := newRouter(t, `
name: svc
routing:
  hostRules:
  - hosts: [media.example.com]
    pathMatcher: exact
  - hosts: ["*.example.com"]
    pathMatcher: suffix
  - hosts: ["*.cdn.example.com", "*-edge.example.net"]
    pathMatcher: suffix-long
  - hosts: ["media.*"]
    pathMatcher: prefix
  - hosts: ["media.example.*"]
    pathMatcher: prefix-long
  - hosts: ["*"]
    pathMatcher: any
  pathMatchers:
  - {name: exact, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: exact}]}
  - {name: suffix, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: suffix}]}
  - {name: suffix-long, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: suffix-long}]}
  - {name: prefix, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: prefix}]}
  - {name: prefix-long, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: prefix-long}]}
  - {name: any, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: any}]}
`)
	for _, c := range []struct{ host, want string }{
		{"media.example.com", "exact"},
		{"MEDIA.Example.COM", "exact"},          // case-insensitive
		{"media.example.com:8443", "exact"},     // port ignored
		{"media.example.com.", "exact"},         // INT: trailing dot
		{"x.example.com", "suffix"},             //
		{"a.b.example.com", "suffix"},           // the wildcard spans labels
		{"x.cdn.example.com", "suffix-long"},    // longest suffix wins
		{"X.CDN.example.com:80", "suffix-long"}, //
		{"a-edge.example.net", "suffix-long"},   // *-edge. form
		{"-edge.example.net", "any"},            // the wildcard never matches ""
		{"example.com", "any"},                  // *.example.com needs a label
		{"media.other.org", "prefix"},           //
		{"media.example.net", "prefix-long"},    // longest prefix wins
		// suffix wildcards beat prefix wildcards, even longer ones
		{"media.example.example.com", "suffix"},
		{"other.org", "any"},
		{"bad_host.example.com", "any"}, // '_' is outside [a-z0-9-.]
		{"[::1]:8080", "any"},
		{"127.0.0.1:80", "any"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = c.host
		res := check(t, rt, req, want{origin: c.want})
		if res.PathMatcher != c.want {
			t.Errorf("host %q: path matcher %q, want %q", c.host, res.PathMatcher, c.want)
		}
	}

	// Without "*", an unknown host is a 404 (MTH-3).
	rt = newRouter(t, oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /}], origin: o}
`))
	for host, w := range map[string]want{
		"example.com":      {origin: "o"},
		"example.com:8080": {origin: "o"},
		"www.example.com":  {status: 404},
		"example.org":      {status: 404},
		"":                 {status: 404},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		check(t, rt, req, w)
	}
}

// MTH-6.
func TestNormalizePath(t *testing.T) {
	for in, want := range map[string]string{
		"":             "/",
		"/":            "/",
		"//":           "/",
		"//a///b":      "/a/b",
		"/a/./b/../c":  "/a/c",
		"/..":          "/",
		"/../../a":     "/a",
		"/a/b/":        "/a/b/",
		"/a/b//":       "/a/b/",
		"/a/b/.":       "/a/b/",
		"/a/b/..":      "/a/",
		"/./":          "/",
		"/a/%2F/b":     "/a/%2F/b",     // no percent-decoding
		"/a/%2e%2e/b":  "/a/%2e%2e/b",  // an encoded dot segment is not one
		"/A/B":         "/A/B",         // no case folding
		"/..a/b../...": "/..a/b../...", // not dot segments
		"a/b":          "/a/b",
		"*":            "/*",
	} {
		if got := normalizePath(in); got != want {
			t.Errorf("normalizePath(%q) = %q, want %q", in, got, want)
		}
		if got := normalizePath(want); got != want {
			t.Errorf("normalizePath(%q) is not idempotent: %q", want, got)
		}
	}

	// Through Route: the request's escaped path is what is normalised.
	rt := newRouter(t, oneHost(`
    - {priority: 1, matchRules: [{fullPathMatch: /a/b}], origin: ab}
    - {priority: 2, matchRules: [{fullPathMatch: /a/c}], origin: ac}
    - {priority: 3, matchRules: [{fullPathMatch: "/a/%2F/b"}], origin: encoded}
    - {priority: 4, matchRules: [{fullPathMatch: "/a/b/c"}], origin: abc}
    - {priority: 9, matchRules: [{prefixMatch: /}], origin: other}
`))
	for target, w := range map[string]struct{ origin, path string }{
		"//a///b":      {"ab", "/a/b"},
		"/a/./b/../c":  {"ac", "/a/c"},
		"/../a/b":      {"ab", "/a/b"},
		"/a/%2F/b":     {"encoded", "/a/%2F/b"}, // %2F is not a separator
		"/a/%2f/b":     {"other", "/a/%2f/b"},   // nor re-encoded
		"/A/B":         {"other", "/A/B"},       // case kept
		"/a/b/":        {"other", "/a/b/"},      // trailing slash kept
		"/a/b/c/../..": {"other", "/a/"},
		"/x/../a/b/c":  {"abc", "/a/b/c"},
	} {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Host = "example.com"
		res := check(t, rt, req, want{origin: w.origin})
		if res.Path != w.path {
			t.Errorf("%s: Path %q, want %q", target, res.Path, w.path)
		}
	}
}

// MTH-4: ascending priority, first match wins, whatever the order in the
// configuration and however specific a later route is.
func TestPriority(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - {priority: 100, matchRules: [{prefixMatch: /}], origin: default}
    - {priority: 20, matchRules: [{fullPathMatch: /video/special}], origin: special}
    - {priority: 10, matchRules: [{prefixMatch: /video/}], origin: video}
    - {priority: "5", matchRules: [{fullPathMatch: /video/first}], origin: first}
`))
	for target, origin := range map[string]string{
		"/video/special": "video", // priority 10 before 20
		"/video/first":   "first",
		"/video/x":       "video",
		"/videos":        "default",
		"/":              "default",
	} {
		res := check(t, rt, get(target), want{origin: origin})
		if origin == "video" && res.Priority != 10 {
			t.Errorf("%s: priority %d, want 10", target, res.Priority)
		}
	}
}

// Path match kinds and ignoreCase; match rules are OR-ed.
func TestPathMatch(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - {priority: 1, matchRules: [{fullPathMatch: /exact}], origin: exact}
    - {priority: 2, matchRules: [{fullPathMatch: /Exact-CI, ignoreCase: true}], origin: exact-ci}
    - {priority: 3, matchRules: [{prefixMatch: /img}], origin: img}
    - {priority: 4, matchRules: [{prefixMatch: /Docs/, ignoreCase: true}], origin: docs}
    - {priority: 5, matchRules: [{prefixMatch: /a/}, {prefixMatch: /b/}, {fullPathMatch: /c}], origin: abc}
`))
	for target, w := range map[string]want{
		"/exact":          {origin: "exact"},
		"/exact?q=1":      {origin: "exact"}, // the query is not part of the path
		"/exact/":         {status: 404},
		"/Exact":          {status: 404}, // case-sensitive by default
		"/exactly":        {status: 404},
		"/exact-ci":       {origin: "exact-ci"},
		"/EXACT-CI":       {origin: "exact-ci"},
		"/img":            {origin: "img"},
		"/imgs/x.png":     {origin: "img"}, // a string prefix, not a segment prefix
		"/IMG/x":          {status: 404},
		"/docs/a":         {origin: "docs"},
		"/DOCS/A":         {origin: "docs"},
		"/docs":           {status: 404},
		"/a/x":            {origin: "abc"},
		"/b/y":            {origin: "abc"},
		"/c":              {origin: "abc"},
		"/c/":             {status: 404},
		"/d/":             {status: 404}, // MTH-3
		"/%69mg":          {status: 404}, // no decoding before matching
		"/img/%2E%2E/etc": {origin: "img"},
	} {
		check(t, rt, get(target), w)
	}
}

func TestHeaderMatches(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - priority: 1
      matchRules: [{prefixMatch: /present, headerMatches: [{headerName: x-flag, presentMatch: true}]}]
      origin: present
    - priority: 2
      matchRules: [{prefixMatch: /absent, headerMatches: [{headerName: X-Flag, presentMatch: false}]}]
      origin: absent
    - priority: 3
      matchRules: [{prefixMatch: /exact, headerMatches: [{headerName: X-Tier, exactMatch: gold}]}]
      origin: exact
    - priority: 4
      matchRules: [{prefixMatch: /prefix, headerMatches: [{headerName: User-Agent, prefixMatch: "Player/"}]}]
      origin: prefix
    - priority: 5
      matchRules: [{prefixMatch: /suffix, headerMatches: [{headerName: X-File, suffixMatch: .m3u8}]}]
      origin: suffix
    - priority: 6
      matchRules: [{prefixMatch: /inv-exact, headerMatches: [{headerName: X-Tier, exactMatch: bad, invertMatch: true}]}]
      origin: inv-exact
    - priority: 7
      matchRules: [{prefixMatch: /inv-present, headerMatches: [{headerName: X-Flag, presentMatch: true, invertMatch: true}]}]
      origin: inv-present
    - priority: 8
      matchRules: [{prefixMatch: /inv-prefix, headerMatches: [{headerName: X-Tier, prefixMatch: go, invertMatch: true}]}]
      origin: inv-prefix
    - priority: 9
      matchRules:
      - prefixMatch: /and
        headerMatches: [{headerName: X-A, exactMatch: "1"}, {headerName: X-B, exactMatch: "2"}]
      origin: and
    - priority: 10
      matchRules: [{prefixMatch: /host, headerMatches: [{headerName: host, suffixMatch: ":8080"}]}]
      origin: host
    - priority: 11
      matchRules:
      - {prefixMatch: /or, headerMatches: [{headerName: X-A, presentMatch: true}]}
      - {prefixMatch: /or, headerMatches: [{headerName: X-B, presentMatch: true}]}
      origin: or
`))
	type hdr = map[string][]string
	for _, c := range []struct {
		path   string
		host   string
		header hdr
		want   string // "" = 404
	}{
		{"/present", "", hdr{"X-Flag": {"1"}}, "present"},
		{"/present", "", hdr{"X-Flag": {""}}, "present"}, // present with an empty value
		{"/present", "", nil, ""},
		{"/absent", "", nil, "absent"},
		{"/absent", "", hdr{"X-Flag": {"1"}}, ""},
		{"/exact", "", hdr{"X-Tier": {"gold"}}, "exact"},
		{"/exact", "", hdr{"X-Tier": {"Gold"}}, ""}, // values are case-sensitive
		{"/exact", "", hdr{"X-Tier": {"gold "}}, ""},
		{"/exact", "", hdr{"X-Tier": {"silver", "gold"}}, "exact"}, // any value
		{"/exact", "", hdr{"X-Tier": {"silver, gold"}}, ""},        // as sent: no list splitting
		{"/exact", "", nil, ""},
		{"/prefix", "", hdr{"User-Agent": {"Player/2.1"}}, "prefix"},
		{"/prefix", "", hdr{"User-Agent": {"curl/8"}}, ""},
		{"/suffix", "", hdr{"X-File": {"a/b.m3u8"}}, "suffix"},
		{"/suffix", "", hdr{"X-File": {"a/b.m3u8x"}}, ""},
		{"/inv-exact", "", hdr{"X-Tier": {"good"}}, "inv-exact"},
		{"/inv-exact", "", nil, "inv-exact"}, // absent: "is bad" is false
		{"/inv-exact", "", hdr{"X-Tier": {"bad"}}, ""},
		{"/inv-present", "", nil, "inv-present"},
		{"/inv-present", "", hdr{"X-Flag": {"1"}}, ""},
		{"/inv-prefix", "", hdr{"X-Tier": {"gold"}}, ""},
		{"/inv-prefix", "", hdr{"X-Tier": {"silver"}}, "inv-prefix"},
		{"/and", "", hdr{"X-A": {"1"}, "X-B": {"2"}}, "and"},
		{"/and", "", hdr{"X-A": {"1"}}, ""},
		{"/and", "", hdr{"X-A": {"1"}, "X-B": {"3"}}, ""},
		{"/host", "example.com:8080", nil, "host"}, // Host as sent
		{"/host", "example.com", nil, ""},
		{"/or", "", hdr{"X-A": {"1"}}, "or"},
		{"/or", "", hdr{"X-B": {"1"}}, "or"},
		{"/or", "", nil, ""},
	} {
		req := get(c.path)
		if c.host != "" {
			req.Host = c.host
		}
		for k, v := range c.header {
			req.Header[k] = v
		}
		w := want{origin: c.want}
		if c.want == "" {
			w.status = http.StatusNotFound
		}
		t.Run(c.path, func(t *testing.T) { check(t, rt, req, w) })
	}
}

func TestQueryParameterMatches(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - priority: 1
      matchRules: [{prefixMatch: /p, queryParameterMatches: [{name: token, presentMatch: true}]}]
      origin: present
    - priority: 2
      matchRules: [{prefixMatch: /a, queryParameterMatches: [{name: token, presentMatch: false}]}]
      origin: absent
    - priority: 3
      matchRules: [{prefixMatch: /e, queryParameterMatches: [{name: fmt, exactMatch: "hls v3"}, {name: q, exactMatch: "1"}]}]
      origin: exact
`))
	for target, w := range map[string]want{
		"/p?token=abc":               {origin: "present"},
		"/p?token=":                  {origin: "present"},
		"/p?token":                   {origin: "present"},
		"/p?tok=1":                   {status: 404},
		"/p":                         {status: 404},
		"/p?x=1&token=2":             {origin: "present"},
		"/a":                         {origin: "absent"},
		"/a?other=1":                 {origin: "absent"},
		"/a?token=1":                 {status: 404},
		"/e?fmt=hls%20v3&q=1":        {origin: "exact"}, // compared decoded
		"/e?fmt=hls+v3&q=1":          {origin: "exact"},
		"/e?q=1&fmt=dash&fmt=hls+v3": {origin: "exact"}, // any value
		"/e?fmt=hls%20v3":            {status: 404},     // every criterion must hold
		"/e?fmt=HLS+v3&q=1":          {status: 404},
		"/e?Fmt=hls+v3&q=1":          {status: 404}, // names are case-sensitive
	} {
		res := check(t, rt, get(target), w)
		if res != nil {
			if _, q, _ := strings.Cut(target, "?"); !strings.HasSuffix(res.OriginPath, q) {
				t.Errorf("%s: OriginPath %q lost the raw query", target, res.OriginPath)
			}
		}
	}
}

func TestPathTemplates(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - {priority: 1, matchRules: [{pathTemplateMatch: "/v/{id}/seg/{n=*}"}], origin: seg}
    - {priority: 2, matchRules: [{pathTemplateMatch: "/files/{rest=**}"}], origin: files}
    - {priority: 3, matchRules: [{pathTemplateMatch: "/static/**"}], origin: static}
    - {priority: 4, matchRules: [{pathTemplateMatch: "/*/manifest.m3u8"}], origin: manifest}
    - {priority: 5, matchRules: [{pathTemplateMatch: "/**.m3u8"}], origin: any-m3u8}
    - {priority: 6, matchRules: [{pathTemplateMatch: "/Img/{name}", ignoreCase: true}], origin: img}
    - {priority: 7, matchRules: [{pathTemplateMatch: "/p/{x}"}], origin: p}
    - {priority: 8, matchRules: [{pathTemplateMatch: "/live/{ch}/{rest=**}/chunk.ts"}], origin: live}
    - {priority: 9, matchRules: [{pathTemplateMatch: "/vod/{asset=titles/*}/{file}"}], origin: vod}
`))
	type caps = map[string]string
	for _, c := range []struct {
		target string
		origin string // "" = 404
		caps   caps
	}{
		{"/v/abc/seg/5", "seg", caps{"id": "abc", "n": "5"}},
		{"/v/abc/seg/", "", nil},
		{"/v/abc/def/seg/5", "", nil},
		{"/v/abc/seg/5/6", "", nil},
		{"/files/a/b/c", "files", caps{"rest": "a/b/c"}},
		{"/files/", "files", caps{"rest": ""}},
		{"/files", "", nil},
		{"/static/x/y.css", "static", caps{}},
		{"/static/", "static", caps{}},
		{"/abc/manifest.m3u8", "manifest", caps{}},
		{"/a/b/manifest.m3u8", "any-m3u8", caps{}},
		{"/a/b/c.m3u8", "any-m3u8", caps{}},
		{"/a/b/c.ts", "", nil},
		{"/img/Photo.JPG", "img", caps{"name": "Photo.JPG"}}, // captures keep their case
		{"/IMG/x", "img", caps{"name": "x"}},
		{"/p/a%2Fb", "p", caps{"x": "a%2Fb"}}, // captures stay escaped
		{"/p/a/b", "", nil},
		{"/live/c1/x/y/chunk.ts", "live", caps{"ch": "c1", "rest": "x/y"}},
		{"/vod/titles/t1/f.mp4", "vod", caps{"asset": "titles/t1", "file": "f.mp4"}},
		{"/vod/other/t1/f.mp4", "", nil},
	} {
		w := want{origin: c.origin}
		if c.origin == "" {
			w.status = 404
		}
		res := check(t, rt, get(c.target), w)
		if res != nil && !reflect.DeepEqual(res.Captures, c.caps) {
			t.Errorf("%s: captures %v, want %v", c.target, res.Captures, c.caps)
		}
	}
}

// MTH-7: rewrites after matching; the matched Path is unchanged.
func TestRewrites(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - priority: 1
      matchRules: [{prefixMatch: /old/}]
      routeAction: {urlRewrite: {pathPrefixRewrite: /new/, hostRewrite: origin.example.net}}
      origin: o
    - priority: 2
      matchRules: [{prefixMatch: /api/}]
      routeAction: {urlRewrite: {pathPrefixRewrite: /}}
      origin: o
    - priority: 3
      matchRules: [{prefixMatch: /CI/, ignoreCase: true}]
      routeAction: {urlRewrite: {pathPrefixRewrite: /ci-out/}}
      origin: o
    - priority: 4
      matchRules: [{fullPathMatch: /full}]
      routeAction: {urlRewrite: {pathPrefixRewrite: /replaced}}
      origin: o
    - priority: 5
      matchRules: [{pathTemplateMatch: "/v/{id}/seg/{n}"}, {pathTemplateMatch: "/video/{n}/{id}"}]
      routeAction: {urlRewrite: {pathTemplateRewrite: "/out/{n}/{id}.m4s"}}
      origin: o
    - priority: 6
      matchRules: [{pathTemplateMatch: "/t/{x}"}]
      routeAction: {urlRewrite: {pathPrefixRewrite: /whole}}
      origin: o
    - priority: 9
      matchRules: [{prefixMatch: /}]
      origin: o
`))
	for _, c := range []struct{ target, path, originPath, hostRewrite string }{
		{"/old/a/b?x=1&y=%20", "/old/a/b", "/new/a/b?x=1&y=%20", "origin.example.net"},
		{"/old/", "/old/", "/new/", "origin.example.net"},
		{"/api/v1/items", "/api/v1/items", "/v1/items", ""},
		{"/Ci/x", "/Ci/x", "/ci-out/x", ""},
		{"/full?a", "/full", "/replaced?a", ""},
		{"/v/abc/seg/7?k=v", "/v/abc/seg/7", "/out/7/abc.m4s?k=v", ""},
		{"/video/8/xyz", "/video/8/xyz", "/out/8/xyz.m4s", ""},
		{"/t/y", "/t/y", "/whole", ""},
		{"//x/../y?q=%20", "/y", "/y?q=%20", ""}, // no rewrite: normalised path, raw query
		{"/a/%2F?q", "/a/%2F", "/a/%2F?q", ""},
	} {
		res := check(t, rt, get(c.target), want{origin: "o"})
		if res.Path != c.path || res.OriginPath != c.originPath || res.HostRewrite != c.hostRewrite {
			t.Errorf("%s: Path %q OriginPath %q HostRewrite %q, want %q %q %q",
				c.target, res.Path, res.OriginPath, res.HostRewrite, c.path, c.originPath, c.hostRewrite)
		}
	}
}

func TestRedirects(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /host/}], urlRedirect: {hostRedirect: new.example.net}}
    - {priority: 2, matchRules: [{prefixMatch: /path/}], urlRedirect: {pathRedirect: /elsewhere, redirectResponseCode: FOUND}}
    - {priority: 3, matchRules: [{prefixMatch: /prefix/}], urlRedirect: {prefixRedirect: /moved/, redirectResponseCode: SEE_OTHER}}
    - {priority: 4, matchRules: [{prefixMatch: /secure/}], urlRedirect: {httpsRedirect: true, redirectResponseCode: TEMPORARY_REDIRECT}}
    - {priority: 5, matchRules: [{prefixMatch: /strip/}], urlRedirect: {pathRedirect: /s, stripQuery: true, redirectResponseCode: PERMANENT_REDIRECT}}
    - {priority: 6, matchRules: [{prefixMatch: /all/}], urlRedirect: {hostRedirect: h.example, prefixRedirect: /, httpsRedirect: true, redirectResponseCode: MOVED_PERMANENTLY_DEFAULT}}
    - {priority: 7, matchRules: [{fullPathMatch: /fp}], urlRedirect: {prefixRedirect: /whole}}
    - {priority: 8, matchRules: [{prefixMatch: /q/}], urlRedirect: {pathRedirect: "/with?a=1"}}
`))
	for _, c := range []struct {
		target string
		host   string
		tls    bool
		status int
		loc    string
	}{
		{"/host/a?x=1", "example.com", false, 301, "http://new.example.net/host/a?x=1"},
		{"/path/a?x=1", "example.com:8080", false, 302, "http://example.com:8080/elsewhere?x=1"}, // Host as sent
		{"/prefix/a/b", "example.com", false, 303, "http://example.com/moved/a/b"},
		{"/secure/a?x", "example.com:8080", false, 307, "https://example.com/secure/a?x"}, // port dropped
		{"/secure/a", "example.com:8443", true, 307, "https://example.com:8443/secure/a"}, // already https: kept
		{"/path/a", "example.com", true, 302, "https://example.com/elsewhere"},            // scheme kept
		{"/strip/a?x=1", "example.com", false, 308, "http://example.com/s"},
		{"/all/a//b/../c?k", "example.com", false, 301, "https://h.example/a/c?k"}, // normalised
		{"/fp?z", "example.com", false, 301, "http://example.com/whole?z"},
		{"/q/x?b=2", "example.com", false, 301, "http://example.com/with?a=1&b=2"},
	} {
		req := get(c.target)
		req.Host = c.host
		if c.tls {
			req.TLS = &tls.ConnectionState{}
		}
		res := check(t, rt, req, want{location: c.loc})
		if res.Redirect.Status != c.status {
			t.Errorf("%s: status %d, want %d", c.target, res.Redirect.Status, c.status)
		}
		if res.Origin != "" || res.OriginPath != "" {
			t.Errorf("%s: a redirect has no origin: %+v", c.target, res)
		}
	}
}

// MTH-1.
func TestMethods(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /default/}], origin: o}
    - {priority: 2, matchRules: [{prefixMatch: /upload/}], origin: o, routeMethods: {allowedMethods: [GET, POST]}}
    - {priority: 3, matchRules: [{prefixMatch: /post-only/}], origin: o, routeMethods: {allowedMethods: [POST]}}
    - {priority: 4, matchRules: [{prefixMatch: /all/}], origin: o, routeMethods: {allowedMethods: [PATCH, DELETE, POST, PUT, OPTIONS, HEAD, GET]}}
    - {priority: 5, matchRules: [{prefixMatch: /}], origin: o, routeMethods: {allowedMethods: [GET, POST]}}
`))
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/default/x", 0, ""},
		{"HEAD", "/default/x", 0, ""},
		{"OPTIONS", "/default/x", 0, ""},
		{"POST", "/default/x", 405, "GET, HEAD, OPTIONS"}, // no fall-through to priority 5
		{"PUT", "/default/x", 405, "GET, HEAD, OPTIONS"},
		{"DELETE", "/default/x", 405, "GET, HEAD, OPTIONS"},
		{"PATCH", "/default/x", 405, "GET, HEAD, OPTIONS"},
		{"TRACE", "/default/x", 405, "GET, HEAD, OPTIONS"},
		{"get", "/default/x", 405, "GET, HEAD, OPTIONS"}, // methods are case-sensitive
		{"POST", "/upload/x", 0, ""},
		{"GET", "/upload/x", 0, ""},
		{"HEAD", "/upload/x", 0, ""}, // INT: HEAD with GET
		{"OPTIONS", "/upload/x", 405, "GET, HEAD, POST"},
		{"PUT", "/upload/x", 405, "GET, HEAD, POST"},
		{"POST", "/post-only/x", 0, ""},
		{"GET", "/post-only/x", 405, "POST"},
		{"HEAD", "/post-only/x", 405, "POST"},
		{"DELETE", "/all/x", 0, ""},
		{"PATCH", "/all/x", 0, ""},
		{"POST", "/elsewhere", 0, ""},
	} {
		req := httptest.NewRequest(c.method, "http://example.com"+c.path, nil)
		res, err := rt.Route(req)
		if c.status == 0 {
			if err != nil {
				t.Errorf("%s %s: %v", c.method, c.path, err)
			} else if res.Origin != "o" {
				t.Errorf("%s %s: %+v", c.method, c.path, res)
			}
			continue
		}
		if err == nil || err.Status != c.status {
			t.Errorf("%s %s: got %v, want %d", c.method, c.path, err, c.status)
			continue
		}
		if got := strings.Join(err.Allow, ", "); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}

	// A method no route allows, on a path no route matches: 404 first.
	rt = newRouter(t, oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /a/}], origin: o}
`))
	check(t, rt, httptest.NewRequest("DELETE", "http://example.com/b", nil), want{status: 404})
}

// MTH-2.
func TestBadRequests(t *testing.T) {
	rt := newRouter(t, oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /}], origin: o, routeMethods: {allowedMethods: [GET, POST, OPTIONS]}}
`))
	body := func(method, s string) *http.Request {
		return httptest.NewRequest(method, "http://example.com/x", strings.NewReader(s))
	}
	chunked := func(method string) *http.Request {
		r := body(method, "abc")
		r.ContentLength = -1
		r.TransferEncoding = []string{"chunked"}
		return r
	}
	trailer := func(method string) *http.Request {
		r := body(method, "")
		r.Header.Set("Trailer", "X-Checksum")
		return r
	}
	for name, c := range map[string]struct {
		req    *http.Request
		status int
	}{
		"GET with a body":  {body("GET", "abc"), 400},
		"HEAD with a body": {body("HEAD", "abc"), 400},
		"GET chunked":      {chunked("GET"), 400},
		"GET Transfer-Encoding header": {func() *http.Request {
			r := get("/x")
			r.Header.Set("Transfer-Encoding", "chunked")
			return r
		}(), 400},
		"GET with an unknown length body": {func() *http.Request {
			r := body("GET", "abc")
			r.ContentLength = -1
			return r
		}(), 400},
		"GET with an empty body":    {body("GET", ""), 0},
		"GET Content-Length: 0":     {func() *http.Request { r := get("/x"); r.Header.Set("Content-Length", "0"); return r }(), 0},
		"POST with a body":          {body("POST", "abc"), 0},
		"POST chunked":              {chunked("POST"), 0},
		"OPTIONS with a body":       {body("OPTIONS", "abc"), 0},
		"GET declaring trailers":    {trailer("GET"), 400},
		"POST declaring trailers":   {trailer("POST"), 400},
		"POST with req.Trailer":     {func() *http.Request { r := chunked("POST"); r.Trailer = http.Header{"X-Sum": nil}; return r }(), 400},
		"GET with a body, bad host": {func() *http.Request { r := body("GET", "abc"); r.Host = "nowhere.test"; return r }(), 400}, // INT: 400 before 404
		"plain GET":                 {get("/x"), 0},
	} {
		res, err := rt.Route(c.req)
		switch {
		case c.status == 0 && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.status == 0 && res.Origin != "o":
			t.Errorf("%s: %+v", name, res)
		case c.status != 0 && (err == nil || err.Status != c.status):
			t.Errorf("%s: got %v, want %d", name, err, c.status)
		}
	}
	e := &Error{Status: 400, Reason: "GET request with a body"}
	if got := e.Error(); got != "400 Bad Request: GET request with a body" {
		t.Errorf("Error() = %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct{ yaml, field string }{
		{`
name: s
routing:
  hostRules: [{hosts: [a.example], pathMatcher: nope}]
  pathMatchers: [{name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: o}]}]
`, "routing.hostRules[0].pathMatcher"},
		{`
name: s
routing:
  hostRules: [{hosts: [a.example], pathMatcher: m}, {hosts: [A.example], pathMatcher: m}]
  pathMatchers: [{name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: o}]}]
`, "routing.hostRules[1].hosts[0]"},
		{`
name: s
routing:
  hostRules: [{hosts: ["a.*.example"], pathMatcher: m}]
  pathMatchers: [{name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: o}]}]
`, "routing.hostRules[0].hosts[0]"},
		{`
name: s
routing:
  hostRules: [{hosts: ["a.example:80"], pathMatcher: m}]
  pathMatchers: [{name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: o}]}]
`, "routing.hostRules[0].hosts[0]"},
		{oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /}]}
`), "routing.pathMatchers[0].routeRules[0]"},
		{oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /}], origin: o}
    - {priority: 2, matchRules: [{prefixMatch: /}], origin: o, urlRedirect: {pathRedirect: /x}}
`), "routing.pathMatchers[0].routeRules[1]"},
		{oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /, fullPathMatch: /x}], origin: o}
`), "routing.pathMatchers[0].routeRules[0].matchRules[0]"},
		{oneHost(`
    - {priority: 1, matchRules: [{ignoreCase: true}], origin: o}
`), "routing.pathMatchers[0].routeRules[0].matchRules[0]"},
		{oneHost(`
    - {priority: 1, matchRules: [], origin: o}
`), "routing.pathMatchers[0].routeRules[0].matchRules"},
		{oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /}, {pathTemplateMatch: "/a/**/*"}], origin: o}
`), "routing.pathMatchers[0].routeRules[0].matchRules[1].pathTemplateMatch"},
		{oneHost(`
    - {priority: 1, matchRules: [{pathTemplateMatch: "/a/{x"}], origin: o}
`), "pathTemplateMatch"},
		{oneHost(`
    - {priority: 1, matchRules: [{pathTemplateMatch: "/a/b*c"}], origin: o}
`), "pathTemplateMatch"},
		{oneHost(`
    - {priority: 1, matchRules: [{pathTemplateMatch: "/a/*.ts/b"}], origin: o}
`), "pathTemplateMatch"},
		{oneHost(`
    - {priority: 1, matchRules: [{pathTemplateMatch: "/{x}/{x}"}], origin: o}
`), "pathTemplateMatch"},
		{oneHost(`
    - {priority: 1, matchRules: [{pathTemplateMatch: "/a//b"}], origin: o}
`), "pathTemplateMatch"},
		{oneHost(`
    - {priority: 1, matchRules: [{pathTemplateMatch: "a/b"}], origin: o}
`), "pathTemplateMatch"},
		{oneHost(`
    - priority: 1
      matchRules: [{pathTemplateMatch: "/a/{x}"}]
      routeAction: {urlRewrite: {pathTemplateRewrite: "/{y}"}}
      origin: o
`), "routing.pathMatchers[0].routeRules[0].routeAction.urlRewrite.pathTemplateRewrite"},
		{oneHost(`
    - priority: 1
      matchRules: [{pathTemplateMatch: "/a/{x}"}, {prefixMatch: /b}]
      routeAction: {urlRewrite: {pathTemplateRewrite: "/{x}"}}
      origin: o
`), "pathTemplateRewrite"},
		{oneHost(`
    - priority: 1
      matchRules: [{pathTemplateMatch: "/a/{x}"}]
      routeAction: {urlRewrite: {pathTemplateRewrite: "/{x}/*"}}
      origin: o
`), "pathTemplateRewrite"},
		{oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /}], urlRedirect: {redirectResponseCode: TEAPOT}}
`), "urlRedirect.redirectResponseCode"},
		{oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /, headerMatches: [{headerName: a, exactMatch: x, suffixMatch: y}]}], origin: o}
`), "matchRules[0].headerMatches[0]"},
		{oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: /, headerMatches: [{exactMatch: x}]}], origin: o}
`), "matchRules[0].headerMatches[0]"},
		{oneHost(`
    - {priority: 1, matchRules: [{prefixMatch: x}], origin: o}
`), "matchRules[0].prefixMatch"},
		{`
name: s
routing:
  hostRules: [{hosts: [a.example], pathMatcher: m}]
  pathMatchers:
  - {name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: o}]}
  - {name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: o}]}
`, "routing.pathMatchers[1].name"},
	} {
		var svc config.Service
		if err := yaml.UnmarshalStrict([]byte(c.yaml), &svc); err != nil {
			t.Fatalf("bad test config: %v\n%s", err, c.yaml)
		}
		_, err := New(svc)
		if err == nil {
			t.Errorf("New accepted a bad config (want an error naming %s):\n%s", c.field, c.yaml)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("error %q does not name %s", err, c.field)
		}
	}
	// The zero Service compiles to a router that knows no host.
	rt, err := New(config.Service{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, rt, get("/"), want{status: 404})
	var zero Router // the zero Router is usable too
	check(t, &zero, get("/"), want{status: 404})
}

func TestApplyHeaders(t *testing.T) {
	a := &config.HeaderAction{
		RequestHeadersToRemove: []config.HeaderToRemove{{HeaderName: "x-remove"}, {HeaderName: "Cookie"}},
		RequestHeadersToAdd: []config.HeaderToAdd{
			{HeaderName: "X-Append", HeaderValue: "new"},
			{HeaderName: "x-replace", HeaderValue: "new", Replace: true},
			{HeaderName: "X-Remove", HeaderValue: "re-added"}, // removal runs first
			{HeaderName: "X-Twice", HeaderValue: "1", Replace: true},
			{HeaderName: "X-Twice", HeaderValue: "2", Replace: true},
		},
		ResponseHeadersToRemove: []config.HeaderToRemove{{HeaderName: "Server"}},
		ResponseHeadersToAdd: []config.HeaderToAdd{
			{HeaderName: "Cache-Control", HeaderValue: "no-store", Replace: true},
			{HeaderName: "Via", HeaderValue: "edge"},
		},
	}
	req := http.Header{
		"X-Append":  {"old"},
		"X-Replace": {"old1", "old2"},
		"X-Remove":  {"gone"},
		"Cookie":    {"a=b"},
		"X-Twice":   {"old"},
		"X-Keep":    {"k"},
	}
	ApplyRequestHeaders(req, a)
	wantReq := http.Header{
		"X-Append":  {"old", "new"},
		"X-Replace": {"new"},
		"X-Remove":  {"re-added"},
		"X-Twice":   {"1", "2"},
		"X-Keep":    {"k"},
	}
	if !reflect.DeepEqual(req, wantReq) {
		t.Errorf("request headers:\n got %v\nwant %v", req, wantReq)
	}
	resp := http.Header{"Server": {"origin"}, "Cache-Control": {"max-age=60"}, "Via": {"1.1 origin"}}
	rh, err := compileResponseHeaders(a, "r")
	if err != nil {
		t.Fatal(err)
	}
	ApplyResponseHeaders(resp, rh, nil)
	wantResp := http.Header{"Cache-Control": {"no-store"}, "Via": {"1.1 origin", "edge"}}
	if !reflect.DeepEqual(resp, wantResp) {
		t.Errorf("response headers:\n got %v\nwant %v", resp, wantResp)
	}
	h := http.Header{"A": {"1"}}
	ApplyRequestHeaders(h, nil)
	ApplyResponseHeaders(h, nil, nil)
	if len(h) != 1 {
		t.Errorf("a nil action changed headers: %v", h)
	}
}

// Route does not modify the request and is safe for concurrent use.
func TestConcurrentRoute(t *testing.T) {
	rt := newRouter(t, fuzzConfig)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				req := httptest.NewRequest(http.MethodGet, "http://media.example.com/v/abc/seg/1?x=1", nil)
				res, err := rt.Route(req)
				if err != nil || res.OriginPath != "/out/1/abc?x=1" {
					t.Errorf("got %+v, %v", res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Response header values with Media CDN's variables are rendered per
// response from the Facts; request headers are sent as written.
func TestResponseHeaderVariables(t *testing.T) {
	a := &config.HeaderAction{ResponseHeadersToAdd: []config.HeaderToAdd{
		{HeaderName: "x-cache-status", HeaderValue: "{cdn_cache_status}"},
		{HeaderName: "x-geo", HeaderValue: "region={client_region}; node={cdn_cache_id}", Replace: true},
		{HeaderName: "x-literal", HeaderValue: "{not a variable}"},
	}}
	rh, err := compileResponseHeaders(a, "r")
	if err != nil {
		t.Fatal(err)
	}
	if !rh.Dynamic() {
		t.Fatal("Dynamic() = false for values with variables")
	}
	for _, tc := range []struct {
		f           headervars.Facts
		status, geo string
	}{
		{headervars.Facts{CacheStatus: "hit", CacheID: "edge-a", Geo: &headervars.Geo{Region: "FR"}}, "hit", "region=FR; node=edge-a"},
		{headervars.Facts{CacheStatus: "miss", CacheID: "edge-b"}, "miss", "region=; node=edge-b"},
	} {
		h := http.Header{"X-Geo": {"origin's"}}
		ApplyResponseHeaders(h, rh, &tc.f)
		if got := h.Get("X-Cache-Status"); got != tc.status {
			t.Errorf("x-cache-status = %q, want %q", got, tc.status)
		}
		if got := h.Values("X-Geo"); len(got) != 1 || got[0] != tc.geo {
			t.Errorf("x-geo = %q, want [%q]", got, tc.geo)
		}
		if got := h.Get("X-Literal"); got != "{not a variable}" {
			t.Errorf("x-literal = %q", got)
		}
	}
	if _, err := compileResponseHeaders(&config.HeaderAction{ResponseHeadersToAdd: []config.HeaderToAdd{{HeaderName: "x", HeaderValue: "{cdn_cache_statuz}"}}}, "r"); err == nil || !strings.Contains(err.Error(), "cdn_cache_statuz") {
		t.Errorf("unknown variable: err = %v", err)
	}
}
