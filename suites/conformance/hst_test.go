package conformance

import (
	"net/http"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("HST: Host header and SNI", func() {
	DescribeTable("HST-1, HST-3: the Host sent, and the TLS SNI, follow the documentation's table",
		func(scenario Handle, listener string, want func(topology.Params) string) {
			s := newScene(scenario)
			s.get("obj").is(http.StatusOK)
			reqs := s.origin(1)
			h := want(env.Params)
			Expect(reqs[0].Listener).To(Equal(listener))
			Expect(reqs[0].Host).To(Equal(h), "Host at the origin")
			Expect(s.connOf(reqs[0]).SNI).To(Equal(h), "TLS SNI at the origin")
		},
		Entry("no rewrite: the client's Host", R("HST-1", "HST-3"), ScH2, ListenerH2,
			func(p topology.Params) string { return p.ClientHost }),
		Entry("the route's hostRewrite", R("HST-1", "HST-3"), ScHstRoute, ListenerH2,
			func(p topology.Params) string { return p.RouteRewriteHost }),
		Entry("the origin's hostRewrite", R("HST-1", "HST-3"), ScHstOrigin, ListenerH2,
			func(p topology.Params) string { return p.OriginRewriteHost }),
		Entry("both: the origin's wins", R("HST-1", "HST-3"), ScHstBoth, ListenerH2,
			func(p topology.Params) string { return p.OriginRewriteHost }),
		Entry("HTTPS: SNI is the route's hostRewrite too", R("HST-3"), ScHstRouteHttps, ListenerHTTPS,
			func(p topology.Params) string { return p.RouteRewriteHost }),
	)

	DescribeTable("HST-2: a failover sees the same Host as the primary unless it has its own hostRewrite",
		func(scenario Handle, want func(topology.Params) string) {
			s := newScene(scenario)
			s.get("obj").is(http.StatusOK)
			reqs := s.origin(1)
			Expect(reqs[0].Listener).To(Equal(ListenerH2))
			Expect(reqs[0].Host).To(Equal(want(env.Params)))
			Expect(s.connOf(reqs[0]).SNI).To(Equal(want(env.Params)))
		},
		Entry("same route rewrite", R("HST-2"), ScHstFo, func(p topology.Params) string { return p.RouteRewriteHost }),
		Entry("its own rewrite", R("HST-2"), ScHstFoOwn, func(p topology.Params) string { return p.OriginRewriteHost }),
	)

	It("HST-4: a gs:// origin ignores hostRewrite; the Host comes from the bucket", R("HST-4"), func() {
		s := newScene(ScHstGcs)
		s.putGCS(bucketObject{Name: "obj", Body: []byte("edgeconform")})
		s.get("obj").is(http.StatusOK)
		reqs := s.origin(1)
		Expect(reqs[0].Host).NotTo(Equal(env.Params.OriginRewriteHost))
		Expect(strings.HasPrefix(reqs[0].Host, env.Params.GCSBucket+".")).To(BeTrue(),
			"Host %q should be the bucket's virtual host %s.<endpoint>", reqs[0].Host, env.Params.GCSBucket)
	})

	It("HST-6: origin header actions apply only to that origin and win over route and client headers", R("HST-6"), func() {
		// hst6: a adds X-Edgeconform-Origin and replaces
		// X-Edgeconform-Both; the route adds X-Edgeconform-Route-Hdr and
		// replaces X-Edgeconform-Both; a answers 503 (HTTP_5XX), b serves.
		s := newScene(ScHst6)
		s.rule(rules.Rule{Match: rules.Match{Listener: ListenerA}, Action: status(503)})
		s.get("obj", header("X-Edgeconform-Both", "client")).is(http.StatusOK)
		reqs := s.origin(2)
		a, b := reqs[0], reqs[1]
		Expect([]string{a.Listener, b.Listener}).To(Equal([]string{ListenerA, ListenerB}))
		Expect(hdrs(a, "X-Edgeconform-Both")).To(Equal([]string{"origin"}), "the origin's replace wins on its own attempts")
		Expect(hdrs(a, "X-Edgeconform-Origin")).To(Equal([]string{"primary"}))
		Expect(hdrs(a, "X-Edgeconform-Route-Hdr")).To(Equal([]string{"route"}))
		Expect(hdrs(b, "X-Edgeconform-Origin")).To(BeEmpty(), "another origin's header action must not apply")
		Expect(hdrs(b, "X-Edgeconform-Both")).To(Equal([]string{"route"}), "the route's replace wins over the client's")
		Expect(hdrs(b, "X-Edgeconform-Route-Hdr")).To(Equal([]string{"route"}))
	})
})

var _ = Describe("PRT: protocols", func() {
	It("PRT-1: HTTP2 is h2 over TLS", R("PRT-1"), func() {
		s := newScene(ScH2)
		s.get("obj").is(http.StatusOK)
		reqs := s.origin(1)
		Expect(reqs[0].Proto).To(Equal("HTTP/2.0"))
		c := s.connOf(reqs[0])
		Expect(c.ALPN).To(Equal("h2"))
		Expect(c.TLSVersion).NotTo(BeEmpty())
	})

	It("PRT-1: HTTP2 does not fall back to HTTP/1.1: an origin without h2 fails, the client gets 502", R("PRT-1"), func() {
		s := newScene(ScPrtH2ToH1)
		s.get("obj").is(http.StatusBadGateway)
		s.origin(0)
		// The attempt reached the HTTP/1.1-only listener offering h2 alone
		// and failed its handshake (the journal closes it shortly after).
		Eventually(func() bool {
			for _, c := range s.conns(ListenerHTTPS) {
				if len(c.OfferedALPN) == 1 && c.OfferedALPN[0] == "h2" && c.CloseReason != "" {
					return true
				}
			}
			return false
		}).WithTimeout(U(10)+2*time.Second).WithPolling(10*time.Millisecond).Should(BeTrue(),
			"the HTTP/1.1-only origin saw no failed connection offering only h2")
	})

	It("PRT-2: HTTPS is HTTP/1.1 over TLS and never offers h2", R("PRT-2"), func() {
		s := newScene(ScHttps)
		s.get("obj").is(http.StatusOK)
		reqs := s.origin(1)
		Expect(reqs[0].Proto).To(Equal("HTTP/1.1"))
		c := s.connOf(reqs[0])
		Expect(c.TLSVersion).NotTo(BeEmpty())
		Expect(c.OfferedALPN).NotTo(ContainElement("h2"))
	})

	It("PRT-2: HTTPS never negotiates h2, even with an origin that speaks only h2", R("PRT-2"), func() {
		s := newScene(ScPrtHttpsToH2)
		s.get("obj").is(http.StatusBadGateway)
		s.origin(0)
	})

	It("PRT-2: HTTP is cleartext HTTP/1.1", R("PRT-2"), func() {
		s := newScene(ScPlain)
		s.get("obj").is(http.StatusOK)
		reqs := s.origin(1)
		Expect(reqs[0].Proto).To(Equal("HTTP/1.1"))
		Expect(s.connOf(reqs[0]).TLSVersion).To(BeEmpty())
	})

	DescribeTable("PRT-3: without a port, HTTP uses 80 and HTTP2 443",
		func(scenario Handle, listener string) {
			s := newScene(scenario)
			s.get("obj").is(http.StatusOK)
			Expect(listeners(s.origin(1))).To(Equal([]string{listener}))
		},
		Entry("HTTP: port 80", R("PRT-3"), ScPrtPort80, Listener80),
		Entry("HTTP2: port 443", R("PRT-3"), ScPrtPort443, Listener443),
	)

	// PRT-4 judges what the rule says, not how Go refuses a certificate:
	// the target tried the bad listener (a connection reached it), no
	// request went over that certificate, and the failover answered. A
	// target may refuse during the handshake (Go) or right after it
	// (nginx verifies once the handshake is done); both refuse it.
	DescribeTable("PRT-4: an invalid certificate is a TLS handshake error: a connect failure",
		func(scenario Handle, listener string) {
			s := newScene(scenario)
			s.get("obj").is(http.StatusOK) // failed over to b: CONNECT_FAILURE
			Expect(listeners(s.origin(1))).To(Equal([]string{ListenerB}),
				"origin requests: only the failover's, none over the %s listener's certificate", listener)
			Eventually(func() int { return len(s.conns(listener)) }).WithTimeout(U(10)+2*time.Second).WithPolling(10*time.Millisecond).
				Should(BeNumerically(">", 0), "the target never connected to the %s listener: its certificate was not tried", listener)
		},
		Entry("expired", R("PRT-4"), ScCfExpired, ListenerExpired),
		Entry("wrong name", R("PRT-4", "HST-3"), ScCfWrongname, ListenerWrongName),
		Entry("untrusted", R("PRT-4"), ScCfUntrusted, ListenerUntrusted),
	)

	It("PRT-5: requests to the origin carry no TE header", R("PRT-5"), func() {
		s := newScene(ScPlain)
		s.get("obj", header("TE", "trailers")).is(http.StatusOK)
		_, ok := hdr(s.origin(1)[0], "TE")
		Expect(ok).To(BeFalse())
	})
})
