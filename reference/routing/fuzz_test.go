package routing

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fuzzConfig has a route of every kind: prefix, full path, templates with
// captures and rewrites, header and query matches, method lists, redirects
// and every host pattern form.
const fuzzConfig = `
name: fuzz
routing:
  hostRules:
  - hosts: [media.example.com, "*.example.com"]
    pathMatcher: main
  - hosts: ["media.*", "*"]
    pathMatcher: other
  pathMatchers:
  - name: main
    routeRules:
    - priority: 1
      matchRules: [{fullPathMatch: /exact}]
      origin: exact
    - priority: 2
      matchRules: [{pathTemplateMatch: "/v/{id}/seg/{n}"}]
      routeAction: {urlRewrite: {pathTemplateRewrite: "/out/{n}/{id}"}}
      origin: tmpl
    - priority: 3
      matchRules: [{pathTemplateMatch: "/files/{rest=**}"}, {pathTemplateMatch: "/**.m3u8", ignoreCase: true}]
      origin: glob
    - priority: 4
      matchRules:
      - prefixMatch: /hdr/
        headerMatches: [{headerName: X-Tier, exactMatch: gold}, {headerName: X-No, presentMatch: true, invertMatch: true}]
        queryParameterMatches: [{name: q, presentMatch: true}]
      origin: hdr
    - priority: 5
      matchRules: [{prefixMatch: /old/, ignoreCase: true}]
      routeAction: {urlRewrite: {pathPrefixRewrite: /new/, hostRewrite: origin.example.net}}
      origin: rewrite
    - priority: 6
      matchRules: [{prefixMatch: /go/}]
      urlRedirect: {prefixRedirect: /gone/, httpsRedirect: true, redirectResponseCode: FOUND}
    - priority: 7
      matchRules: [{prefixMatch: /up/}]
      routeMethods: {allowedMethods: [GET, POST, PUT]}
      origin: upload
    - priority: 8
      matchRules: [{prefixMatch: /}]
      origin: default
  - name: other
    routeRules:
    - priority: 1
      matchRules: [{prefixMatch: /}]
      urlRedirect: {hostRedirect: media.example.com, stripQuery: true}
`

func FuzzRoute(f *testing.F) {
	for _, s := range []struct{ method, host, target string }{
		{"GET", "media.example.com", "/exact"},
		{"GET", "a.example.com:8080", "/v/abc/seg/1?x=y"},
		{"HEAD", "MEDIA.EXAMPLE.COM", "//files///a/./b/../c"},
		{"GET", "media.example.org", "/x.M3U8?q"},
		{"POST", "x.example.com", "/up/a"},
		{"DELETE", "x.example.com", "/up/a"},
		{"GET", "x.example.com", "/old/%2F/../x?a=%zz"},
		{"OPTIONS", "", "*"},
		{"GET", "[::1]:80", "/go/.."},
		{"get", "media.example.com", "/../../.."},
		{"PATCH", "x", "/hdr/?q=1"},
	} {
		f.Add(s.method, s.host, s.target)
	}
	rt := newRouter(f, fuzzConfig)
	f.Fuzz(func(t *testing.T, method, host, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			u = &url.URL{Path: target} // an unparsable target still must not panic
		}
		req := &http.Request{
			Method: method, URL: u, Host: host, Header: http.Header{},
			Body: http.NoBody, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		}
		if len(target)%3 == 0 { // vary the header and query criteria
			req.Header.Set("X-Tier", "gold")
		}
		res, rerr := rt.Route(req)
		if rerr != nil {
			if res != nil {
				t.Fatalf("both a Result and an Error: %+v %+v", res, rerr)
			}
			switch rerr.Status {
			case 400, 404:
			case 405:
				if len(rerr.Allow) == 0 {
					t.Fatalf("405 without an Allow list")
				}
			default:
				t.Fatalf("unexpected status %d", rerr.Status)
			}
			return
		}
		if res == nil || res.Rule == nil {
			t.Fatalf("no Result and no Error")
		}
		if (res.Origin == "") == (res.Redirect == nil) {
			t.Fatalf("want exactly one of Origin and Redirect: %+v", res)
		}
		p := res.Path
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || normalizePath(p) != p {
			t.Fatalf("path %q (from %q) is not normalised", p, u.EscapedPath())
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("path %q keeps a dot segment", p)
			}
		}
		if res.Redirect != nil {
			if !strings.HasPrefix(res.Redirect.Location, "http://") && !strings.HasPrefix(res.Redirect.Location, "https://") {
				t.Fatalf("Location %q is not absolute", res.Redirect.Location)
			}
			return
		}
		if !strings.HasPrefix(res.OriginPath, "/") {
			t.Fatalf("origin path %q does not start with /", res.OriginPath)
		}
		if u.RawQuery != "" && !strings.HasSuffix(res.OriginPath, "?"+u.RawQuery) {
			t.Fatalf("origin path %q lost the query %q", res.OriginPath, u.RawQuery)
		}
	})
}

func BenchmarkRoute(b *testing.B) {
	rt := newRouter(b, fuzzConfig)
	reqs := []*http.Request{
		httptest.NewRequest("GET", "http://media.example.com/exact", nil),
		httptest.NewRequest("GET", "http://a.example.com/v/abc/seg/12?token=x", nil),
		httptest.NewRequest("GET", "http://media.example.com/live/a/b/c/playlist.m3u8", nil),
		httptest.NewRequest("GET", "http://media.example.com//a/./b/../c/segment.ts", nil),
		httptest.NewRequest("GET", "http://media.example.com/old/a/b", nil),
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := rt.Route(reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
}
