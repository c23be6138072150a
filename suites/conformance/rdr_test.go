package conformance

import (
	"net"
	"net/http"
	"strconv"

	"github.com/edgeconform/edgeconform/emulators/rules"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// redirect is a rule on listener answering code with Location loc, for
// requests of the scene's path obj.
func (s *scene) redirect(listener, obj string, code int, loc string) rules.Rule {
	return rules.Rule{Match: rules.Match{Listener: listener, Path: s.path(obj)}, Unlimited: true,
		Action: rules.Action{Redirect: &rules.Redirect{Status: code, Location: loc}}}
}

var _ = Describe("RDR: redirects from the origin", func() {
	DescribeTable("RDR-1: only the listed 3xx codes are followed",
		func(scenario Handle, code int, followed bool) {
			s := newScene(scenario)
			loc := altURL(ListenerB, s.path("target"))
			s.rule(s.redirect(ListenerA, "obj", code, loc))
			if followed {
				r := s.get("obj").is(http.StatusOK)
				synthetic(r.Body, s.path("target"), 1024)
				reqs := s.origin(2)
				Expect(listeners(reqs)).To(Equal([]string{ListenerA, ListenerB}))
				Expect(reqs[1].Path).To(Equal(s.path("target")))
			} else {
				r := s.get("obj").is(code)
				Expect(r.Header.Get("Location")).To(Equal(loc))
				s.origin(1)
			}
		},
		Entry("MOVED_PERMANENTLY follows 301", R("RDR-1"), ScRdr, 301, true),
		Entry("FOUND follows 302", R("RDR-1"), ScRdr, 302, true),
		Entry("303 is not listed: returned", R("RDR-1"), ScRdr, 303, false),
		Entry("307 is not listed: returned", R("RDR-1"), ScRdr, 307, false),
		Entry("308 is not listed: returned", R("RDR-1"), ScRdr, 308, false),
		Entry("SEE_OTHER follows 303", R("RDR-1"), ScRdrAll, 303, true),
		Entry("TEMPORARY_REDIRECT follows 307", R("RDR-1"), ScRdrAll, 307, true),
		Entry("PERMANENT_REDIRECT follows 308", R("RDR-1"), ScRdrAll, 308, true),
	)

	It("RDR-2: each followed redirect is an attempt against the redirecting origin's maxAttempts", R("RDR-2"), func() {
		// rdr-max3: maxAttempts 3 allows two followed redirects.
		s := newScene(ScRdrMax3)
		s.rule(s.redirect(ListenerA, "obj", 302, altURL(ListenerB, s.path("t1"))),
			s.redirect(ListenerB, "t1", 302, altURL(ListenerB, s.path("t2"))))
		s.get("obj").is(http.StatusOK)
		Expect(listeners(s.origin(3))).To(Equal([]string{ListenerA, ListenerB, ListenerB}))
	})

	It("RDR-2: a redirect beyond maxAttempts is not followed", R("RDR-2"), func() {
		// rdr: maxAttempts 2: the second redirect would be a third attempt.
		s := newScene(ScRdr)
		s.rule(s.redirect(ListenerA, "obj", 302, altURL(ListenerB, s.path("t1"))),
			s.redirect(ListenerB, "t1", 302, altURL(ListenerB, s.path("t2"))))
		r := s.get("obj")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.Status).NotTo(Equal(http.StatusOK))
		Expect(listeners(s.origin(2))).To(Equal([]string{ListenerA, ListenerB}))
	})

	It("RDR-2, ATT-4: followed redirects count against the cap of 4 attempts", R("RDR-2", "ATT-4"), func() {
		// rdr-cap: a (maxAttempts 2) answers 503 twice; the failover b
		// (maxAttempts 4) redirects and redirects: only 2 attempts remain.
		s := newScene(ScRdrCap)
		s.rule(rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerA}, Action: status(503)},
			s.redirect(ListenerB, "obj", 302, altURL(ListenerB, s.path("t1"))),
			s.redirect(ListenerB, "t1", 302, altURL(ListenerB, s.path("t2"))),
			s.redirect(ListenerB, "t2", 302, altURL(ListenerB, s.path("t3"))))
		r := s.get("obj")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.Status).NotTo(Equal(http.StatusOK))
		Expect(listeners(s.origin(4))).To(Equal([]string{ListenerA, ListenerA, ListenerB, ListenerB}))
	})

	It("RDR-2: followed redirects count against maxAttemptsTimeout", R("RDR-2", "ATT-9"), func() {
		// rdr-mat: maxAttemptsTimeout 3u; the redirect target answers
		// after 5u.
		s := newScene(ScRdrMat)
		s.rule(s.redirect(ListenerA, "obj", 302, altURL(ListenerB, s.path("target"))),
			rules.Rule{Match: rules.Match{Listener: ListenerB}, Action: rules.Action{Delay: dur(U(5))}})
		r := s.get("obj").is(http.StatusGatewayTimeout)
		within(r.Elapsed, U(3), "504 at maxAttemptsTimeout")
	})

	It("RDR-3: redirects are not followed for unsafe methods", R("RDR-3"), func() {
		s := newScene(ScRdr)
		loc := altURL(ListenerB, s.path("target"))
		s.rule(s.redirect(ListenerA, "obj", 302, loc))
		r := s.do("POST", "obj", body("payload")).is(http.StatusFound)
		Expect(r.Header.Get("Location")).To(Equal(loc))
		s.origin(1)
	})

	DescribeTable("RDR-4: the redirected request keeps its method and goes to the Location host",
		func(method string) {
			s := newScene(ScRdr)
			s.rule(s.redirect(ListenerA, "obj", 302, altURL(ListenerB, s.path("target"))))
			s.do(method, "obj").is(http.StatusOK)
			reqs := s.origin(2)
			Expect(reqs[1].Listener).To(Equal(ListenerB))
			Expect(reqs[1].Method).To(Equal(method))
			Expect(reqs[1].Host).To(Equal(net.JoinHostPort(env.Params.AltHost, strconv.Itoa(env.Params.Ports[ListenerB]))))
		},
		Entry("GET", R("RDR-4"), "GET"),
		Entry("HEAD", R("RDR-4"), "HEAD"),
		Entry("OPTIONS", R("RDR-4"), "OPTIONS"),
	)

	It("RDR-4: over TLS, the redirect's Host and SNI are the Location host", R("RDR-4"), func() {
		// rdr-tls: an HTTPS origin redirecting to itself under the
		// alternative name.
		s := newScene(ScRdrTls)
		hostPort := net.JoinHostPort(env.Params.AltHost, strconv.Itoa(env.Params.Ports[ListenerHTTPS]))
		s.rule(s.redirect(ListenerHTTPS, "obj", 302, "https://"+hostPort+s.path("target")))
		s.get("obj").is(http.StatusOK)
		reqs := s.origin(2)
		Expect(reqs[1].Listener).To(Equal(ListenerHTTPS))
		Expect(reqs[1].Host).To(Equal(hostPort))
		Expect(s.connOf(reqs[1]).SNI).To(Equal(env.Params.AltHost))
	})

	It("RDR-4: the redirect uses the protocol of the origin that returned it, whatever the Location's scheme", R("RDR-4"), func() {
		s := newScene(ScRdr)
		hostPort := net.JoinHostPort(env.Params.AltHost, strconv.Itoa(env.Params.Ports[ListenerB]))
		s.rule(s.redirect(ListenerA, "obj", 302, "https://"+hostPort+s.path("target")))
		s.get("obj").is(http.StatusOK)
		reqs := s.origin(2)
		Expect(reqs[1].Listener).To(Equal(ListenerB))
		Expect(reqs[1].Proto).To(Equal("HTTP/1.1"))
	})

	It("RDR-5: a listed redirect beyond maxAttempts (default 1) gets 502", R("RDR-5"), func() {
		s := newScene(ScRdrMax1)
		s.rule(s.redirect(ListenerA, "obj", 302, altURL(ListenerB, s.path("target"))))
		s.get("obj").is(http.StatusBadGateway)
		s.origin(1)
	})

	It("RDR-5: redirects beyond the attempt cap get 502", R("RDR-5"), func() {
		s := newScene(ScRdrCap)
		s.rule(rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerA}, Action: status(503)},
			s.redirect(ListenerB, "obj", 302, altURL(ListenerB, s.path("t1"))),
			s.redirect(ListenerB, "t1", 302, altURL(ListenerB, s.path("t2"))))
		s.get("obj").is(http.StatusBadGateway)
	})

	It("RDR-6: a redirect to a host outside the allow-list is returned to the client", R("RDR-6"), func() {
		s := newScene(ScRdrAllow)
		outside := "http://" + net.JoinHostPort(env.Params.OriginHost, strconv.Itoa(env.Params.Ports[ListenerB])) + s.path("target")
		s.rule(s.redirect(ListenerA, "out", 302, outside),
			s.redirect(ListenerA, "in", 302, altURL(ListenerB, s.path("target"))))
		r := s.get("out").is(http.StatusFound)
		Expect(r.Header.Get("Location")).To(Equal(outside))
		s.origin(1)
		s.get("in").is(http.StatusOK)
		Expect(listeners(s.origin(3))).To(Equal([]string{ListenerA, ListenerA, ListenerB}))
	})
})
