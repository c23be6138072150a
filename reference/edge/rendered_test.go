package edge

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/h1serve"
)

const renderedConfig = `
origins:
  - {name: o, originAddress: 127.0.0.1, protocol: HTTP, port: {{port "http"}}}
service:
  name: rendered
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers:
      - name: m
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /plain/}], origin: o, routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}}
          - priority: 2
            matchRules: [{prefixMatch: /static/}]
            origin: o
            routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}
            headerAction:
              responseHeadersToAdd: [{headerName: X-Edge, headerValue: ref}]
          - priority: 3
            matchRules: [{prefixMatch: /dynamic/}]
            origin: o
            routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}
            headerAction:
              responseHeadersToAdd: [{headerName: X-Status, headerValue: "{cdn_cache_status}"}]
`

// Issue #14: a plain GET hit after the first is sent with the response
// fields the first rendered into the entry's memo (rendered.go), and
// what the client gets is byte for byte what the header map gives, Age
// aside; Range, HEAD, conditional and child-tier requests, and routes
// whose header action depends on the request, take the map path and
// leave no memo; a memo for another route or Cache-Status member is not
// used; an entry replaced by a new version starts with an empty memo, so
// its new fields show.
func TestRenderedHits(t *testing.T) {
	r := newRig(t, renderedConfig)
	for _, p := range []string{"/plain/o", "/static/o", "/dynamic/o"} {
		r.put(objects.Spec{Path: p, Size: ptr(int64(3000)), CacheControl: "max-age=3600", Headers: map[string]string{"X-Origin": "v1"}})
	}
	memoOf := func(path string) *renderedHead {
		t.Helper()
		rh, _ := r.server().memoFor(t, path).Load().(*renderedHead)
		return rh
	}

	for _, path := range []string{"/plain/o", "/static/o"} {
		miss := rawGet(t, r.edge.URL, path, "")
		first, second := rawGet(t, r.edge.URL, path, ""), rawGet(t, r.edge.URL, path, "")
		if !strings.Contains(miss, "; fwd=miss\r\n") || !strings.Contains(first, "; hit\r\n") {
			t.Fatalf("%s: not a miss then a hit:\n%s\n%s", path, headOf(miss), headOf(first))
		}
		if memoOf(path) == nil {
			t.Fatalf("%s: the first hit left no rendered head", path)
		}
		if a, b := withoutAge(first), withoutAge(second); a != b {
			t.Errorf("%s: the rendered hit differs from the map's:\n%q\n%q", path, headOf(b), headOf(a))
		}
		if path == "/static/o" && !strings.Contains(second, "X-Edge: ref\r\n") {
			t.Errorf("the route's header action is missing from the rendered hit:\n%s", headOf(second))
		}
	}

	t.Run("the memo is what is sent", func(t *testing.T) {
		rh := memoOf("/plain/o")
		h := http.Header{"X-Probe": {"memo"}, "Content-Length": {"3000"}, "Content-Type": {"application/octet-stream"}}
		probe := *rh
		probe.fields = h1serve.Render(h, "Age")
		r.server().memoFor(t, "/plain/o").Store(&probe)
		if got := rawGet(t, r.edge.URL, "/plain/o", ""); !strings.Contains(got, "X-Probe: memo\r\n") {
			t.Fatalf("a hit did not send the memo's fields:\n%s", headOf(got))
		}
		other := *rh
		other.member = "someone else; hit"
		other.fields = probe.fields
		r.server().memoFor(t, "/plain/o").Store(&other)
		if got := rawGet(t, r.edge.URL, "/plain/o", ""); strings.Contains(got, "X-Probe") {
			t.Fatalf("a memo for another Cache-Status member was used:\n%s", headOf(got))
		}
		if memoOf("/plain/o").member != rh.member {
			t.Fatal("the map path did not render the head again for this member")
		}
	})

	t.Run("a replaced entry", func(t *testing.T) {
		r.put(objects.Spec{Path: "/plain/exp", Size: ptr(int64(100)), CacheControl: "max-age=3600", Headers: map[string]string{"X-Origin": "v1"}})
		for range 3 { // the miss, the hit that renders, the rendered hit
			rawGet(t, r.edge.URL, "/plain/exp", "")
		}
		if memoOf("/plain/exp") == nil {
			t.Fatal("no rendered head for the first version")
		}
		// A new version replaces the entry: the old one is dropped (as an
		// eviction or a purge would) and the next GET fills again.
		r.put(objects.Spec{Path: "/plain/exp", Version: "2", Size: ptr(int64(100)), CacheControl: "max-age=3600", Headers: map[string]string{"X-Origin": "v2"}})
		r.server().store.Delete(r.server().cacheKeyOf(t, "/plain/exp"))
		if got := rawGet(t, r.edge.URL, "/plain/exp", ""); !strings.Contains(got, "X-Origin: v2\r\n") || !strings.Contains(got, "; fwd=miss\r\n") {
			t.Fatalf("after the entry was dropped, not a miss of the new version:\n%s", headOf(got))
		}
		for i := range 2 {
			if got := rawGet(t, r.edge.URL, "/plain/exp", ""); !strings.Contains(got, "X-Origin: v2\r\n") || !strings.Contains(got, "; hit\r\n") {
				t.Fatalf("hit %d after the new version:\n%s", i+1, headOf(got))
			}
		}
	})

	t.Run("map path only", func(t *testing.T) {
		rawGet(t, r.edge.URL, "/dynamic/o", "") // the miss
		for _, extra := range []string{"", "Range: bytes=0-9\r\n", "If-None-Match: \"x\"\r\n", "Edgeconform-Tier: child\r\n"} {
			got := rawGet(t, r.edge.URL, "/dynamic/o", extra)
			if !strings.Contains(got, "X-Status: hit\r\n") {
				t.Fatalf("dynamic route, %q: %s", extra, headOf(got))
			}
		}
		if memoOf("/dynamic/o") != nil {
			t.Fatal("a route whose header action depends on the request left a rendered head")
		}
	})
}

// cacheKeyOf is the cache key of a plain GET of path on the rig's edge.
func (s *Server) cacheKeyOf(t *testing.T, path string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://edge.test"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	route, rerr := s.router.Route(req)
	if rerr != nil {
		t.Fatal(rerr)
	}
	return s.policyFor(route.Rule).Key(req)
}

func (s *Server) memoFor(t *testing.T, path string) *entry.Memo {
	t.Helper()
	rd, ok := s.store.Open(s.cacheKeyOf(t, path))
	if !ok {
		t.Fatalf("%s: not stored", path)
	}
	defer rd.Close()
	_, memo, _ := entry.DecodeMemo(rd)
	return memo
}

var ageField = regexp.MustCompile(`\r\nAge: \d+\r\n`)

// headOf is a response's head.
func headOf(resp string) string { head, _, _ := strings.Cut(resp, "\r\n\r\n"); return head }

func withoutAge(s string) string { return ageField.ReplaceAllString(s, "\r\nAge: -\r\n") }

// rawGet sends a GET of path with the extra field lines on a connection
// of its own and returns the response's bytes as they came.
func rawGet(t *testing.T, base, path, extra string) string {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(nc, "GET "+path+" HTTP/1.1\r\nHost: edge.test\r\n"+extra+"Connection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(bufio.NewReader(nc))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// LOG-2, issue #14: a rendered hit logs the cache key's fingerprint
// hashed once into the entry's memo, and it is the one the miss and the
// map-path hit logged: the first 8 bytes of the key's SHA-256 in hex.
// Another key's records carry another fingerprint.
func TestRenderedHitLogsKeyFingerprint(t *testing.T) {
	r := newRig(t, renderedConfig)
	for _, p := range []string{"/plain/a", "/plain/b"} {
		r.put(objects.Spec{Path: p, Size: ptr(int64(100)), CacheControl: "max-age=3600"})
	}
	prints := map[string]string{}
	for _, path := range []string{"/plain/a", "/plain/b"} {
		for range 4 { // a miss, a map-path hit, then rendered hits
			rawGet(t, r.edge.URL, path, "")
		}
		if memo, _ := r.server().memoFor(t, path).Load().(*renderedHead); memo == nil {
			t.Fatalf("%s: no rendered head: the hits did not take the rendered path", path)
		}
		sum := sha256.Sum256([]byte(r.server().cacheKeyOf(t, path)))
		want := hex.EncodeToString(sum[:8])
		var got []string
		for _, rec := range r.logs.records("client request") {
			if rec["uri"] == path {
				fp, _ := rec["cache_key_fingerprint"].(string)
				got = append(got, fp)
			}
		}
		if len(got) != 4 {
			t.Fatalf("%s: %d client request records, want 4", path, len(got))
		}
		for i, fp := range got {
			if fp != want {
				t.Errorf("%s: record %d has cache_key_fingerprint %q, want %q", path, i, fp, want)
			}
		}
		prints[path] = want
	}
	if prints["/plain/a"] == prints["/plain/b"] {
		t.Errorf("two keys, one fingerprint %q", prints["/plain/a"])
	}
}
