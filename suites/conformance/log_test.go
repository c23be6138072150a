package conformance

import (
	"fmt"
	"net/http"
	"time"

	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/suites/target"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// requireLogs skips a spec when the target exposes no logs to the suites.
func requireLogs() target.Logs {
	if env.Logs == nil {
		Skip("the target exposes no logs to the suites (the in-process reference does; an external target with " + target.EnvLogs + ")")
	}
	return env.Logs
}

// Log record messages and fields of the reference's JSON logs.
const (
	clientRecord  = "client request"
	attemptRecord = "origin attempt"
)

// clientRecords waits for n client-request records of uri (records are
// written when a request is done, which may be just after the client has
// its response) and returns them.
func clientRecords(logs target.Logs, uri string, n int) []target.Record {
	GinkgoHelper()
	var got []target.Record
	Eventually(func() int {
		got = got[:0]
		for _, r := range logs.Records(clientRecord) {
			if r["uri"] == uri {
				got = append(got, r)
			}
		}
		return len(got)
	}).WithTimeout(U(10) + 2*time.Second).WithPolling(5 * time.Millisecond).Should(BeNumerically(">=", n))
	Expect(got).To(HaveLen(n), "client request records for %s", uri)
	return got
}

// attemptRecords are the origin-attempt records of a request id.
func attemptRecords(logs target.Logs, id any) []target.Record {
	var out []target.Record
	for _, r := range logs.Records(attemptRecord) {
		if r["request_id"] == id {
			out = append(out, r)
		}
	}
	return out
}

// field is the value of the first of names a record has.
func field(r target.Record, names ...string) (any, bool) {
	for _, n := range names {
		if v, ok := r[n]; ok {
			return v, true
		}
	}
	return nil, false
}

var _ = Describe("LOG: logging", func() {
	It("LOG-1: a client request is logged once, each origin attempt separately", R("LOG-1"), func() {
		logs := requireLogs()
		s := newScene(ScAtt3)
		s.rule(rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerA}, Action: status(404)},
			rules.Rule{Unlimited: true, Match: rules.Match{Listener: ListenerB}, Action: status(503)})
		s.get("obj").is(http.StatusOK)
		s.origin(4)
		rec := clientRecords(logs, s.path("obj"), 1)[0]
		attempts := attemptRecords(logs, rec["request_id"])
		Expect(attempts).To(HaveLen(4))
		for i, a := range attempts {
			Expect(a["attempt"]).To(BeNumerically("==", i+1))
		}
		Expect(attempts[3]["origin"]).To(Equal(OriginName(string(ScAtt3), 2)))
	})

	It("LOG-1: a collapsed fill is logged once, and every client request it served", R("LOG-1", "COL-2"), func() {
		logs := requireLogs()
		s := newScene(ScCol)
		s.object(objectCacheable("obj"))
		hold := s.holdFill("obj", rules.Action{}, 1)
		leaderDone := make(chan *resp, 1)
		go func() { defer GinkgoRecover(); leaderDone <- s.get("obj") }()
		s.waitArrived(1)
		wait := s.followers(4, "obj", nil)
		s.release(hold)
		(<-leaderDone).is(http.StatusOK)
		for _, r := range wait() {
			r.is(http.StatusOK)
		}
		s.origin(1)
		recs := clientRecords(logs, s.path("obj"), 5)
		var fills int
		for _, r := range recs {
			fills += len(attemptRecords(logs, r["request_id"]))
		}
		Expect(fills).To(Equal(1), "origin attempt records linked to the 5 client requests")
	})

	It("LOG-1, TMO-6: a truncated response is logged as such", R("LOG-1", "TMO-6"), func() {
		logs := requireLogs()
		s := newScene(ScTmo5)
		s.rule(rules.Rule{Action: rules.Action{Stall: &rules.Cut{AfterBytes: ptr(int64(100))}}})
		Expect(s.get("obj").BodyErr).To(HaveOccurred())
		rec := clientRecords(logs, s.path("obj"), 1)[0]
		Expect(rec["truncated"]).To(Equal("read_timeout"))
	})

	DescribeTable("LOG-2: the client request record has the documented fields",
		func(scenario Handle, code int, names ...string) {
			logs := requireLogs()
			s := newScene(scenario)
			s.get("obj", header("Range", "bytes=0-99")).is(code)
			rec := clientRecords(logs, s.path("obj"), 1)[0]
			v, ok := field(rec, names...)
			Expect(ok).To(BeTrue(), "no %v field in %v", names, rec)
			Expect(fmt.Sprint(v)).NotTo(BeEmpty())
		},
		Entry("origin", R("LOG-2"), ScCfRefuse, 206, "origin", "originName"),
		Entry("origin IP", R("LOG-2"), ScCfRefuse, 206, "origin_ip", "originIp"),
		Entry("backend latency", R("LOG-2"), ScCfRefuse, 206, "backend_latency_ms", "backendLatency"),
		Entry("cacheStatus", R("LOG-2"), ScCfRefuse, 206, "cache_status", "cacheStatus"),
		Entry("proxyStatus (of a 502)", R("LOG-2"), ScAtt8, 502, "proxy_status", "proxyStatus"),
		Entry("range", R("LOG-2"), ScCfRefuse, 206, "range", "requestRange"),
		Entry("cacheKeyFingerprint", R("LOG-2"), ScCol, 206, "cacheKeyFingerprint", "cache_key_fingerprint"),
	)
})
