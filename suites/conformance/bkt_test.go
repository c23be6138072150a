package conformance

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/synth"
	. "github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Objects in the bucket services are put through the services' own APIs
// (S3 PutObject signed with the test key, Cloud Storage's XML API with the
// test token), at the listener's port on the control API's host.

// bucketURL is the base URL of a bucket service listener as the suites
// reach it.
func bucketURL(listener string) string {
	GinkgoHelper()
	u, err := url.Parse(env.ControlURL)
	setupOK(err, "parsing the control URL")
	return "http://" + net.JoinHostPort(u.Hostname(), strconv.Itoa(env.Params.Ports[listener]))
}

// bucketCall sends one request to a bucket service and returns its
// status; sign prepares it.
func bucketCall(method, u string, body []byte, h http.Header, sign func(*http.Request)) (int, string) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(string(body)))
	setupOK(err, "a bucket request")
	for k, v := range h {
		req.Header[k] = v
	}
	req.ContentLength = int64(len(body))
	sign(req)
	hr, err := http.DefaultClient.Do(req)
	setupOK(err, "%s %s", method, u)
	defer hr.Body.Close()
	b, _ := io.ReadAll(hr.Body)
	return hr.StatusCode, string(b)
}

// signS3 signs a request with the test key (SigV4, UNSIGNED-PAYLOAD).
func signS3(req *http.Request) {
	GinkgoHelper()
	b := env.Params.S3
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	err := v4.NewSigner().SignHTTP(req.Context(), aws.Credentials{AccessKeyID: b.AccessKeyID, SecretAccessKey: b.Secret},
		req, "UNSIGNED-PAYLOAD", "s3", b.Region, time.Now())
	setupOK(err, "signing an S3 request")
}

func bearer(req *http.Request) { req.Header.Set("Authorization", "Bearer "+env.Params.GCSToken) }

// bucketObject is an object put into a bucket at the namespace's path.
type bucketObject struct {
	Name, CacheControl, ContentType string
	Body                            []byte
}

// putS3 puts objects into the S3 bucket at the namespace's paths (path
// style), and removes them when the spec ends.
func (s *scene) putS3(objs ...bucketObject) {
	GinkgoHelper()
	s.putBucket(ListenerS3, env.Params.S3.Bucket, signS3, objs)
}

// putGCS does the same in the Cloud Storage bucket.
func (s *scene) putGCS(objs ...bucketObject) {
	GinkgoHelper()
	s.putBucket(ListenerGCS, env.Params.GCSBucket, bearer, objs)
}

func (s *scene) putBucket(listener, bucket string, sign func(*http.Request), objs []bucketObject) {
	GinkgoHelper()
	for _, o := range objs {
		u := bucketURL(listener) + "/" + bucket + s.path(o.Name)
		h := http.Header{}
		if o.CacheControl != "" {
			h.Set("Cache-Control", o.CacheControl)
		}
		if o.ContentType != "" {
			h.Set("Content-Type", o.ContentType)
		}
		code, msg := bucketCall("PUT", u, o.Body, h, sign)
		if code != http.StatusOK {
			setupFail("putting " + u + ": " + strconv.Itoa(code) + " " + excerpt([]byte(msg)))
		}
		DeferCleanup(func() {
			code, msg := bucketCall("DELETE", u, nil, nil, sign)
			if code >= 300 && code != http.StatusNotFound {
				GinkgoWriter.Printf("deleting %s: %d %s\n", u, code, msg)
			}
		})
	}
}

// sigV4 is the parsed Authorization of a SigV4-signed origin request.
type sigV4 struct {
	Algorithm, Credential, SignedHeaders string
}

func parseSigV4(r journal.Request) (sigV4, bool) {
	v, ok := hdr(r, "Authorization")
	if !ok {
		return sigV4{}, false
	}
	alg, rest, _ := strings.Cut(v, " ")
	out := sigV4{Algorithm: alg}
	for _, part := range strings.Split(rest, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			out.Credential = val
		case "SignedHeaders":
			out.SignedHeaders = val
		}
	}
	return out, true
}

// signedOK asserts that the bucket service accepted the origin request's
// SigV4 signature, made with the topology's key for its region and s3.
func signedOK(r journal.Request) sigV4 {
	GinkgoHelper()
	sig, ok := parseSigV4(r)
	Expect(ok).To(BeTrue(), "%s %s reached the bucket without Authorization", r.Method, r.URI)
	Expect(sig.Algorithm).To(Equal("AWS4-HMAC-SHA256"), "SigV4 (not SigV4a)")
	b := env.Params.S3
	parts := strings.Split(sig.Credential, "/")
	Expect(parts).To(HaveLen(5), "Credential %q", sig.Credential)
	Expect([]string{parts[0], parts[2], parts[3], parts[4]}).To(Equal([]string{b.AccessKeyID, b.Region, "s3", "aws4_request"}), "Credential %q", sig.Credential)
	Expect(r.Note).To(ContainSubstring("sigv4: ok"), "the bucket's verdict on %s %s (status %d)", r.Method, r.URI, r.Status)
	return sig
}

func hostOnly(h string) string {
	if hh, _, err := net.SplitHostPort(h); err == nil {
		return hh
	}
	return h
}

var _ = Describe("BKT: bucket origins", func() {
	It("BKT-1, BKT-3: an awsV4Authentication origin signs with SigV4 for s3, on the bucket's virtual host", R("BKT-1", "BKT-3"), func() {
		s := newScene(ScBktS3)
		s.putS3(bucketObject{Name: "obj", Body: []byte("edgeconform s3 object"), ContentType: "text/plain"})
		r := s.get("obj").is(http.StatusOK)
		Expect(string(r.Body)).To(Equal("edgeconform s3 object"))
		s.do("HEAD", "obj").is(http.StatusOK)
		reqs := s.origin(2)
		for _, q := range reqs {
			signedOK(q)
			Expect(hostOnly(q.Host)).To(Equal(env.Params.S3.VirtualHost()), "the virtual-hosted bucket host")
		}
	})

	It("BKT-1: every fill of a large object is signed, and it is cached", R("BKT-1", "RNG-2"), func() {
		s := newScene(ScBktS3)
		const size = 3 << 20
		obj := synth.Object{Path: s.path("big"), Size: size, Version: "1"}
		s.putS3(bucketObject{Name: "big", Body: obj.Bytes(), CacheControl: "public, max-age=600", ContentType: "video/mp2t"})
		synthetic(s.get("big").is(http.StatusOK).Body, s.path("big"), size)
		n := s.fillCount()
		Expect(n).To(BeNumerically(">=", 2), "a 3 MiB object takes two fills of at most 2 MiB")
		for _, q := range s.origin(n) {
			signedOK(q)
		}
		synthetic(s.get("big").is(http.StatusOK).Body, s.path("big"), size)
		s.origin(n)
	})

	It("BKT-1: OPTIONS is signed too", R("BKT-1"), func() {
		s := newScene(ScBktS3)
		s.putS3(bucketObject{Name: "obj", Body: []byte("x")})
		r := s.do("OPTIONS", "obj")
		Expect(r.Err).NotTo(HaveOccurred())
		signedOK(s.origin(1)[0])
	})

	// Not an empty pass: the same route signs a GET first (a target that
	// signs nothing fails here), then the unsafe method goes unsigned.
	DescribeTable("BKT-1: only GET, HEAD and OPTIONS are signed",
		func(method string) {
			s := newScene(ScBktS3)
			s.putS3(bucketObject{Name: "obj", Body: []byte("edgeconform")})
			s.get("obj").is(http.StatusOK)
			signedOK(s.origin(1)[0])
			r := s.do(method, "obj", body("payload"))
			Expect(r.Err).NotTo(HaveOccurred())
			for _, q := range s.journal().Requests {
				if q.Method != method {
					continue
				}
				_, signed := parseSigV4(q)
				Expect(signed).To(BeFalse(), "%s reached the origin signed", method)
			}
		},
		Entry("POST", R("BKT-1"), "POST"),
		Entry("PUT", R("BKT-1"), "PUT"),
		Entry("DELETE", R("BKT-1"), "DELETE"),
	)

	It("BKT-1: another method gets 502 without an origin request", R("BKT-1"), Reading, func() {
		s := newScene(ScBktS3)
		s.do("POST", "obj", body("payload")).is(http.StatusBadGateway)
		s.origin(0)
	})

	It("BKT-2: the signature covers host, x-amz-content-sha256 (UNSIGNED-PAYLOAD) and x-amz-date, computed on the Host sent after a route rewrite", R("BKT-2"), func() {
		s := newScene(ScBktS3Route)
		s.putS3(bucketObject{Name: "obj", Body: []byte("edgeconform")})
		// The client's own credentials and amz headers must not reach a
		// signed origin or change its signature.
		s.get("obj", header("Authorization", "Bearer client"), header("X-Amz-Date", "20000101T000000Z"), header("User-Agent", "edgeconform-bkt2")).is(http.StatusOK)
		q := s.origin(1)[0]
		sig := signedOK(q)
		Expect(sig.SignedHeaders).To(Equal("host;x-amz-content-sha256;x-amz-date"))
		v, _ := hdr(q, "X-Amz-Content-Sha256")
		Expect(v).To(Equal("UNSIGNED-PAYLOAD"))
		Expect(hostOnly(q.Host)).To(Equal(env.Params.S3.VirtualHost()), "the route's hostRewrite")
	})

	DescribeTable("BKT-3: without a hostRewrite to the bucket's host, the bucket service's refusal reaches the client",
		func(scenario Handle) {
			s := newScene(scenario)
			s.putS3(bucketObject{Name: "obj", Body: []byte("edgeconform")})
			r := s.get("obj")
			Expect(r.Err).NotTo(HaveOccurred())
			q := s.origin(1)[0]
			// Not an empty pass: the request was signed, so the refusal is
			// the bucket's answer to the Host, not to a missing signature.
			_, signed := parseSigV4(q)
			Expect(signed).To(BeTrue(), "%s reached the bucket unsigned: its refusal says nothing about the Host", q.URI)
			Expect(q.Status).To(BeNumerically(">=", 400), "the bucket service served %s on Host %s", q.URI, q.Host)
			Expect(q.Status).To(BeNumerically("<", 500))
			Expect(r.Status).To(Equal(q.Status), "the bucket's status, passed to the client")
			Expect(string(r.Body)).To(ContainSubstring("<Code>"), "the bucket's error body")
		},
		Entry("the client's Host", R("BKT-3"), ScBktS3Nohost),
		Entry("another bucket's host", R("BKT-3"), ScBktS3Other),
	)

	It("BKT-4, HST-4: a gs:// origin reaches the bucket with the Host from the bucket name and the service's token", R("BKT-4", "HST-4"), func() {
		s := newScene(ScBktGcs)
		s.putGCS(bucketObject{Name: "obj", Body: []byte("edgeconform gcs object")})
		r := s.get("obj").is(http.StatusOK)
		Expect(string(r.Body)).To(Equal("edgeconform gcs object"))
		q := s.origin(1)[0]
		Expect(strings.HasPrefix(q.Host, env.Params.GCSBucket+".") || strings.HasPrefix(q.Path, "/"+env.Params.GCSBucket+"/")).To(BeTrue(),
			"the bucket is named by the Host %q (or, path style, the path %q)", q.Host, q.Path)
		Expect(q.Note).To(ContainSubstring("gcs: token ok"), "the private bucket was read with the service's token")
	})

	DescribeTable("BKT-5: Cloud Storage's Cache-Control decides, unless the route uses FORCE_CACHE_ALL",
		func(scenario Handle, cacheControl string, stored bool) {
			s := newScene(scenario)
			s.putGCS(bucketObject{Name: "obj", Body: []byte("edgeconform"), CacheControl: cacheControl, ContentType: "image/png"})
			r := s.get("obj").is(http.StatusOK)
			Expect(r.Header.Get("Cache-Control")).NotTo(BeEmpty(), "Cloud Storage always sends Cache-Control")
			s.origin(1)
			settle()
			s.get("obj").is(http.StatusOK)
			if stored {
				s.origin(1)
			} else {
				s.origin(2)
			}
		},
		Entry("a private bucket's default (private, max-age=0) is not stored", R("BKT-5"), ScBktGcs, "", false),
		Entry("an object's public, max-age=600 is stored", R("BKT-5"), ScBktGcs, "public, max-age=600", true),
		Entry("FORCE_CACHE_ALL stores the private default", R("BKT-5", "CCH-2"), ScBktGcsForce, "", true),
	)
})
