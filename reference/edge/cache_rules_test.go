package edge

import (
	"net/http"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

const rulesConfig = `
origins:
  - {name: h1, originAddress: origin.test, protocol: HTTP, port: {{port "http"}}}
service:
  name: cache-rules
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: main}]
    pathMatchers:
      - name: main
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /origin/}], origin: h1, routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}}
          - {priority: 2, matchRules: [{prefixMatch: /static/}], origin: h1, routeAction: {cdnPolicy: {cacheMode: CACHE_ALL_STATIC, defaultTtl: 30s, maxTtl: 60s}}}
          - {priority: 3, matchRules: [{prefixMatch: /force/}], origin: h1, routeAction: {cdnPolicy: {cacheMode: FORCE_CACHE_ALL, defaultTtl: 30s}}}
          - {priority: 4, matchRules: [{prefixMatch: /bypass/}], origin: h1, routeAction: {cdnPolicy: {cacheMode: BYPASS_CACHE}}}
          - {priority: 5, matchRules: [{prefixMatch: /neg/}], origin: h1, routeAction: {cdnPolicy: {cacheMode: CACHE_ALL_STATIC, negativeCaching: true}}}
          - priority: 6
            matchRules: [{prefixMatch: /negpol/}]
            origin: h1
            routeAction: {cdnPolicy: {cacheMode: CACHE_ALL_STATIC, negativeCaching: true, negativeCachingPolicy: {"404": 60s}}}
          - priority: 7
            matchRules: [{prefixMatch: /key/}]
            origin: h1
            routeAction:
              cdnPolicy:
                cacheMode: FORCE_CACHE_ALL
                defaultTtl: 30s
                cacheKeyPolicy: {excludedQueryParameters: [session], includedHeaderNames: [X-Device]}
`

// CCH-1, CCH-2, CCH-3, CCH-5, CCH-6 through the edge against the emulator:
// each case fetches twice (the second request may differ, for keys) and
// checks whether the second was a hit, from Cache-Status and the journal.
func TestCacheRulesThroughTheEdge(t *testing.T) {
	r := newRig(t, rulesConfig)
	type req struct {
		query string
		hdr   []string
	}
	for _, tc := range []struct {
		name        string
		path        string
		spec        objects.Spec // Path is set from path
		status      int          // a rule answers with this status instead of the object (0: the object)
		hdr         map[string]string
		first, next req
		hit         bool
	}{
		{name: "CCH-2 USE_ORIGIN_HEADERS max-age", path: "/origin/a", spec: objects.Spec{CacheControl: "max-age=60"}, hit: true},
		{name: "CCH-2 USE_ORIGIN_HEADERS without directives", path: "/origin/b", spec: objects.Spec{ContentType: "image/png"}},
		{name: "CCH-3 s-maxage beats max-age=0", path: "/origin/c", spec: objects.Spec{CacheControl: "max-age=0, s-maxage=60", ETag: ptr("")}, hit: true},
		{name: "CCH-3 Expires ignored with Cache-Control", path: "/origin/d", spec: objects.Spec{CacheControl: "public", Headers: map[string]string{"Expires": "Thu, 01 Jan 2099 00:00:00 GMT"}}},
		{name: "CCH-3 Pragma ignored", path: "/origin/e", spec: objects.Spec{CacheControl: "max-age=60", Headers: map[string]string{"Pragma": "no-cache"}}, hit: true},
		{name: "CCH-3 request no-cache ignored", path: "/origin/f", spec: objects.Spec{CacheControl: "max-age=60"}, next: req{hdr: []string{"Cache-Control", "no-cache"}}, hit: true},
		{name: "CCH-1 request no-store not stored", path: "/origin/g", spec: objects.Spec{CacheControl: "max-age=60"}, first: req{hdr: []string{"Cache-Control", "no-store"}}},
		{name: "CCH-1 private not stored", path: "/origin/h", spec: objects.Spec{CacheControl: "private, max-age=60"}},
		{name: "CCH-1 no-store not stored", path: "/origin/i", spec: objects.Spec{CacheControl: "no-store"}},
		{name: "CCH-1 Authorization: public stored", path: "/origin/auth1", spec: objects.Spec{CacheControl: "public, max-age=60"},
			first: req{hdr: []string{"Authorization", "Bearer x"}}, hit: true},
		{name: "CCH-1 Authorization: not public, not stored", path: "/origin/auth2", spec: objects.Spec{CacheControl: "max-age=60"},
			first: req{hdr: []string{"Authorization", "Bearer x"}}},
		{name: "CCH-1 Set-Cookie not stored", path: "/force/j", spec: objects.Spec{Headers: map[string]string{"Set-Cookie": "a=b"}}},
		{name: "CCH-2 CACHE_ALL_STATIC static type", path: "/static/k.css", spec: objects.Spec{ContentType: "text/css"}, hit: true},
		{name: "CCH-2 CACHE_ALL_STATIC other type", path: "/static/l", spec: objects.Spec{ContentType: "application/json"}},
		{name: "CCH-2 CACHE_ALL_STATIC directive on any type", path: "/static/m", spec: objects.Spec{ContentType: "application/json", CacheControl: "max-age=60"}, hit: true},
		{name: "CCH-2 FORCE_CACHE_ALL ignores private", path: "/force/n", spec: objects.Spec{CacheControl: "private, no-store"}, hit: true},
		{name: "CCH-2 BYPASS_CACHE", path: "/bypass/o", spec: objects.Spec{CacheControl: "max-age=60"}},
		{name: "CCH-5 negative caching off: 404 not stored", path: "/static/p", status: 404},
		{name: "CCH-5 negative caching on: 404 stored", path: "/neg/q", status: 404, hit: true},
		{name: "CCH-5 negative caching on: 403 not in the defaults", path: "/neg/r", status: 403},
		{name: "CCH-5 policy lists 404", path: "/negpol/s", status: 404, hit: true},
		{name: "CCH-5 policy without 410", path: "/negpol/t", status: 410},
		{name: "CCH-1 500 not stored without negative caching", path: "/force/u", status: 500},
		{name: "CCH-6 query order does not matter", path: "/key/v", first: req{query: "?a=1&b=2"}, next: req{query: "?b=2&a=1"}, hit: true},
		{name: "CCH-6 excluded query parameter", path: "/key/w", first: req{query: "?a=1&session=x"}, next: req{query: "?a=1&session=y"}, hit: true},
		{name: "CCH-6 other query value", path: "/key/x", first: req{query: "?a=1"}, next: req{query: "?a=2"}},
		{name: "CCH-6 included header", path: "/key/y", first: req{hdr: []string{"X-Device", "tv"}}, next: req{hdr: []string{"X-Device", "phone"}}},
		{name: "CCH-6 included header same value", path: "/key/z", first: req{hdr: []string{"X-Device", "tv"}}, next: req{hdr: []string{"X-Device", "tv"}}, hit: true},
		{name: "CCH-6 Vary on Accept-Encoding", path: "/origin/va", spec: objects.Spec{CacheControl: "max-age=60", Headers: map[string]string{"Vary": "Accept-Encoding"}},
			first: req{hdr: []string{"Accept-Encoding", "gzip"}}, next: req{hdr: []string{"Accept-Encoding", "br"}}},
		{name: "CCH-6 Vary on a header not allowed", path: "/origin/vb", spec: objects.Spec{CacheControl: "max-age=60", Headers: map[string]string{"Vary": "User-Agent"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.Path = tc.path
			r.put(spec)
			if tc.status != 0 {
				body := "error"
				if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: tc.path}, Unlimited: true,
					Action: rules.Action{Status: tc.status, Body: &body, Headers: map[string]string{"Content-Type": "text/plain"}}}); err != nil {
					t.Fatal(err)
				}
			}
			resp, _ := r.get(tc.path+tc.first.query, tc.first.hdr...)
			if want := max(tc.status, http.StatusOK); resp.StatusCode != want {
				t.Fatalf("first: status %d, want %d", resp.StatusCode, want)
			}
			r.waitLogged(tc.path+tc.first.query, 1)
			resp, _ = r.get(tc.path+tc.next.query, tc.next.hdr...)
			hit := strings.HasSuffix(resp.Header.Get("Cache-Status"), "; hit")
			if hit != tc.hit {
				t.Fatalf("second: Cache-Status %q, want hit=%v", resp.Header.Get("Cache-Status"), tc.hit)
			}
			want := 2
			if tc.hit {
				want = 1
			}
			r.originCount(tc.path, want)
		})
	}
}

func ptr[T any](v T) *T { return &v }
