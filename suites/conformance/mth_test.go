package conformance

import (
	"net/http"

	"github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("MTH: methods and routing", func() {
	DescribeTable("MTH-1: without routeMethods, GET, HEAD and OPTIONS reach the origin",
		func(method string) {
			s := newScene(ScPlain)
			s.do(method, "obj").is(http.StatusOK)
			Expect(s.origin(1)[0].Method).To(Equal(method))
		},
		Entry("GET", R("MTH-1"), "GET"),
		Entry("HEAD", R("MTH-1"), "HEAD"),
		Entry("OPTIONS", R("MTH-1"), "OPTIONS"),
	)

	DescribeTable("MTH-1: without routeMethods, other methods get 405 at the edge",
		func(method string) {
			s := newScene(ScPlain)
			s.do(method, "obj", body("x")).is(http.StatusMethodNotAllowed)
			s.origin(0)
		},
		Entry("POST", R("MTH-1"), "POST"),
		Entry("PUT", R("MTH-1"), "PUT"),
		Entry("PATCH", R("MTH-1"), "PATCH"),
		Entry("DELETE", R("MTH-1"), "DELETE"),
	)

	It("MTH-1: a method listed in routeMethods reaches the origin", R("MTH-1"), func() {
		s := newScene(ScMethodsPost)
		s.do("POST", "obj", body("x")).is(http.StatusOK)
		Expect(s.origin(1)[0].Method).To(Equal("POST"))
	})

	It("MTH-2: a GET with a body gets 400", R("MTH-2"), func() {
		s := newScene(ScPlain)
		s.get("obj", body("a body")).is(http.StatusBadRequest)
		s.origin(0)
	})

	It("MTH-2: a request with trailers gets 400", R("MTH-2"), func() {
		s := newScene(ScMethodsPost)
		s.do("POST", "obj", trailer("X-Checksum", "abc")).is(http.StatusBadRequest)
		s.origin(0)
	})

	It("MTH-3: a path that matches no route gets 404", R("MTH-3"), func() {
		s := newScene(ScPlain)
		send("GET", "/no-route/"+s.id+"/obj").is(http.StatusNotFound)
	})

	It("MTH-3: an unknown host gets 404", R("MTH-3"), func() {
		// The unknown host falls to the "*" host rule, whose matcher has
		// no route for this path.
		s := newScene(ScPlain)
		s.get("obj", host("unknown-"+s.id+".invalid")).is(http.StatusNotFound)
		s.origin(0)
	})

	It("MTH-4: route rules are tried by ascending priority, whatever their order in the list", R("MTH-4"), func() {
		s := newScene(ScPrio)
		// Both routes match; the one with the smaller number (listed
		// second) wins.
		r := s.get("a", header("X-Edgeconform-Prio", "first")).is(http.StatusOK)
		Expect(r.Header.Get(topology.RouteHeader)).To(Equal(string(ScPrioFirst)))
		// Only the larger number matches: it answers.
		r = s.get("b").is(http.StatusOK)
		Expect(r.Header.Get(topology.RouteHeader)).To(Equal("prio-second"))
	})

	DescribeTable("MTH-5: host rules: exact host first, then the longest wildcard; the port is ignored",
		func(hostOf func(topology.Params) string, matcher string) {
			s := newScene(ScPlain)
			r := send("GET", topology.MTHStarPrefix+s.id, host(hostOf(env.Params))).is(http.StatusOK)
			Expect(r.Header.Get(topology.MatcherHeader)).To(Equal(matcher))
		},
		Entry("an exact host beats a wildcard that also matches", R("MTH-5"),
			func(p topology.Params) string { return p.MTHExactHost() }, topology.MTHExactMatcher),
		Entry("the port in Host is ignored", R("MTH-5"),
			func(p topology.Params) string { return p.MTHExactHost() + ":8443" }, topology.MTHExactMatcher),
		Entry("the longer of two matching suffix wildcards wins", R("MTH-5"),
			func(p topology.Params) string { return "x.deep.mth." + p.ClientHost }, topology.MTHLongMatcher),
		Entry("a suffix wildcard", R("MTH-5"),
			func(p topology.Params) string { return "x.mth." + p.ClientHost }, topology.MTHShortMatcher),
		Entry("a prefix wildcard", R("MTH-5"),
			func(p topology.Params) string { return "mthprefix.example.net" }, topology.MTHPrefixMatcher),
		Entry("any other host: *", R("MTH-5"),
			func(p topology.Params) string { return "other.example.net" }, topology.MTHStarMatcher),
	)

	It("MTH-6: repeated slashes are merged and dot segments removed before matching", R("MTH-6"), func() {
		s := newScene(ScNorm)
		// The route is /c/norm/deep/; neither raw path starts with it.
		r := send("GET", "/c//norm/./deep/"+runID+"/"+s.id+"/x").is(http.StatusOK)
		Expect(r.Header.Get(topology.RouteHeader)).To(Equal(string(ScNorm)))
		r = send("GET", "/c/norm/other/../deep/"+runID+"/"+s.id+"/y").is(http.StatusOK)
		Expect(r.Header.Get(topology.RouteHeader)).To(Equal(string(ScNorm)))
	})

	It("MTH-6: no percent-decoding before matching", R("MTH-6"), func() {
		s := newScene(ScPlain)
		// %70 is 'p': /c/%70lain/ is not /c/plain/ to the router.
		send("GET", "/c/%70lain/"+runID+"/"+s.id+"/obj").is(http.StatusNotFound)
		s.origin(0)
	})

	It("MTH-6: no case folding unless ignoreCase", R("MTH-6"), func() {
		s := newScene(ScPlain)
		send("GET", "/C/PLAIN/"+runID+"/"+s.id+"/obj").is(http.StatusNotFound)
		s.origin(0)
		i := newScene(ScIcase)
		r := send("GET", "/C/ICASE/"+runID+"/"+i.id+"/obj").is(http.StatusOK)
		Expect(r.Header.Get(topology.RouteHeader)).To(Equal(string(ScIcase)))
	})

	It("MTH-7: a path rewrite applies after matching and the route is not re-matched", R("MTH-7"), func() {
		s := newScene(ScRewrite)
		r := s.get("obj").is(http.StatusOK)
		Expect(r.Header.Get(topology.RouteHeader)).To(Equal(string(ScRewrite)))
		dest := topology.Prefix(string(ScRwDest)) + runID + "/" + s.id + "/"
		reqs := (&scene{ns: dest}).origin(1)
		// The rewritten path went to the rewrite route's origin, not to
		// the origin of the route the new path would match.
		Expect(reqs[0].Listener).To(Equal(topology.ListenerA))
		Expect(reqs[0].Path).To(Equal(dest + "obj"))
	})

	It("MTH-7: the cache key is the client's path, not the rewritten one", R("MTH-7"), func() {
		s := newScene(ScRewrite)
		dest := topology.Prefix(string(ScRwDest)) + runID + "/" + s.id + "/"
		d := &scene{ns: dest}
		d.object(objectCacheable(dest + "obj"))
		// Fill the rewrite route's key (its origin request is for the
		// rewritten path) until it is served from the cache.
		s.get("obj").is(http.StatusOK)
		warm(func() *resp { return s.get("obj") }, d)
		Expect(listeners(d.journal().Requests)).To(HaveEach(topology.ListenerA))
		// The rewritten path asked for under its own route is another key:
		// a miss, so its origin sees it.
		send("GET", dest+"obj").is(http.StatusOK)
		var onB int
		for _, r := range d.journal().Requests {
			if r.Listener == topology.ListenerB {
				onB++
			}
		}
		Expect(onB).To(Equal(1), "requests for the rewritten path under its own route: %s", describe(d.journal().Requests))
	})
})
