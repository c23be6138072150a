package conformance

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Large objects (RNG): the documentation's thresholds.
const (
	largeThreshold = 1 << 20 // over this, RNG-1's requirements apply
	maxFill        = 2 << 20 // the largest origin range request (RNG-2)
	largeSize      = 5<<20 + 12345
)

// largeObject is a cacheable synthetic object of size bytes.
func largeObject(path string, size int64, version string) objects.Spec {
	return objects.Spec{Path: path, Size: ptr(size), Version: version, CacheControl: "public, max-age=600"}
}

func synthObj(path string, size int64, version string) synth.Object {
	return synth.Object{Path: path, Size: size, Version: version}
}

// parseRange parses a single "bytes=first-last" origin Range.
func parseRange(v string) (first, last int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	a, b, dash := strings.Cut(spec, "-")
	if !found || !dash || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	f, err1 := strconv.ParseInt(a, 10, 64)
	l, err2 := strconv.ParseInt(b, 10, 64)
	return f, l, err1 == nil && err2 == nil && l >= f
}

// chunkFills asserts that every origin request is a range request of at
// most 2 MiB answered with 206, and returns the byte ranges covered.
func chunkFills(reqs []journal.Request) [][2]int64 {
	GinkgoHelper()
	var out [][2]int64
	for _, r := range reqs {
		first, last, ok := parseRange(r.Range)
		Expect(ok).To(BeTrue(), "origin request %s has Range %q: want a single bytes=first-last range", r.URI, r.Range)
		Expect(last-first+1).To(BeNumerically("<=", maxFill), "origin Range %q asks for more than 2 MiB", r.Range)
		Expect(r.Status).To(Equal(http.StatusPartialContent), "the origin's answer to Range %q", r.Range)
		out = append(out, [2]int64{first, last})
	}
	return out
}

// covers reports whether the ranges cover [first, last].
func covers(rs [][2]int64, first, last int64) bool {
	for b := first; b <= last; {
		next := b
		for _, r := range rs {
			if r[0] <= b && r[1] >= b && r[1]+1 > next {
				next = r[1] + 1
			}
		}
		if next == b {
			return false
		}
		b = next
	}
	return true
}

// fillCount is how many origin requests the namespace has so far, once
// the target had time to end its fills.
func (s *scene) fillCount() int {
	GinkgoHelper()
	settle()
	return len(s.journal().Requests)
}

// consistent asserts that body, from offset 0, is a prefix of one version
// of the object: never a mix of two.
func consistent(body []byte, versions ...synth.Object) {
	GinkgoHelper()
	for _, v := range versions {
		if synth.Verify(v, 0, body) == nil {
			return
		}
	}
	Fail(fmt.Sprintf("the %d bytes received are no single version of the object (a mix of versions, or wrong bytes)", len(body)))
}

var _ = Describe("RNG: large objects and ranges", func() {
	DescribeTable("RNG-1: an object over 1 MiB is stored only with a validator, Date, Content-Length and Content-Range",
		func(size int64, omit, corrupt []string, stored bool) {
			s := newScene(ScRng)
			s.object(largeObject("obj", size, "1"))
			obj := synthObj(s.path("obj"), size, "1")
			if len(omit) > 0 || len(corrupt) > 0 {
				s.rule(rules.Rule{Match: rules.Match{Path: s.path("obj")}, Unlimited: true, Action: rules.Action{Omit: omit, Corrupt: corrupt}})
			}
			var counts []int
			for range 2 {
				r := s.get("obj")
				Expect(r.Err).NotTo(HaveOccurred())
				if r.Status == http.StatusOK {
					consistent(r.Body, obj) // served or not, never wrong bytes
				}
				if stored {
					r.is(http.StatusOK)
					synthetic(r.Body, s.path("obj"), size)
				}
				counts = append(counts, s.fillCount())
			}
			Expect(counts[0]).To(BeNumerically(">", 0))
			if stored {
				Expect(counts[1]).To(Equal(counts[0]), "the second GET reached the origin: not stored")
			} else {
				Expect(counts[1]).To(BeNumerically(">", counts[0]), "the second GET was answered from the cache")
			}
		},
		Entry("with every header: stored", R("RNG-1"), int64(3<<20), nil, nil, true),
		Entry("without ETag and Last-Modified: not stored", R("RNG-1"), int64(3<<20), []string{"ETag", "Last-Modified"}, nil, false),
		Entry("without Date: not stored", R("RNG-1"), int64(3<<20), []string{"Date"}, nil, false),
		Entry("with an invalid Date: not stored", R("RNG-1"), int64(3<<20), nil, []string{"Date"}, false),
		Entry("without Content-Length: not stored", R("RNG-1"), int64(3<<20), []string{"Content-Length"}, nil, false),
		Entry("with an invalid Content-Range: not stored", R("RNG-1"), int64(3<<20), nil, []string{"Content-Range"}, false),
		Entry("1 MiB or less needs no validator: stored", R("RNG-1"), int64(largeThreshold), []string{"ETag", "Last-Modified"}, nil, true),
	)

	It("RNG-2: an object over 1 MiB is filled with range requests of at most 2 MiB, then served from the cache", R("RNG-2", "RNG-1"), func() {
		s := newScene(ScRng)
		s.object(largeObject("obj", largeSize, "1"))
		r := s.get("obj").is(http.StatusOK)
		synthetic(r.Body, s.path("obj"), largeSize)
		n := s.fillCount()
		reqs := s.origin(n)
		Expect(covers(chunkFills(reqs), 0, largeSize-1)).To(BeTrue(), "the origin ranges do not cover the object: %s", ranges(reqs))
		r = s.get("obj").is(http.StatusOK)
		synthetic(r.Body, s.path("obj"), largeSize)
		s.origin(n)
	})

	It("RNG-2: the fills are the object's 2 MiB chunks, in order", R("RNG-2"), Reading, func() {
		s := newScene(ScRng)
		s.object(largeObject("obj", largeSize, "1"))
		s.get("obj").is(http.StatusOK)
		reqs := s.origin(3)
		Expect(ranges(reqs)).To(Equal([]string{"bytes=0-2097151", "bytes=2097152-4194303", fmt.Sprintf("bytes=4194304-%d", largeSize-1)}))
	})

	It("RNG-2: even a small object is filled with one 2 MiB range request", R("RNG-2"), Reading, func() {
		s := newScene(ScRng)
		s.object(objectCacheable("obj"))
		synthetic(s.get("obj").is(http.StatusOK).Body, s.path("obj"), 1024)
		Expect(ranges(s.origin(1))).To(Equal([]string{"bytes=0-2097151"}))
	})

	It("RNG-2: a large object from an origin without range support is not stored", R("RNG-2"), func() {
		s := newScene(ScRng)
		const size = 3 << 20
		o := largeObject("obj", size, "1")
		o.NoRanges = true
		s.object(o)
		var counts []int
		for range 2 {
			r := s.get("obj")
			Expect(r.Err).NotTo(HaveOccurred())
			if r.Status == http.StatusOK {
				consistent(r.Body, synthObj(s.path("obj"), size, "1"))
			}
			counts = append(counts, s.fillCount())
		}
		Expect(counts[1]).To(BeNumerically(">", counts[0]), "the second GET was answered from the cache")
	})

	It("RNG-2: such an object is proxied whole to the client", R("RNG-2"), Reading, func() {
		s := newScene(ScRng)
		const size = 3 << 20
		o := largeObject("obj", size, "1")
		o.NoRanges = true
		s.object(o)
		synthetic(s.get("obj").is(http.StatusOK).Body, s.path("obj"), size)
	})

	It("RNG-3: client ranges are answered from the cached chunks", R("RNG-3"), func() {
		s := newScene(ScRng)
		s.object(largeObject("obj", largeSize, "1"))
		obj := synthObj(s.path("obj"), largeSize, "1")
		warm(func() *resp { return s.get("obj") }, s)
		n := len(s.journal().Requests)
		etag := s.get("obj").is(http.StatusOK).Header.Get("ETag")
		for _, tc := range []struct {
			name        string
			opts        []reqOpt
			status      int
			first, last int64
		}{
			{"single", []reqOpt{header("Range", "bytes=3000000-3000099")}, 206, 3000000, 3000099},
			{"across chunks", []reqOpt{header("Range", "bytes=2097000-2098000")}, 206, 2097000, 2098000},
			{"suffix", []reqOpt{header("Range", "bytes=-100")}, 206, largeSize - 100, largeSize - 1},
			{"open-ended", []reqOpt{header("Range", "bytes=4194000-")}, 206, 4194000, largeSize - 1},
			{"If-Range matching", []reqOpt{header("Range", "bytes=10-19"), header("If-Range", etag)}, 206, 10, 19},
			{"If-Range not matching", []reqOpt{header("Range", "bytes=10-19"), header("If-Range", `"edgeconform-other"`)}, 200, 0, largeSize - 1},
			{"past the end", []reqOpt{header("Range", fmt.Sprintf("bytes=%d-", largeSize))}, 416, 0, -1},
		} {
			r := s.get("obj", tc.opts...)
			Expect(r.Err).NotTo(HaveOccurred(), tc.name)
			Expect(r.Status).To(Equal(tc.status), tc.name)
			switch tc.status {
			case 206:
				Expect(r.Header.Get("Content-Range")).To(Equal(fmt.Sprintf("bytes %d-%d/%d", tc.first, tc.last, largeSize)), tc.name)
				fallthrough
			case 200:
				Expect(r.Body).To(HaveLen(int(tc.last-tc.first+1)), tc.name)
				Expect(synth.Verify(obj, tc.first, r.Body)).To(Succeed(), tc.name)
			case 416:
				Expect(r.Header.Get("Content-Range")).To(Equal(fmt.Sprintf("bytes */%d", largeSize)), tc.name)
			}
		}
		r := s.get("obj", header("Range", "bytes=0-9,5000000-5000009")).is(http.StatusPartialContent)
		multipartParts(r, obj, 0, 5000000)
		s.origin(n) // all from the cache
	})

	It("RNG-3: on a cold cache, a client range is filled with chunk range requests and answered with 206", R("RNG-3", "RNG-2"), func() {
		s := newScene(ScRng)
		s.object(largeObject("obj", largeSize, "1"))
		obj := synthObj(s.path("obj"), largeSize, "1")
		r := s.get("obj", header("Range", "bytes=3000000-3000099")).is(http.StatusPartialContent)
		Expect(r.Header.Get("Content-Range")).To(Equal(fmt.Sprintf("bytes 3000000-3000099/%d", largeSize)))
		Expect(synth.Verify(obj, 3000000, r.Body)).To(Succeed())
		Expect(r.Body).To(HaveLen(100))
		n := s.fillCount()
		Expect(covers(chunkFills(s.origin(n)), 3000000, 3000099)).To(BeTrue())
		s.get("obj", header("Range", "bytes=3000000-3000099")).is(http.StatusPartialContent)
		s.origin(n)
	})

	It("RNG-3: a multipart range becomes single-range fills and one multipart/byteranges answer", R("RNG-3"), func() {
		s := newScene(ScRng)
		s.object(largeObject("obj", largeSize, "1"))
		obj := synthObj(s.path("obj"), largeSize, "1")
		r := s.get("obj", header("Range", "bytes=0-9,5000000-5000009")).is(http.StatusPartialContent)
		multipartParts(r, obj, 0, 5000000)
		reqs := s.origin(s.fillCount())
		Expect(covers(chunkFills(reqs), 0, 9)).To(BeTrue())
		Expect(covers(chunkFills(reqs), 5000000, 5000009)).To(BeTrue())
	})

	DescribeTable("RNG-4: an open-ended range stays open until the origin ends it or readTimeout passes",
		func(stall bool) {
			// rng4: readTimeout 3u, responseTimeout 30u; the route
			// passes ranges through.
			s := newScene(ScRng4)
			const size, from = 512 << 10, 1000
			s.object(objects.Spec{Path: "obj", Size: ptr(int64(size))})
			obj := synthObj(s.path("obj"), size, "1")
			if stall {
				s.rule(rules.Rule{Action: rules.Action{Stall: &rules.Cut{AfterBytes: ptr(int64(64 << 10))}}})
			} else {
				s.rule(rules.Rule{Action: rules.Action{Drip: &rules.Drip{Bytes: 128 << 10, Every: dur(U(1))}}})
			}
			r := s.get("obj", header("Range", fmt.Sprintf("bytes=%d-", from))).is(http.StatusPartialContent)
			Expect(synth.Verify(obj, from, r.Body)).To(Succeed(), "the bytes received")
			if stall {
				Expect(r.BodyErr).To(HaveOccurred(), "the response must end truncated, not complete-looking")
				Expect(len(r.Body)).To(BeNumerically("<", size-from))
				within(r.Elapsed, U(3), "cut at readTimeout")
			} else {
				Expect(r.BodyErr).NotTo(HaveOccurred())
				Expect(r.Body).To(HaveLen(size - from))
				Expect(r.Elapsed).To(BeNumerically(">=", U(3)-U(0.5)), "the body took its time: it was not cut short")
			}
		},
		Entry("the origin stalls: cut at readTimeout", R("RNG-4", "TMO-5"), true),
		Entry("the origin sends slowly to the end: complete", R("RNG-4"), false),
	)

	It("RNG-5: a validator change between chunk fills refetches: the range comes from the new version", R("RNG-5"), func() {
		s := newScene(ScRng)
		s.object(largeObject("obj", largeSize, "1"))
		v2 := synthObj(s.path("obj"), largeSize, "2")
		s.get("obj", header("Range", "bytes=0-99")).is(http.StatusPartialContent)
		s.fillCount()
		s.object(largeObject("obj", largeSize, "2"))
		r := s.get("obj", header("Range", "bytes=3000000-3000099")).is(http.StatusPartialContent)
		Expect(r.Header.Get("ETag")).To(Equal(v2.ETag()))
		Expect(synth.Verify(v2, 3000000, r.Body)).To(Succeed(), "the range must be version 2's")
	})

	It("RNG-5: a whole GET across a version change is never a mix: new version or truncated", R("RNG-5"), func() {
		s := newScene(ScRng)
		s.object(largeObject("obj", largeSize, "1"))
		v1, v2 := synthObj(s.path("obj"), largeSize, "1"), synthObj(s.path("obj"), largeSize, "2")
		s.get("obj", header("Range", "bytes=0-99")).is(http.StatusPartialContent)
		s.fillCount()
		s.object(largeObject("obj", largeSize, "2"))
		r := s.get("obj")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.Status).To(Equal(http.StatusOK))
		if r.BodyErr == nil {
			Expect(r.Body).To(HaveLen(largeSize))
		}
		consistent(r.Body, v1, v2)
		s.fillCount()
		r = s.get("obj").is(http.StatusOK)
		Expect(r.Body).To(HaveLen(largeSize))
		Expect(synth.Verify(v2, 0, r.Body)).To(Succeed(), "after the change, the new version whole")
	})
})

// ranges are the Range headers of origin requests.
func ranges(reqs []journal.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Range
	}
	return out
}

// multipartParts asserts a multipart/byteranges body with 10-byte parts
// at the given offsets.
func multipartParts(r *resp, obj synth.Object, firsts ...int64) {
	GinkgoHelper()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	Expect(err).NotTo(HaveOccurred())
	Expect(mt).To(Equal("multipart/byteranges"))
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	for _, first := range firsts {
		part, err := mr.NextPart()
		Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(part)
		Expect(err).NotTo(HaveOccurred())
		Expect(part.Header.Get("Content-Range")).To(Equal(fmt.Sprintf("bytes %d-%d/%d", first, first+9, obj.Size)))
		Expect(data).To(HaveLen(10))
		Expect(synth.Verify(obj, first, data)).To(Succeed())
	}
	_, err = mr.NextPart()
	Expect(err).To(MatchError(io.EOF), "more parts than asked for")
}
