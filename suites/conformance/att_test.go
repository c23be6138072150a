package conformance

import (
	"net/http"

	"github.com/edgeconform/edgeconform/emulators/rules"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// status is a rule action answering with code.
func status(code int) rules.Action { return rules.Action{Status: code} }

var _ = Describe("ATT: attempts, retries and failover", func() {
	// unsafe: primary a (maxAttempts 3, CONNECT_FAILURE and HTTP_5XX)
	// fails over to b.
	DescribeTable("ATT-1, ATT-2: an unsafe method that fails on the primary gets 502, with no other attempt",
		func(method string) {
			s := newScene(ScUnsafe)
			s.rule(rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerA}, Action: status(503)})
			s.do(method, "obj", body("payload")).is(http.StatusBadGateway)
			Expect(listeners(s.origin(1))).To(Equal([]string{ListenerA}))
		},
		Entry("POST", R("ATT-1", "ATT-2"), "POST"),
		Entry("PUT", R("ATT-1", "ATT-2"), "PUT"),
		Entry("PATCH", R("ATT-1", "ATT-2"), "PATCH"),
		Entry("DELETE", R("ATT-1", "ATT-2"), "DELETE"),
	)

	DescribeTable("ATT-1: GET, HEAD and OPTIONS are retried and failed over",
		func(method string) {
			s := newScene(ScUnsafe)
			s.rule(rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerA}, Action: status(503)})
			s.do(method, "obj").is(http.StatusOK)
			reqs := s.origin(4)
			Expect(listeners(reqs)).To(Equal([]string{ListenerA, ListenerA, ListenerA, ListenerB}))
			for _, r := range reqs {
				Expect(r.Method).To(Equal(method))
			}
		},
		Entry("GET", R("ATT-1", "ATT-3"), "GET"),
		Entry("HEAD", R("ATT-1", "ATT-3"), "HEAD"),
		Entry("OPTIONS", R("ATT-1", "ATT-3"), "OPTIONS"),
	)

	It("ATT-2: an unsafe method whose primary refuses the connection gets 502 without failover", R("ATT-2"), func() {
		s := newScene(ScUnsafeRefuse)
		s.do("POST", "obj", body("payload")).is(http.StatusBadGateway)
		s.origin(0) // the failover b saw nothing
		// The same route fails over for a GET.
		s.get("obj").is(http.StatusOK)
		Expect(listeners(s.origin(1))).To(Equal([]string{ListenerB}))
	})

	It("ATT-3: the primary is tried up to its maxAttempts, then each failover under its own settings", R("ATT-3"), func() {
		// att3: a (maxAttempts 2, NOT_FOUND) -> b (1, HTTP_5XX) -> c (1).
		s := newScene(ScAtt3)
		s.rule(rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerA}, Action: status(404)},
			rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerB}, Action: status(503)})
		s.get("obj").is(http.StatusOK)
		Expect(listeners(s.origin(4))).To(Equal([]string{ListenerA, ListenerA, ListenerB, ListenerC}))
	})

	It("ATT-3, ATT-5: a failover's own retry conditions decide its attempts", R("ATT-3", "ATT-5"), func() {
		// b does not retry 404 (only HTTP_5XX): its 404 ends the chain.
		s := newScene(ScAtt3)
		s.rule(rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerA}, Action: status(404)},
			rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerB}, Action: status(404)})
		s.get("obj").is(http.StatusNotFound)
		Expect(listeners(s.origin(3))).To(Equal([]string{ListenerA, ListenerA, ListenerB}))
	})

	It("ATT-3: maxAttempts defaults to 1", R("ATT-3"), func() {
		s := newScene(ScAttDefault)
		s.rule(rules.Rule{Unlimited: true, Action: status(503)})
		s.get("obj").is(http.StatusBadGateway)
		s.origin(1)
	})

	It("ATT-4: at most 4 attempts across origins, whatever maxAttempts says", R("ATT-4", "ATT-7"), func() {
		// att4: a (maxAttempts 3) -> b (maxAttempts 3), all 503.
		s := newScene(ScAtt4)
		s.rule(rules.Rule{Unlimited: true, Action: status(503)})
		s.get("obj").is(http.StatusBadGateway)
		Expect(listeners(s.origin(4))).To(Equal([]string{ListenerA, ListenerA, ListenerA, ListenerB}))
	})

	DescribeTable("ATT-5: which statuses each retry condition retries",
		func(scenario Handle, code int, retried bool) {
			s := newScene(scenario)
			s.rule(rules.Rule{Action: status(code)}) // the first attempt only
			if retried {
				s.get("obj").is(http.StatusOK)
				s.origin(2)
			} else {
				s.get("obj").is(code)
				s.origin(1)
			}
		},
		Entry("HTTP_5XX retries 500", R("ATT-5"), ScRetry5xx, 500, true),
		Entry("HTTP_5XX retries 503", R("ATT-5"), ScRetry5xx, 503, true),
		Entry("HTTP_5XX retries 505", R("ATT-5"), ScRetry5xx, 505, true),
		Entry("HTTP_5XX does not retry 404", R("ATT-5"), ScRetry5xx, 404, false),
		Entry("HTTP_5XX does not retry 429", R("ATT-5"), ScRetry5xx, 429, false),
		Entry("GATEWAY_ERROR retries 502", R("ATT-5"), ScRetryGateway, 502, true),
		Entry("GATEWAY_ERROR retries 503", R("ATT-5"), ScRetryGateway, 503, true),
		Entry("GATEWAY_ERROR retries 504", R("ATT-5"), ScRetryGateway, 504, true),
		Entry("GATEWAY_ERROR does not retry 500", R("ATT-5"), ScRetryGateway, 500, false),
		Entry("GATEWAY_ERROR does not retry 501", R("ATT-5"), ScRetryGateway, 501, false),
		Entry("RETRIABLE_4XX retries 409", R("ATT-5"), ScRetry4xx, 409, true),
		Entry("RETRIABLE_4XX retries 429", R("ATT-5"), ScRetry4xx, 429, true),
		Entry("RETRIABLE_4XX does not retry 404", R("ATT-5"), ScRetry4xx, 404, false),
		Entry("RETRIABLE_4XX does not retry 400", R("ATT-5"), ScRetry4xx, 400, false),
		Entry("NOT_FOUND retries 404", R("ATT-5"), ScRetry404, 404, true),
		Entry("NOT_FOUND does not retry 403", R("ATT-5"), ScRetry404, 403, false),
		Entry("NOT_FOUND does not retry 410", R("ATT-5"), ScRetry404, 410, false),
		Entry("FORBIDDEN retries 403", R("ATT-5"), ScRetry403, 403, true),
		Entry("FORBIDDEN does not retry 404", R("ATT-5"), ScRetry403, 404, false),
		Entry("FORBIDDEN does not retry 401", R("ATT-5"), ScRetry403, 401, false),
		Entry("CONNECT_FAILURE (the default) does not retry 503", R("ATT-5", "ATT-10"), ScPlain, 503, false),
	)

	DescribeTable("ATT-5: CONNECT_FAILURE covers connection, TLS handshake and connect-timeout errors",
		func(scenario Handle) {
			s := newScene(scenario)
			s.get("obj").is(http.StatusOK)
			Expect(listeners(s.origin(1))).To(Equal([]string{ListenerB}))
		},
		Entry("connection refused", R("ATT-5"), ScCfRefuse),
		Entry("TLS: expired certificate", R("ATT-5", "PRT-4"), ScCfExpired),
		Entry("TLS: certificate for another name", R("ATT-5", "PRT-4"), ScCfWrongname),
		Entry("TLS: untrusted certificate", R("ATT-5", "PRT-4"), ScCfUntrusted),
		Entry("the dial times out (connectTimeout)", R("ATT-5", "TMO-1"), ScCfSyndrop),
		Entry("no response headers within connectTimeout", R("ATT-5", "TMO-1"), ScCfBlackhole),
	)

	It("ATT-5: a reset before the response headers counts as a connect failure", R("ATT-5"), Reading, func() {
		// The reference's reading (README, INT): the documentation counts
		// everything up to the response headers against connectTimeout.
		s := newScene(ScCfReset)
		s.rule(rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerA}, Action: rules.Action{Reset: &rules.Cut{}}})
		s.get("obj").is(http.StatusOK)
		reqs := s.journal().Requests
		Expect(reqs).NotTo(BeEmpty())
		Expect(reqs[len(reqs)-1].Listener).To(Equal(ListenerB), "the failover answers: %s", describe(reqs))
	})

	It("ATT-3: a connection reset on a reused connection is one attempt, with no hidden retry", R("ATT-3", "ATT-4"), func() {
		// A first request leaves an idle connection to a, so the reset
		// comes on a reused connection: it must still be one attempt
		// (maxAttempts 1), failed over to b.
		s := newScene(ScCfReset)
		s.get("warm").is(http.StatusOK)
		s.origin(1)
		s.rule(rules.Rule{Match: rules.Match{Listener: ListenerA, Path: s.path("obj")}, Times: 1, Action: rules.Action{Reset: &rules.Cut{}}})
		s.get("obj").is(http.StatusOK)
		Expect(listeners(s.origin(3))).To(Equal([]string{ListenerA, ListenerA, ListenerB}), "origin requests: warm-up, the reset attempt, the failover")
	})

	It("ATT-6: a status no retry condition matches ends the chain as is", R("ATT-6", "PRT-4"), func() {
		// The documentation's example: the primary fails its TLS
		// handshake, the failover answers 404, the client sees 404.
		s := newScene(ScCfExpired)
		s.rule(rules.Rule{Match: rules.Match{Listener: ListenerB}, Action: rules.Action{Status: 404, Body: ptr("not here " + s.id)}})
		r := s.get("obj").is(http.StatusNotFound)
		Expect(string(r.Body)).To(Equal("not here " + s.id))
		s.origin(1)
	})

	It("ATT-7: when every attempt ends in a retryable status the client gets 502, not the origin's status", R("ATT-7"), func() {
		s := newScene(ScRetryGateway)
		s.rule(rules.Rule{Unlimited: true, Action: status(503)})
		s.get("obj").is(http.StatusBadGateway)
		s.origin(2)
	})

	It("ATT-8: when no attempt produces an HTTP response the client gets 502", R("ATT-8"), func() {
		// att8: refuse (maxAttempts 2) -> expired certificate.
		s := newScene(ScAtt8)
		s.get("obj").is(http.StatusBadGateway)
		s.origin(0)
	})

	It("ATT-8: a connect failure the origin does not retry ends the chain with 502", R("ATT-8"), Reading, func() {
		// cf-unlisted: refuse (retryConditions HTTP_5XX only) -> b. The
		// reference's reading (README): no failover without
		// CONNECT_FAILURE; a target that fails over is an observation.
		s := newScene(ScCfUnlisted)
		s.get("obj").is(http.StatusBadGateway)
		s.origin(0)
	})

	It("ATT-9: when maxAttemptsTimeout passes before a usable response the client gets 504", R("ATT-9", "TMO-2"), func() {
		// att9: blackhole, connectTimeout 3u, maxAttemptsTimeout 5u,
		// maxAttempts 3: the second attempt is cut at 5u.
		s := newScene(ScAtt9)
		r := s.get("obj").is(http.StatusGatewayTimeout)
		within(r.Elapsed, U(5), "504")
	})

	It("ATT-10: an error status no retry condition covers is passed through with the origin's body", R("ATT-10"), func() {
		s := newScene(ScPlain)
		s.rule(rules.Rule{Action: rules.Action{Status: 500, Body: ptr("origin says " + s.id), Headers: map[string]string{"X-From-Origin": "yes"}}})
		r := s.get("obj").is(http.StatusInternalServerError)
		Expect(string(r.Body)).To(Equal("origin says " + s.id))
		Expect(r.Header.Get("X-From-Origin")).To(Equal("yes"))
		s.origin(1)
	})

	It("ATT-11: retries happen at once, without backoff", R("ATT-11"), func() {
		s := newScene(ScRetryGateway)
		s.rule(rules.Rule{Action: status(503)})
		s.get("obj").is(http.StatusOK)
		reqs := s.origin(2)
		gap := reqs[1].Arrived.Sub(reqs[0].Ended)
		Expect(gap).To(BeNumerically("<", slack()), "gap between the end of the first attempt and the second")
	})
})

func ptr[T any](v T) *T { return &v }
