package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// collapseClients is how many clients ask for one cold object at once.
const collapseClients = 120

// The col scenario's origin has the largest connectTimeout Media CDN
// allows (15 s): a fill held at the barrier must be released before it.
// These bounds are about the machine running the clients, not the target.
const (
	clientsWritten = 8 * time.Second  // for the clients' requests to be written
	holdSafety     = 12 * time.Second // the barrier lets go by itself after this
)

// holdFill adds a rule that holds the origin's answer to obj at a barrier
// only an explicit release (or, as a safety net, holdSafety) lets go,
// then applies act.
func (s *scene) holdFill(obj string, act rules.Action, times int) string {
	name := s.holdName("fill")
	act.Hold = &rules.Hold{Name: name, Timeout: dur(holdSafety)}
	s.rule(rules.Rule{Match: rules.Match{Path: s.path(obj)}, Times: times, Action: act})
	return name
}

// followers sends n requests for obj concurrently and returns once every
// one has been written to the target (plus 1u for the target to read
// them), and a function that waits for their responses.
func (s *scene) followers(n int, obj string, opts func(i int) []reqOpt) func() []*resp {
	GinkgoHelper()
	out := make([]*resp, n)
	var written, done sync.WaitGroup
	written.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer GinkgoRecover()
			defer done.Done()
			var once sync.Once
			wrote := func() { once.Do(written.Done) }
			defer once.Do(written.Done) // a request that failed early
			o := []reqOpt{onWrote(wrote)}
			if opts != nil {
				o = append(o, opts(i)...)
			}
			out[i] = s.get(obj, o...)
		}()
	}
	ch := make(chan struct{})
	go func() { written.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(clientsWritten):
		setupFail(fmt.Sprintf("%d client requests were not all written within %v", n, clientsWritten))
	}
	// Correctness does not depend on this pause (a late follower is a
	// hit or a collapsed request either way); it lets the target read
	// the requests so that they are followers, not hits.
	time.Sleep(U(1))
	return func() []*resp { done.Wait(); return out }
}

var _ = Describe("COL: request collapsing", func() {
	It("COL-1, COL-2, COL-4, HST-5: concurrent cold requests for one key make one origin request, with the leader's headers", R("COL-1", "COL-2", "COL-4", "HST-5"), func() {
		s := newScene(ScCol)
		const size = 64 << 10
		s.object(objects.Spec{Path: "obj", Size: ptr(int64(size)), CacheControl: "public, max-age=600"})
		hold := s.holdFill("obj", rules.Action{}, 1)

		leaderUA := "edgeconform-leader-" + s.id
		var leader *resp
		leaderDone := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(leaderDone)
			leader = s.get("obj", header("User-Agent", leaderUA))
		}()
		s.waitArrived(1) // the leader's fill waits at the barrier
		wait := s.followers(collapseClients-1, "obj", func(i int) []reqOpt {
			return []reqOpt{header("User-Agent", fmt.Sprintf("edgeconform-follower-%d", i))}
		})
		Expect(s.release(hold)).To(Equal(1), "requests waiting at the origin's barrier: only the leader's fill")
		all := append(wait(), func() *resp { <-leaderDone; return leader }())

		reqs := s.origin(1)
		Expect(reqs[0].End).To(Equal(journal.EndComplete))
		ua, _ := hdr(reqs[0], "User-Agent")
		Expect(ua).To(Equal(leaderUA), "the origin sees the leader's request")
		for i, r := range all {
			r.is(http.StatusOK)
			Expect(r.BodyErr).NotTo(HaveOccurred(), "client %d", i)
			if i == 0 {
				synthetic(r.Body, s.path("obj"), size)
			} else {
				Expect(bytes.Equal(r.Body, all[0].Body)).To(BeTrue(), "client %d's body differs", i)
			}
		}
	})

	It("COL-3: requests with different cache keys are never collapsed", R("COL-3"), func() {
		s := newScene(ScCol)
		s.object(objectCacheable("one"), objectCacheable("two"))
		// Both fills must reach the origin for the barrier to open.
		s.rule(rules.Rule{Times: 2, Action: rules.Action{Hold: &rules.Hold{Name: s.holdName("both"), Count: 2, Timeout: dur(holdSafety)}}})
		var one, two *resp
		parallel(2, func(i int) {
			if i == 0 {
				one = s.get("one")
			} else {
				two = s.get("two")
			}
		})
		one.is(http.StatusOK)
		two.is(http.StatusOK)
		reqs := s.origin(2)
		Expect([]string{reqs[0].Path, reqs[1].Path}).To(ConsistOf(s.path("one"), s.path("two")))
		for _, r := range reqs {
			Expect(r.Note).To(ContainSubstring("released"), "the barrier opened because both arrived, not by its timeout")
		}
	})

	It("COL-5, COL-7: followers get the body as it streams in; a fill cut mid-body truncates them and is not cached", R("COL-5", "COL-7"), func() {
		s := newScene(ScCol)
		s.object(objectCacheable("obj"))
		hold := s.holdFill("obj", rules.Action{Stall: &rules.Cut{AfterBytes: ptr(int64(100))}}, 1)
		leaderDone := make(chan *resp, 1)
		go func() { defer GinkgoRecover(); leaderDone <- s.get("obj") }()
		s.waitArrived(1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		follower := stream(ctx, s.path("obj"))
		s.release(hold)
		hr := <-follower
		Expect(hr.err).NotTo(HaveOccurred())
		defer hr.resp.Body.Close()
		Expect(hr.resp.StatusCode).To(Equal(http.StatusOK))
		first := make([]byte, 100)
		_, err := io.ReadFull(hr.resp.Body, first)
		Expect(err).NotTo(HaveOccurred(), "the follower got the first bytes")
		// The origin is still stalling: the follower was not waiting for
		// the fill to complete.
		Expect(s.journal().Requests[0].End).To(Equal(journal.EndPending))
		_, err = io.ReadAll(hr.resp.Body)
		Expect(err).To(HaveOccurred(), "the follower's body must end truncated")
		Expect((<-leaderDone).BodyErr).To(HaveOccurred(), "the leader's body must end truncated")
		r := s.get("obj").is(http.StatusOK) // not cached: a new fill
		synthetic(r.Body, s.path("obj"), 1024)
		s.arrived(2)
	})

	It("COL-6: the fill outlives the leader: when it disconnects, followers still get the whole object", R("COL-6"), func() {
		s := newScene(ScCol)
		s.object(objectCacheable("obj"))
		hold := s.holdFill("obj", rules.Action{}, 1)
		lctx, lcancel := context.WithCancel(context.Background())
		leaderDone := make(chan *resp, 1)
		go func() { defer GinkgoRecover(); leaderDone <- s.get("obj", withCtx(lctx)) }()
		s.waitArrived(1)
		wait := s.followers(3, "obj", nil)
		lcancel()
		Expect((<-leaderDone).Err).To(HaveOccurred())
		time.Sleep(U(1)) // let the target notice; the release must come after
		s.release(hold)
		for _, r := range wait() {
			r.is(http.StatusOK)
			Expect(r.BodyErr).NotTo(HaveOccurred())
			synthetic(r.Body, s.path("obj"), 1024)
		}
		Expect(s.origin(1)[0].End).To(Equal(journal.EndComplete))
	})

	It("COL-7: a fill that fails before a usable response gives every follower the leader's error status", R("COL-7"), func() {
		s := newScene(ScCol)
		s.object(objectCacheable("obj"))
		hold := s.holdFill("obj", rules.Action{Reset: &rules.Cut{}}, 1)
		// Any further attempt at obj fails the same way.
		s.rule(rules.Rule{Match: rules.Match{Path: s.path("obj")}, Unlimited: true, Action: rules.Action{Reset: &rules.Cut{}}})
		leaderDone := make(chan *resp, 1)
		go func() { defer GinkgoRecover(); leaderDone <- s.get("obj") }()
		s.waitArrived(1)
		wait := s.followers(5, "obj", nil)
		s.release(hold)
		leader := <-leaderDone
		Expect(leader.Err).NotTo(HaveOccurred())
		Expect(leader.Status).To(Equal(http.StatusBadGateway))
		for _, r := range wait() {
			r.is(leader.Status)
		}
	})
})

type streamed struct {
	resp *http.Response
	err  error
}

// stream starts a GET of path and delivers the response once its headers
// are in; the caller reads and closes the body.
func stream(ctx context.Context, path string) <-chan streamed {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, "GET", env.URL+"/", nil)
	Expect(err).NotTo(HaveOccurred())
	req.URL.Path, req.URL.Opaque = "", path
	req.Host = env.Params.ClientHost
	wrote := make(chan struct{})
	var once sync.Once
	req = req.WithContext(httptraceWrote(ctx, func() { once.Do(func() { close(wrote) }) }))
	out := make(chan streamed, 1)
	go func() {
		hr, err := client.Do(req)
		once.Do(func() { close(wrote) })
		out <- streamed{hr, err}
	}()
	select {
	case <-wrote:
	case <-time.After(clientsWritten):
		setupFail("the follower's request was not written in time")
	}
	time.Sleep(U(1)) // as in followers: let the target read it
	return out
}
