package conformance

// The vocabulary specs are written in: R labels a spec, a scene is one
// spec's namespace on a scenario's route, and its methods script the
// origin (control API), send client requests (the target's URL only) and
// read the evidence (the emulator journal).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/edgeconform/edgeconform/emulators/emuclient"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// R labels a spec with rule IDs, their areas and their levels:
// It("...", R("ATT-4"), func() {...}).
func R(ids ...string) Labels {
	var ls []string
	add := func(s string) {
		for _, l := range ls {
			if l == s {
				return
			}
		}
		ls = append(ls, s)
	}
	for _, id := range ids {
		r, ok := catalog.Lookup(id)
		if !ok {
			panic("R: unknown rule " + id)
		}
		add(r.ID)
		add(r.Area)
		add(string(r.Level))
	}
	return Label(ls...)
}

// U is n units of the timing profile.
func U(n float64) time.Duration { return env.Params.Profile.U(n) }

// slack is the margin an expected duration may be exceeded by: scheduling
// on a loaded machine, never a reason to wait longer.
func slack() time.Duration { return U(2) + 250*time.Millisecond }

// rtt is the slowest of a few round trips through the target that reach
// no origin (measured in BeforeSuite): the spread a timing has beyond its
// timers on this machine and this target.
var rtt time.Duration

// timingSlack is how far past want a measured duration may be: the
// measured round-trip spread three times over, 5% of want for timer and
// scheduling drift on a loaded machine, and 150 ms — never a blanket
// number of units (a 5 s deadline met at 6 s is a failure, not noise).
func timingSlack(want time.Duration) time.Duration {
	return 3*rtt + want/20 + 150*time.Millisecond
}

// measureRTT sets rtt from round trips that reach no origin (a path no
// route matches: 404 at the target).
func measureRTT() {
	for range 8 {
		r := send("GET", "/edgeconform-no-route/rtt")
		if r.Err == nil && r.Elapsed > rtt {
			rtt = r.Elapsed
		}
	}
}

// within asserts that d is at least want (less a millisecond of timer
// granularity) and at most want plus timingSlack(want); the message says
// by how much it was off.
func within(d, want time.Duration, what string) {
	GinkgoHelper()
	Expect(d).To(BeNumerically(">=", want-time.Millisecond), "%s: took %v, want at least %v (%v short)", what, d, want, want-d)
	sl := timingSlack(want)
	Expect(d).To(BeNumerically("<=", want+sl), "%s: took %v, want at most %v + %v slack (%v over the bound; slack from a measured round trip of %v)",
		what, d, want, sl, d-want-sl, rtt)
}

// requestTimeout bounds one client request.
func requestTimeout() time.Duration { return U(60) + 10*time.Second }

// scene is one spec's namespace on a scenario's route:
// /c/<scenario>/<run>/<spec>-<random>/.
type scene struct {
	scenario topology.Scenario
	id       string
	ns       string
	start    time.Time
}

// newScene makes a namespace under the scenario's route prefix; the spec
// is skipped when the target's topology lacks the scenario.
func newScene(scenario topology.Handle) *scene {
	GinkgoHelper()
	sc, ok := scenario.Scenario()
	Expect(ok).To(BeTrue(), "no scenario %q in the topology", scenario)
	if ok, why := env.Params.Available(sc); !ok {
		Skip("scenario " + string(scenario) + " not available: " + why)
	}
	spec := "spec"
	for _, l := range CurrentSpecReport().Labels() {
		if catalog.IsRuleID(l) {
			spec = strings.ToLower(l)
			break
		}
	}
	b := make([]byte, 5)
	rand.Read(b)
	id := spec + "-" + hex.EncodeToString(b)
	return &scene{scenario: sc, id: id, ns: topology.Prefix(string(scenario)) + runID + "/" + id + "/", start: time.Now()}
}

// path is an object path in the namespace.
func (s *scene) path(obj string) string { return s.ns + obj }

// rule adds emulator rules; a rule without a path match gets the
// namespace as its prefix.
func (s *scene) rule(rs ...rules.Rule) {
	GinkgoHelper()
	for i := range rs {
		if rs[i].Match.Path == "" && rs[i].Match.PathPrefix == "" {
			rs[i].Match.PathPrefix = s.ns
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stored, err := env.Control.AddRules(ctx, rs...)
	setupOK(err, "adding emulator rules")
	// Long-lived emulators (external targets) would otherwise collect
	// every run's rules.
	DeferCleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, r := range stored {
			if err := env.Control.DeleteRule(ctx, r.ID); err != nil && !emuclient.IsNotFound(err) {
				GinkgoWriter.Printf("deleting emulator rule %s: %v\n", r.ID, err)
			}
		}
	})
}

// object configures objects (paths relative to the namespace).
func (s *scene) object(specs ...objects.Spec) {
	GinkgoHelper()
	for i := range specs {
		if !strings.HasPrefix(specs[i].Path, "/") {
			specs[i].Path = s.path(specs[i].Path)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	setupOK(env.Control.PutObjects(ctx, specs...), "configuring emulator objects")
	DeferCleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, o := range specs {
			if err := env.Control.DeleteObject(ctx, o.Path); err != nil && !emuclient.IsNotFound(err) {
				GinkgoWriter.Printf("deleting emulator object %s: %v\n", o.Path, err)
			}
		}
	})
}

// holdName is a hold barrier name unique to the scene.
func (s *scene) holdName(what string) string { return s.id + "-" + what }

// releaseWaiting waits until n requests wait at the hold (a release
// before that would let nobody go) and releases them, asserting that
// exactly n went.
func (s *scene) releaseWaiting(name string, n int) {
	GinkgoHelper()
	Eventually(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hs, err := env.Control.Holds(ctx)
		setupOK(err, "listing holds")
		for _, h := range hs {
			if h.Name == name {
				return h.Waiting
			}
		}
		return 0
	}).WithTimeout(U(30)+5*time.Second).WithPolling(5*time.Millisecond).Should(BeNumerically(">=", n),
		"requests waiting at the origin's barrier %s", name)
	Expect(s.release(name)).To(Equal(n), "requests released at the origin's barrier %s", name)
}

// release lets the requests waiting at a hold go.
func (s *scene) release(name string) int {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := env.Control.Release(ctx, name)
	setupOK(err, "releasing hold %s", name)
	return n
}

// resp is what a client got.
type resp struct {
	// Method and URL say what was asked, for messages.
	Method, URL string
	Status      int
	Header      http.Header
	Body        []byte
	BodyErr     error // the body ended short (truncation) or could not be read
	Err         error // no response at all
	Elapsed     time.Duration
}

// reqOpt shapes a client request.
type reqOpt func(*reqConf)

type reqConf struct {
	host    string
	header  http.Header
	body    io.Reader
	length  int64
	trailer http.Header
	raw     bool
	ctx     context.Context
	wrote   func()
	base    string
}

func header(k, v string) reqOpt { return func(c *reqConf) { c.header.Add(k, v) } }
func host(h string) reqOpt      { return func(c *reqConf) { c.host = h } }

// at sends the request to another node of the target (an edge, SHD)
// instead of its URL.
func at(baseURL string) reqOpt { return func(c *reqConf) { c.base = baseURL } }

// body sends a fixed-length body.
func body(b string) reqOpt {
	return func(c *reqConf) { c.body, c.length = strings.NewReader(b), int64(len(b)) }
}

// trailer sends a chunked body with a trailer field.
func trailer(k, v string) reqOpt {
	return func(c *reqConf) {
		c.body, c.length = io.NopCloser(strings.NewReader("payload")), -1
		c.trailer = http.Header{k: {v}}
	}
}

// rawPath sends the path exactly as given (no namespace, no cleaning).
func rawPath() reqOpt                                 { return func(c *reqConf) { c.raw = true } }
func withCtx(ctx context.Context) reqOpt              { return func(c *reqConf) { c.ctx = ctx } }
func onWrote(f func()) reqOpt                         { return func(c *reqConf) { c.wrote = f } }
func (s *scene) get(obj string, opts ...reqOpt) *resp { return s.do("GET", obj, opts...) }

// do sends method to the target for the namespace's object obj (or, with
// rawPath, for the path obj) and reads the whole response.
func (s *scene) do(method, obj string, opts ...reqOpt) *resp {
	GinkgoHelper()
	path := obj
	if !strings.HasPrefix(obj, "/") {
		path = s.path(obj)
	}
	return send(method, path, opts...)
}

// send is a client request to the target's URL with the topology's
// client Host.
func send(method, path string, opts ...reqOpt) *resp {
	GinkgoHelper()
	c := reqConf{host: env.Params.ClientHost, header: http.Header{}, ctx: context.Background()}
	for _, o := range opts {
		o(&c)
	}
	ctx, cancel := context.WithTimeout(c.ctx, requestTimeout())
	defer cancel()
	if c.wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { c.wrote() }})
	}
	base := env.URL
	if c.base != "" {
		base = c.base
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/", c.body)
	Expect(err).NotTo(HaveOccurred())
	req.URL.Path, req.URL.RawPath, req.URL.Opaque = "", "", path
	req.Host = c.host
	req.Header = c.header
	if c.body != nil {
		req.ContentLength = c.length
	}
	if c.trailer != nil {
		req.Trailer = c.trailer
	}
	start := time.Now()
	hr, err := client.Do(req)
	// The request's URL prints without its host (an opaque path): name
	// the target's URL and the Host sent in errors instead.
	r := &resp{Method: method, URL: base + path + " (Host: " + c.host + ")"}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		r.Err, r.Elapsed = fmt.Errorf("%s %s: %w", method, r.URL, err), time.Since(start)
		return r
	}
	defer hr.Body.Close()
	r.Status, r.Header = hr.StatusCode, hr.Header
	r.Body, r.BodyErr = io.ReadAll(hr.Body)
	if r.BodyErr != nil {
		r.BodyErr = fmt.Errorf("%s %s: reading the body after %d bytes: %w", method, r.URL, len(r.Body), r.BodyErr)
	}
	r.Elapsed = time.Since(start)
	return r
}

// is asserts a response with the given status; the message leads with
// the expected and actual status, then what was asked and a printable
// excerpt of the body.
func (r *resp) is(status int) *resp {
	GinkgoHelper()
	Expect(r.Err).NotTo(HaveOccurred(), "the client got no response")
	Expect(r.Status).To(Equal(status), "status %d, want %d: %s %s; body: %s", r.Status, status, r.Method, r.URL, excerpt(r.Body))
	return r
}

// excerpt is a short printable excerpt of a body: never binary.
func excerpt(b []byte) string {
	if len(b) == 0 {
		return "(empty)"
	}
	printable := utf8.Valid(b)
	for _, c := range string(b) {
		if !printable {
			break
		}
		if !unicode.IsPrint(c) && !unicode.IsSpace(c) {
			printable = false
		}
	}
	if !printable {
		return fmt.Sprintf("(%d bytes, not text)", len(b))
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return fmt.Sprintf("%q (%d bytes)", s, len(b))
}

// journal is what the origins have received in the namespace so far.
func (s *scene) journal() journal.Snapshot {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := env.Control.Journal(ctx, journal.Query{PathPrefix: s.ns})
	setupOK(err, "reading the journal")
	return snap
}

// origin waits until n origin requests in the namespace have ended and
// returns all of them, asserting there are exactly n. Call it once the
// client has its response: no attempt for it is still to come.
func (s *scene) origin(n int) []journal.Request {
	GinkgoHelper()
	if n > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), U(30)+10*time.Second)
		defer cancel()
		_, err := env.Control.WaitEnded(ctx, journal.Query{PathPrefix: s.ns}, n)
		if err != nil {
			got := s.journal().Requests
			Expect(got).To(HaveLen(n), "origin requests in %s (waiting: %v)", s.ns, err)
		}
	}
	got := s.journal().Requests
	Expect(got).To(HaveLen(n), "origin requests in %s: %s", s.ns, describe(got))
	return got
}

// waitArrived waits until n origin requests in the namespace have arrived
// (not necessarily ended).
func (s *scene) waitArrived(n int) []journal.Request {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), U(30)+10*time.Second)
	defer cancel()
	reqs, err := env.Control.WaitRequests(ctx, journal.Query{PathPrefix: s.ns}, n)
	Expect(err).NotTo(HaveOccurred(), "waiting for %d origin requests in %s", n, s.ns)
	return reqs
}

// listeners are the listeners of the requests, in order.
func listeners(reqs []journal.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Listener
	}
	return out
}

func describe(reqs []journal.Request) string {
	var b strings.Builder
	for i, r := range reqs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.Listener + " " + r.Method + " " + r.Path + " -> " + http.StatusText(r.Status) + " (" + r.End + ")")
	}
	return "[" + b.String() + "]"
}

// hdr is a request header the origin received ("" and false if absent).
func hdr(r journal.Request, name string) (string, bool) {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// hdrs are all values of a request header the origin received.
func hdrs(r journal.Request, name string) []string {
	var out []string
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			out = append(out, h.Value)
		}
	}
	return out
}

// conns are the connections a listener accepted since the scene began.
func (s *scene) conns(listener string) []journal.Conn {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := env.Control.Journal(ctx, journal.Query{Listener: listener, Limit: 1})
	setupOK(err, "reading the journal")
	since := s.start
	if !env.Reference {
		since = since.Add(-time.Second) // another clock
	}
	var out []journal.Conn
	for _, c := range snap.Conns {
		if !c.Opened.Before(since) {
			out = append(out, c)
		}
	}
	return out
}

// connOf is the connection that carried a request.
func (s *scene) connOf(r journal.Request) journal.Conn {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := env.Control.Journal(ctx, journal.Query{Listener: r.Listener, PathPrefix: s.ns})
	setupOK(err, "reading the journal")
	for _, c := range snap.Conns {
		if c.ID == r.ConnID {
			return c
		}
	}
	setupFail("the journal has no connection for its request " + r.URI)
	return journal.Conn{}
}

// parallel runs f(i) for i in [0, n) concurrently and waits.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}

// objectCacheable is an object any shared cache may store for 10 minutes.
func objectCacheable(path string) objects.Spec {
	return objects.Spec{Path: path, CacheControl: "public, max-age=600"}
}

// warm repeats get until a response comes without a new origin request in
// evidence's namespace (a cache hit), so that the fill is known to be
// committed; a few tries at most.
func warm(get func() *resp, evidence *scene) {
	GinkgoHelper()
	for try := 0; try < 20; try++ {
		before := len(evidence.journal().Requests)
		get().is(http.StatusOK)
		if len(evidence.journal().Requests) == before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	Fail("the object was never served from the cache: " + describe(evidence.journal().Requests))
}

// arrived waits until n origin requests in the namespace have arrived and
// asserts there are exactly n (for attempts the target gave up on, whose
// exchanges may still be running at the origin).
func (s *scene) arrived(n int) []journal.Request {
	GinkgoHelper()
	if n > 0 {
		s.waitArrived(n)
	}
	got := s.journal().Requests
	Expect(got).To(HaveLen(n), "origin requests in %s: %s", s.ns, describe(got))
	return got
}

// synthetic asserts body is the whole default synthetic object at the
// origin path.
func synthetic(body []byte, originPath string, size int64) {
	GinkgoHelper()
	Expect(body).To(HaveLen(int(size)), "body length")
	Expect(synth.Verify(synth.Object{Path: originPath, Size: size, Version: "1"}, 0, body)).To(Succeed(), "body content")
}

// dur is a rules.Duration of d.
func dur(d time.Duration) rules.Duration { return rules.Duration(d) }

// altURL is an http URL for a path on a listener, at the topology's
// alternative host name (redirect Locations, RDR-4).
func altURL(listener, path string) string {
	return "http://" + net.JoinHostPort(env.Params.AltHost, strconv.Itoa(env.Params.Ports[listener])) + path
}

func httptraceWrote(ctx context.Context, f func()) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { f() }})
}
