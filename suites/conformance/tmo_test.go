package conformance

import (
	"net/http"

	"github.com/edgeconform/edgeconform/emulators/rules"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("TMO: timeouts", func() {
	// tmo1: a, connectTimeout 2u, maxAttempts 2, CONNECT_FAILURE.
	It("TMO-1: connectTimeout runs until the response headers; passing it is a connect failure", R("TMO-1"), func() {
		s := newScene(ScTmo1)
		s.rule(rules.Rule{Times: 1, Action: rules.Action{Delay: dur(U(8))}})
		r := s.get("obj").is(http.StatusOK)
		within(r.Elapsed, U(2), "the retry after the first attempt's connectTimeout")
		s.arrived(2)
	})

	It("TMO-1: each attempt has its own connectTimeout", R("TMO-1"), func() {
		s := newScene(ScTmo1)
		s.rule(rules.Rule{Times: 1, Action: rules.Action{Delay: dur(U(3))}},
			rules.Rule{Times: 1, Action: rules.Action{Delay: dur(U(1.5))}})
		r := s.get("obj").is(http.StatusOK)
		within(r.Elapsed, U(3.5), "first attempt cut at 2u, second answered after 1.5u")
		s.arrived(2)
	})

	It("TMO-1: response headers within connectTimeout are no failure", R("TMO-1"), func() {
		s := newScene(ScTmo1)
		s.rule(rules.Rule{Times: 1, Action: rules.Action{Delay: dur(U(1))}})
		s.get("obj").is(http.StatusOK)
		s.arrived(1)
	})

	It("TMO-2, TMO-7: maxAttemptsTimeout caps all attempts, failovers included; only the primary's counts", R("TMO-2", "TMO-7", "ATT-9"), func() {
		// tmo2: blackhole (connect 2u, maxAttemptsTimeout 5u) fails over
		// to blackhole (connect 2u, maxAttemptsTimeout 30u, maxAttempts
		// 2): 2u + 2u + the last attempt cut at 5u.
		s := newScene(ScTmo2)
		r := s.get("obj").is(http.StatusGatewayTimeout)
		within(r.Elapsed, U(5), "504 at the primary's maxAttemptsTimeout")
	})

	It("TMO-3: once a response is chosen, connectTimeout and maxAttemptsTimeout no longer apply", R("TMO-3"), func() {
		// tmo3: connect 2u, maxAttemptsTimeout 3u, read 4u, response 20u;
		// the body takes about 4u.
		s := newScene(ScTmo3)
		s.rule(rules.Rule{Action: rules.Action{Drip: &rules.Drip{Bytes: 128, Every: dur(U(0.5))}}})
		r := s.get("obj").is(http.StatusOK)
		Expect(r.BodyErr).NotTo(HaveOccurred())
		synthetic(r.Body, s.path("obj"), 1024)
		Expect(r.Elapsed).To(BeNumerically(">", U(3)), "the body outlasted maxAttemptsTimeout")
	})

	It("TMO-4: each attempt uses the connectTimeout of the origin it goes to", R("TMO-4"), func() {
		// tmo4: blackhole (connect 1u) fails over to b (connect 4u), whose
		// headers come after 2u: more than the primary's 1u.
		s := newScene(ScTmo4)
		s.rule(rules.Rule{Action: rules.Action{Delay: dur(U(2))}})
		r := s.get("obj").is(http.StatusOK)
		within(r.Elapsed, U(3), "1u on the primary, 2u on the failover")
	})

	It("TMO-4: a followed redirect uses the timeouts of the origin that returned it", R("TMO-4", "RDR-2"), func() {
		// rdr-tmo: a (connect 1u, maxAttempts 2) redirects to b, whose
		// headers come after 2u: cut at a's 1u.
		s := newScene(ScRdrTmo)
		s.rule(rules.Rule{Match: rules.Match{Listener: "a"}, Action: rules.Action{Redirect: &rules.Redirect{Status: 302, Location: altURL("b", s.path("target"))}}},
			rules.Rule{Match: rules.Match{Listener: "b"}, Action: rules.Action{Delay: dur(U(2))}})
		r := s.get("obj").is(http.StatusBadGateway)
		within(r.Elapsed, U(1), "the redirect attempt cut at the redirecting origin's connectTimeout")
		s.arrived(2)
	})

	// tmo5: a, readTimeout 2u, responseTimeout 6u.
	It("TMO-5: gaps between body reads shorter than readTimeout are fine", R("TMO-5"), func() {
		s := newScene(ScTmo5)
		s.rule(rules.Rule{Action: rules.Action{Drip: &rules.Drip{Bytes: 256, Every: dur(U(1))}}})
		r := s.get("obj").is(http.StatusOK)
		Expect(r.BodyErr).NotTo(HaveOccurred())
		synthetic(r.Body, s.path("obj"), 1024)
	})

	It("TMO-5, TMO-6: a gap longer than readTimeout truncates the response", R("TMO-5", "TMO-6"), func() {
		s := newScene(ScTmo5)
		s.rule(rules.Rule{Action: rules.Action{Stall: &rules.Cut{AfterBytes: ptr(int64(100))}}})
		r := s.get("obj")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.BodyErr).To(HaveOccurred(), "the client must see an incomplete body (%d bytes)", len(r.Body))
		Expect(len(r.Body)).To(BeNumerically("<=", 100))
		within(r.Elapsed, U(2), "truncation at readTimeout")
	})

	It("TMO-5, TMO-6: responseTimeout bounds the whole body from its first byte", R("TMO-5", "TMO-6"), func() {
		s := newScene(ScTmo5)
		s.rule(rules.Rule{Action: rules.Action{Drip: &rules.Drip{Bytes: 64, Every: dur(U(1))}}})
		r := s.get("obj")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.BodyErr).To(HaveOccurred(), "the client must see an incomplete body (%d bytes)", len(r.Body))
		Expect(len(r.Body)).To(BeNumerically("<", 1024))
		within(r.Elapsed, U(6), "truncation at responseTimeout")
	})

	It("TMO-5: readTimeout is capped by responseTimeout", R("TMO-5"), func() {
		// tmo5-cap: responseTimeout 3u, readTimeout left at its default
		// (15s): the stall is cut at 3u.
		s := newScene(ScTmo5Cap)
		s.rule(rules.Rule{Action: rules.Action{Stall: &rules.Cut{AfterBytes: ptr(int64(100))}}})
		r := s.get("obj")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.BodyErr).To(HaveOccurred())
		within(r.Elapsed, U(3), "truncation at responseTimeout, not the default readTimeout")
	})

	It("TMO-6: a chunked origin body cut by readTimeout is truncated visibly, not ended cleanly", R("TMO-6"), func() {
		s := newScene(ScTmo5)
		s.rule(rules.Rule{Action: rules.Action{Omit: []string{"Content-Length"}, Stall: &rules.Cut{AfterBytes: ptr(int64(100))}}})
		r := s.get("obj")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.BodyErr).To(HaveOccurred(), "a truncated body must not end like a complete one (%d bytes)", len(r.Body))
	})

	It("TMO-6: a truncated response is never cached", R("TMO-6"), func() {
		s := newScene(ScTmo5)
		s.object(objectCacheable("obj"))
		s.rule(rules.Rule{Times: 1, Action: rules.Action{Stall: &rules.Cut{AfterBytes: ptr(int64(100))}}})
		Expect(s.get("obj").BodyErr).To(HaveOccurred())
		r := s.get("obj").is(http.StatusOK)
		Expect(r.BodyErr).NotTo(HaveOccurred())
		synthetic(r.Body, s.path("obj"), 1024)
		s.arrived(2)
	})

	It("TMO-6: the origin closing short of Content-Length truncates the response visibly", R("TMO-6"), func() {
		s := newScene(ScTmo5)
		s.rule(rules.Rule{Action: rules.Action{Truncate: &rules.Cut{AfterBytes: ptr(int64(300))}}})
		r := s.get("obj")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.BodyErr).To(HaveOccurred(), "%d bytes", len(r.Body))
	})

	// tmo8: expired certificate (maxAttemptsTimeout 5u, maxAttempts 1)
	// fails over to b (connect 10u).
	It("TMO-8: the failover gets what is left of the primary's maxAttemptsTimeout", R("TMO-8"), func() {
		s := newScene(ScTmo8)
		s.rule(rules.Rule{Action: rules.Action{Delay: dur(U(3))}})
		r := s.get("obj").is(http.StatusOK)
		within(r.Elapsed, U(3), "the failover's answer")
	})

	It("TMO-8, TMO-7: a failover slower than what is left gets cut at the deadline with 504", R("TMO-8", "TMO-7"), func() {
		s := newScene(ScTmo8)
		s.rule(rules.Rule{Action: rules.Action{Delay: dur(U(8))}})
		r := s.get("obj").is(http.StatusGatewayTimeout)
		within(r.Elapsed, U(5), "504 at the primary's maxAttemptsTimeout")
	})

	It("TMO-7: the last attempt's connectTimeout is shortened to the deadline", R("TMO-7"), func() {
		// tmo7: blackhole, connect 6u, maxAttemptsTimeout 7u, maxAttempts
		// 2: the second attempt gets 1u, not 6u.
		s := newScene(ScTmo7)
		r := s.get("obj").is(http.StatusGatewayTimeout)
		within(r.Elapsed, U(7), "504 at maxAttemptsTimeout")
	})

	It("TMO-9: maxAttempts 3 within maxAttemptsTimeout 10u: three attempts, all in time", R("TMO-9"), func() {
		s := newScene(ScTmo9)
		s.rule(rules.Rule{Times: 2, Action: rules.Action{Delay: dur(U(2)), Status: 503}},
			rules.Rule{Times: 1, Action: rules.Action{Delay: dur(U(2))}})
		r := s.get("obj").is(http.StatusOK)
		within(r.Elapsed, U(6), "three attempts of 2u")
		reqs := s.origin(3)
		Expect(reqs[2].Arrived.Sub(reqs[0].Arrived)).To(BeNumerically("<", U(10)))
	})
})
