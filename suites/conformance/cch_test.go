package conformance

import (
	"net/http"
	"strconv"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// settle lets a fill that has ended at the origin end at the target too:
// a request sent while the fill still runs may join it (COL-1) instead of
// showing whether the response was stored. It is about the machine, not
// the timing profile; a longer wait cannot make a spec pass wrongly.
func settle() { time.Sleep(min(U(1), 50*time.Millisecond)) }

// storage is one "stored or not" case: two requests for one object in
// a fresh namespace, one after the other.
type storage struct {
	scenario Handle
	obj      objects.Spec  // Path is set to "obj"
	act      *rules.Action // if set, answers every origin request instead of the object
	method   string        // default GET
	first    []reqOpt      // options of the first request
	second   []reqOpt      // of the second
	want     int           // the client's status, default 200
	stored   bool          // the second request is answered without an origin request
}

// check runs the case: the first request fills, the second shows by the
// journal whether the response was stored.
func (c storage) check() {
	GinkgoHelper()
	s := newScene(c.scenario)
	c.obj.Path = "obj"
	s.object(c.obj)
	if c.act != nil {
		s.rule(rules.Rule{Match: rules.Match{Path: s.path("obj")}, Unlimited: true, Action: *c.act})
	}
	method, want := c.method, c.want
	if method == "" {
		method = "GET"
	}
	if want == 0 {
		want = http.StatusOK
	}
	s.do(method, "obj", c.first...).is(want)
	s.origin(1)
	settle()
	s.do(method, "obj", c.second...).is(want)
	if c.stored {
		s.origin(1)
	} else {
		s.origin(2)
	}
}

func act(a rules.Action) *rules.Action { return &a }

// errorBody is the body of scripted error statuses.
var errorBody = "edgeconform error body"

func statusAct(code int) *rules.Action {
	return &rules.Action{Status: code, Body: &errorBody, Headers: map[string]string{"Content-Type": "text/plain"}}
}

var _ = Describe("CCH: caching", func() {
	DescribeTable("CCH-1: what may be stored",
		func(c storage) { c.check() },
		Entry("a response with Set-Cookie is not stored, even under FORCE_CACHE_ALL", R("CCH-1"),
			storage{scenario: ScCchForce, obj: objects.Spec{CacheControl: "public, max-age=600", Headers: map[string]string{"Set-Cookie": "edgeconform=1"}}}),
		Entry("a request with Cache-Control: no-store is not stored", R("CCH-1", "CCH-3"),
			storage{scenario: ScCchOrigin, obj: objectCacheable(""), first: []reqOpt{header("Cache-Control", "no-store")}}),
		Entry("with Authorization, a response that is not public is not stored", R("CCH-1"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{CacheControl: "max-age=600"},
				first: []reqOpt{header("Authorization", "Bearer edgeconform")}, second: []reqOpt{header("Authorization", "Bearer edgeconform")}}),
		Entry("with Authorization, a public response is stored", R("CCH-1"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{CacheControl: "public, max-age=600"},
				first: []reqOpt{header("Authorization", "Bearer edgeconform")}, second: []reqOpt{header("Authorization", "Bearer edgeconform")}, stored: true}),
		Entry("a private response is not stored", R("CCH-1"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{CacheControl: "private, max-age=600"}}),
		Entry("a no-store response is not stored", R("CCH-1"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{CacheControl: "no-store, max-age=600"}}),
		Entry("status 203 is stored under FORCE_CACHE_ALL", R("CCH-1", "CCH-2"),
			storage{scenario: ScCchForce, act: statusAct(203), want: 203, stored: true}),
		Entry("status 202 is not cacheable, even under FORCE_CACHE_ALL", R("CCH-1"),
			storage{scenario: ScCchForce, act: statusAct(202), want: 202}),
		Entry("POST is not cached, even under FORCE_CACHE_ALL", R("CCH-1"),
			storage{scenario: ScCchForce, method: "POST", obj: objectCacheable("")}),
		Entry("an object over 100 GiB is not stored", R("CCH-1"),
			storage{scenario: ScCchForce, obj: objects.Spec{Size: ptr(int64(101 << 30)), CacheControl: "public, max-age=600"},
				first: []reqOpt{header("Range", "bytes=0-99")}, second: []reqOpt{header("Range", "bytes=0-99")}, want: http.StatusPartialContent}),
	)

	DescribeTable("CCH-2: cache modes",
		func(c storage) { c.check() },
		Entry("CACHE_ALL_STATIC stores a static content type without directives", R("CCH-2"),
			storage{scenario: ScCchStatic, obj: objects.Spec{ContentType: "image/png"}, stored: true}),
		Entry("CACHE_ALL_STATIC does not store another type without directives", R("CCH-2"),
			storage{scenario: ScCchStatic, obj: objects.Spec{ContentType: "application/octet-stream"}}),
		Entry("CACHE_ALL_STATIC honours the origin's directives on any type", R("CCH-2"),
			storage{scenario: ScCchStatic, obj: objects.Spec{ContentType: "application/json", CacheControl: "max-age=600"}, stored: true}),
		Entry("USE_ORIGIN_HEADERS does not store a static type without directives", R("CCH-2"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{ContentType: "image/png"}}),
		Entry("USE_ORIGIN_HEADERS stores by the origin's directives", R("CCH-2"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{ContentType: "application/json", CacheControl: "max-age=600"}, stored: true}),
		Entry("FORCE_CACHE_ALL ignores private, no-store and no-cache", R("CCH-2", "CCH-1"),
			storage{scenario: ScCchForce, obj: objects.Spec{CacheControl: "private, no-store, no-cache"}, stored: true}),
		Entry("FORCE_CACHE_ALL stores a type that is not static", R("CCH-2"),
			storage{scenario: ScCchForce, obj: objects.Spec{ContentType: "application/octet-stream"}, stored: true}),
		Entry("BYPASS_CACHE always fetches from the origin", R("CCH-2"),
			storage{scenario: ScCchBypass, obj: objects.Spec{ContentType: "image/png", CacheControl: "public, max-age=600"}}),
	)

	DescribeTable("CCH-2: CACHE_ALL_STATIC keeps an object for defaultTtl, and origin directives at most for maxTtl",
		func(obj objects.Spec, ttl int) {
			s := newScene(ScCchStaticTtl)
			obj.Path = "obj"
			s.object(obj)
			s.get("obj").is(http.StatusOK)
			filled := time.Now()
			s.origin(1)
			settle()
			s.get("obj").is(http.StatusOK)
			s.origin(1) // fresh: a hit
			// Date has a granularity of one second, so the age the
			// target computes may be up to 1 s more than the time since
			// the fill.
			var refetched time.Duration
			Eventually(func() int {
				s.get("obj").is(http.StatusOK)
				refetched = time.Since(filled)
				return len(s.journal().Requests)
			}).WithTimeout(time.Duration(ttl)*time.Second+slack()+time.Second).WithPolling(100*time.Millisecond).
				Should(BeNumerically(">=", 2), "the object was never fetched again")
			Expect(refetched).To(BeNumerically(">=", time.Duration(ttl-1)*time.Second),
				"fetched again %v after the fill, before the %ds TTL (less Date's 1 s granularity)", refetched, ttl)
		},
		Entry("a static type without directives: defaultTtl", R("CCH-2"), objects.Spec{ContentType: "image/png"}, CCHDefaultTTL),
		Entry("max-age=600: capped at maxTtl", R("CCH-2"), objects.Spec{ContentType: "image/png", CacheControl: "max-age=600"}, CCHMaxTTL),
	)

	DescribeTable("CCH-3: directive precedence",
		func(c storage) { c.check() },
		Entry("s-maxage beats max-age", R("CCH-3"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{CacheControl: "max-age=0, s-maxage=600"}, stored: true}),
		Entry("Expires is ignored when Cache-Control is present (max-age=0 wins over a far Expires)", R("CCH-3"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{CacheControl: "max-age=0",
				Headers: map[string]string{"Expires": time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat)}}}),
		Entry("without Cache-Control, Expires gives the lifetime", R("CCH-3"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{
				Headers: map[string]string{"Expires": time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat)}}, stored: true}),
		Entry("Pragma: no-cache from the origin is ignored", R("CCH-3"),
			storage{scenario: ScCchOrigin, obj: objects.Spec{CacheControl: "max-age=600", Headers: map[string]string{"Pragma": "no-cache"}}, stored: true}),
		Entry("a request's Cache-Control: no-cache is ignored", R("CCH-3"),
			storage{scenario: ScCchOrigin, obj: objectCacheable(""), second: []reqOpt{header("Cache-Control", "no-cache")}, stored: true}),
		Entry("a request's Cache-Control: max-age=0 and Pragma: no-cache are ignored", R("CCH-3"),
			storage{scenario: ScCchOrigin, obj: objectCacheable(""), second: []reqOpt{header("Cache-Control", "max-age=0"), header("Pragma", "no-cache")}, stored: true}),
	)

	DescribeTable("CCH-4: an entry that must be revalidated is revalidated with a conditional request; a 304 serves the stored body",
		func(obj objects.Spec, validator string) {
			s := newScene(ScCchOrigin)
			const size = 4096
			obj.Path, obj.Size = "obj", ptr(int64(size))
			s.object(obj)
			first := s.get("obj").is(http.StatusOK)
			synthetic(first.Body, s.path("obj"), size)
			s.origin(1)
			for i := 2; i <= 3; i++ {
				settle()
				r := s.get("obj").is(http.StatusOK)
				synthetic(r.Body, s.path("obj"), size)
				reqs := s.origin(i)
				cond := reqs[i-1]
				switch validator {
				case "ETag":
					v, _ := hdr(cond, "If-None-Match")
					Expect(v).To(Equal(first.Header.Get("ETag")), "request %d: If-None-Match at the origin", i)
				case "Last-Modified":
					v, _ := hdr(cond, "If-Modified-Since")
					Expect(v).To(Equal(first.Header.Get("Last-Modified")), "request %d: If-Modified-Since at the origin", i)
				}
				Expect(cond.Status).To(Equal(http.StatusNotModified), "request %d: the origin's answer to the revalidation", i)
			}
		},
		Entry("no-cache: stored, revalidated before each use (ETag)", R("CCH-4"), objects.Spec{CacheControl: "no-cache"}, "ETag"),
		Entry("max-age=0: stale at once (ETag)", R("CCH-4"), objects.Spec{CacheControl: "max-age=0"}, "ETag"),
		Entry("no-cache with only Last-Modified", R("CCH-4"), objects.Spec{CacheControl: "no-cache", ETag: ptr("")}, "Last-Modified"),
	)

	It("CCH-4: a revalidation that finds a new version serves and stores it", R("CCH-4"), func() {
		s := newScene(ScCchOrigin)
		s.object(objects.Spec{Path: "obj", CacheControl: "no-cache"})
		v1 := s.get("obj").is(http.StatusOK)
		s.origin(1)
		s.object(objects.Spec{Path: "obj", CacheControl: "no-cache", Version: "2"})
		settle()
		r := s.get("obj").is(http.StatusOK)
		Expect(synth.Verify(synth.Object{Path: s.path("obj"), Size: 1024, Version: "2"}, 0, r.Body)).To(Succeed(), "the new version")
		Expect(r.Header.Get("ETag")).NotTo(Equal(v1.Header.Get("ETag")))
		reqs := s.origin(2)
		v, _ := hdr(reqs[1], "If-None-Match")
		Expect(v).To(Equal(v1.Header.Get("ETag")), "the revalidation is conditional")
		Expect(reqs[1].Status).NotTo(Equal(http.StatusNotModified), "the origin has a new version")
		settle()
		s.get("obj").is(http.StatusOK)
		reqs = s.origin(3)
		v, _ = hdr(reqs[2], "If-None-Match")
		Expect(v).To(Equal(r.Header.Get("ETag")), "the next revalidation uses the new version's validator")
	})

	It("CCH-4: must-revalidate: fresh, it is served as is; once stale, revalidated", R("CCH-4"), func() {
		const maxAge = 2
		s := newScene(ScCchOrigin)
		s.object(objects.Spec{Path: "obj", CacheControl: "max-age=" + strconv.Itoa(maxAge) + ", must-revalidate"})
		first := s.get("obj").is(http.StatusOK)
		filled := time.Now()
		s.origin(1)
		settle()
		s.get("obj").is(http.StatusOK)
		s.origin(1) // fresh (Date's 1 s granularity leaves at least 1 s)
		var refetched time.Duration
		Eventually(func() int {
			s.get("obj").is(http.StatusOK)
			refetched = time.Since(filled)
			return len(s.journal().Requests)
		}).WithTimeout(maxAge*time.Second+slack()+time.Second).WithPolling(100*time.Millisecond).
			Should(BeNumerically(">=", 2), "never revalidated")
		Expect(refetched).To(BeNumerically(">=", (maxAge-1)*time.Second))
		reqs := s.origin(2)
		v, _ := hdr(reqs[1], "If-None-Match")
		Expect(v).To(Equal(first.Header.Get("ETag")), "the revalidation is conditional")
	})

	DescribeTable("CCH-5: negative caching",
		func(c storage) { c.check() },
		Entry("off by default: a 404 is not stored", R("CCH-5"), storage{scenario: ScCchStatic, act: statusAct(404), want: 404}),
		Entry("on: a 404 is stored", R("CCH-5"), storage{scenario: ScCchNeg, act: statusAct(404), want: 404, stored: true}),
		Entry("on: a 410 is stored", R("CCH-5"), storage{scenario: ScCchNeg, act: statusAct(410), want: 410, stored: true}),
		Entry("on: a 301 is stored", R("CCH-5"), storage{scenario: ScCchNeg,
			act: act(rules.Action{Status: 301, Headers: map[string]string{"Location": "/elsewhere"}}), want: 301, stored: true}),
		Entry("on: a 405 is stored", R("CCH-5"), storage{scenario: ScCchNeg, act: statusAct(405), want: 405, stored: true}),
		Entry("on: a 403 (not in the defaults) is not stored", R("CCH-5"), storage{scenario: ScCchNeg, act: statusAct(403), want: 403}),
		Entry("a policy listing 404 stores a 404", R("CCH-5"), storage{scenario: ScCchNegpol, act: statusAct(404), want: 404, stored: true}),
		Entry("a policy listing only 404 does not store a 410", R("CCH-5"), storage{scenario: ScCchNegpol, act: statusAct(410), want: 410}),
	)

	// the main host rule's other host (read when the request is sent)
	aliasHost := func() reqOpt { return func(c *reqConf) { c.host = env.Params.AliasHost() } }
	q := func(query string) func(string) string { return func(p string) string { return p + query } }
	same := func(p string) string { return p }
	DescribeTable("CCH-6: the cache key",
		func(scenario Handle, obj objects.Spec, path1, path2 func(string) string, opts1, opts2 []reqOpt, sameKey bool) {
			s := newScene(scenario)
			obj.Path = "obj"
			s.object(obj)
			send("GET", path1(s.path("obj")), opts1...).is(http.StatusOK)
			s.origin(1)
			settle()
			send("GET", path2(s.path("obj")), opts2...).is(http.StatusOK)
			if sameKey {
				s.origin(1)
			} else {
				s.origin(2)
			}
		},
		Entry("the query string's order does not matter", R("CCH-6"), ScCchStatic, objectCacheable(""), q("?a=1&b=2"), q("?b=2&a=1"), nil, nil, true),
		Entry("another query value is another key", R("CCH-6"), ScCchStatic, objectCacheable(""), q("?a=1"), q("?a=2"), nil, nil, false),
		Entry("another host is another key", R("CCH-6"), ScCchStatic, objectCacheable(""), same, same, nil, []reqOpt{aliasHost()}, false),
		Entry("the same path on the same host is one key", R("CCH-6"), ScCchStatic, objectCacheable(""), same, same, nil, nil, true),
		Entry("excludedQueryParameters leave a parameter out", R("CCH-6"), ScCchKey, objectCacheable(""), q("?a=1&session=x"), q("?a=1&session=y"), nil, nil, true),
		Entry("excludedQueryParameters keep the others", R("CCH-6"), ScCchKey, objectCacheable(""), q("?a=1&session=x"), q("?a=2&session=x"), nil, nil, false),
		Entry("includedQueryParameters keep only those", R("CCH-6"), ScCchKeyInc, objectCacheable(""), q("?a=1&b=1"), q("?a=1&b=2"), nil, nil, true),
		Entry("includedQueryParameters: the included one counts", R("CCH-6"), ScCchKeyInc, objectCacheable(""), q("?a=1&b=1"), q("?a=2&b=1"), nil, nil, false),
		Entry("excludeHost", R("CCH-6"), ScCchKeyNohost, objectCacheable(""), same, same, nil, []reqOpt{aliasHost()}, true),
		Entry("excludeQueryString", R("CCH-6"), ScCchKeyNohost, objectCacheable(""), q("?a=1"), q("?a=2"), nil, nil, true),
		Entry("an included header joins the key", R("CCH-6"), ScCchKey, objectCacheable(""), same, same,
			[]reqOpt{header(KeyHeader, "tv")}, []reqOpt{header(KeyHeader, "phone")}, false),
		Entry("an included header with the same value", R("CCH-6"), ScCchKey, objectCacheable(""), same, same,
			[]reqOpt{header(KeyHeader, "tv")}, []reqOpt{header(KeyHeader, "tv")}, true),
		Entry("an included cookie joins the key", R("CCH-6"), ScCchKey, objectCacheable(""), same, same,
			[]reqOpt{header("Cookie", KeyCookie+"=a; other=1")}, []reqOpt{header("Cookie", KeyCookie+"=b; other=1")}, false),
		Entry("another cookie does not", R("CCH-6"), ScCchKey, objectCacheable(""), same, same,
			[]reqOpt{header("Cookie", KeyCookie+"=a; other=1")}, []reqOpt{header("Cookie", KeyCookie+"=a; other=2")}, true),
		Entry("Vary: Accept-Encoding joins the key", R("CCH-6"), ScCchOrigin,
			objects.Spec{CacheControl: "public, max-age=600", Headers: map[string]string{"Vary": "Accept-Encoding"}}, same, same,
			[]reqOpt{header("Accept-Encoding", "gzip")}, []reqOpt{header("Accept-Encoding", "br")}, false),
		Entry("Vary: Accept-Encoding, the same value", R("CCH-6"), ScCchOrigin,
			objects.Spec{CacheControl: "public, max-age=600", Headers: map[string]string{"Vary": "Accept-Encoding"}}, same, same,
			[]reqOpt{header("Accept-Encoding", "gzip")}, []reqOpt{header("Accept-Encoding", "gzip")}, true),
		Entry("Vary: Origin joins the key", R("CCH-6"), ScCchOrigin,
			objects.Spec{CacheControl: "public, max-age=600", Headers: map[string]string{"Vary": "Origin"}}, same, same,
			[]reqOpt{header("Origin", "https://a.example")}, []reqOpt{header("Origin", "https://b.example")}, false),
		Entry("Vary on a header that is not allowed: not stored", R("CCH-6"), Reading, ScCchOrigin,
			objects.Spec{CacheControl: "public, max-age=600", Headers: map[string]string{"Vary": "User-Agent"}}, same, same,
			[]reqOpt{header("User-Agent", "edgeconform")}, []reqOpt{header("User-Agent", "edgeconform")}, false),
	)

	It("CCH-7: USE_ORIGIN_HEADERS is an RFC 9111 shared cache: Age on hits, an unsafe method invalidates", R("CCH-7"), func() {
		s := newScene(ScCchOrigin)
		s.object(objectCacheable("obj"))
		s.get("obj").is(http.StatusOK)
		s.origin(1)
		settle()
		hit := s.get("obj").is(http.StatusOK)
		s.origin(1)
		age, err := strconv.Atoi(hit.Header.Get("Age"))
		Expect(err).NotTo(HaveOccurred(), "a hit carries Age (got %q)", hit.Header.Get("Age"))
		Expect(age).To(BeNumerically(">=", 0))
		Expect(hit.Header.Get("Cache-Status")).To(HaveSuffix("; hit"))
		s.do("POST", "obj", body("x")).is(http.StatusOK)
		s.origin(2)
		settle()
		s.get("obj").is(http.StatusOK)
		Expect(s.origin(3)[2].Method).To(Equal("GET"), "the POST invalidated the stored GET response")
	})
})
