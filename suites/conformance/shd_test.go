package conformance

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/suites/target"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// requireEdges skips a spec when the target has no edge nodes in front of
// a shield to send clients to.
func requireEdges() []string {
	if len(env.Edges) < 2 {
		Skip("SHD needs two or more edge nodes whose fills go through one shield: set " + target.EnvEdges + "=URL1,URL2,...")
	}
	return env.Edges
}

// shieldClientsPerEdge is how many clients ask each edge at once.
const shieldClientsPerEdge = 4

var _ = Describe("SHD: origin shielding", func() {
	DescribeTable("SHD-1: concurrent cold requests spread over the edges make one origin fill per key (per chunk)",
		func(size int64) {
			edges := requireEdges()
			s := newScene(ScShd)
			s.object(objects.Spec{Path: "obj", Size: ptr(size), CacheControl: "public, max-age=600"})
			// The first origin request (the shield's fill, or its first
			// chunk) waits at the barrier until every client's request
			// has reached its edge.
			hold := s.holdFill("obj", rules.Action{}, 1)
			n := shieldClientsPerEdge * len(edges)
			wait := s.followers(n, "obj", func(i int) []reqOpt { return []reqOpt{at(edges[i%len(edges)])} })
			s.releaseWaiting(hold, 1)
			all := wait()
			for i, r := range all {
				r.is(http.StatusOK)
				Expect(r.BodyErr).NotTo(HaveOccurred(), "client %d", i)
				Expect(bytes.Equal(r.Body, all[0].Body)).To(BeTrue(), "client %d's body differs", i)
			}
			synthetic(all[0].Body, s.path("obj"), size)
			reqs := s.origin(s.fillCount())
			// However the target splits the object, no byte may be asked
			// of the origin twice.
			type span struct{ first, last int64 }
			var spans []span
			for _, r := range reqs {
				first, last := int64(0), size-1
				if r.Range != "" {
					var ok bool
					first, last, ok = parseRange(r.Range)
					Expect(ok).To(BeTrue(), "origin Range %q", r.Range)
				}
				spans = append(spans, span{first, last})
			}
			sort.Slice(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
			for i := 1; i < len(spans); i++ {
				Expect(spans[i].first).To(BeNumerically(">", spans[i-1].last),
					"two origin fills overlap: the tiers did not collapse (%s, ranges %q)", describe(reqs), ranges(reqs))
			}
			if size <= maxFill {
				Expect(reqs).To(HaveLen(1), "one origin fill for the key")
			}
		},
		Entry("a small object", R("SHD-1", "COL-1"), int64(200<<10)),
		Entry("a 5 MiB object", R("SHD-1", "COL-1", "RNG-2"), int64(largeSize)),
	)

	It("SHD-2: a flexShielding region maps the origin to its named shield node", R("SHD-2"), func() {
		if !env.Reference {
			Skip("checks the in-process reference's node names")
		}
		edges := requireEdges()
		for _, tc := range []struct {
			scenario Handle
			shield   string
		}{
			{ScShdRegion, target.RefRegionShieldName},
			{ScShd, target.RefShieldName},
		} {
			s := newScene(tc.scenario)
			s.object(objectCacheable("obj"))
			r := s.get("obj", at(edges[0])).is(http.StatusOK)
			cs := strings.Join(r.Header.Values("Cache-Status"), ", ")
			Expect(cs).To(Equal(fmt.Sprintf("%s; fwd=miss, %s; fwd=miss", tc.shield, target.RefEdgeName(0))), "%s: Cache-Status", tc.scenario)
			s.origin(1)
		}
	})
})
