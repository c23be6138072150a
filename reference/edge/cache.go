package edge

// The cache path (CCH, COL, RNG of behaviour.md) is package
// cache/session: serveCached asks it for an answer and delivers that
// answer (a head and one io.ReadSeeker over stored or arriving bytes);
// the rules it follows are in that package's doc. This file also holds
// the edge's options and the deliver side of cached answers: the head
// (prepareHead, writeHead: Cache-Status, the route's response header
// action, clientTtl's Cache-Control) and http.ServeContent (RNG-3).

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/session"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/receive"
	"github.com/edgeconform/edgeconform/reference/routing"
	"github.com/edgeconform/edgeconform/reference/shield"
)

const (
	// DefaultStoreBytes bounds the memory store New uses without [WithStore].
	DefaultStoreBytes = 256 << 20
	// DefaultName is the node's name in Cache-Status without [WithName].
	DefaultName = "edgecache"
	// ChunkSize is the largest range a fill asks for (RNG-2).
	ChunkSize = entry.ChunkSize
	// DefaultMaxFills bounds the fills in flight per node without
	// [WithMaxFills].
	DefaultMaxFills = 1024
)

// Option configures [New].
type Option func(*options)

type options struct {
	store    store.Store
	fetch    []fetch.Option
	name     string
	shields  shield.Tiers
	maxFills int
	limits   *receive.Limits // receive.go
}

// WithStore makes the edge cache objects in st instead of a memory store
// of DefaultStoreBytes.
func WithStore(st store.Store) Option { return func(o *options) { o.store = st } }

// WithFetch passes options on to the fetch engine (fetch.WithGCS, ...).
func WithFetch(fo ...fetch.Option) Option {
	return func(o *options) { o.fetch = append(o.fetch, fo...) }
}

// WithName sets the node's name in Cache-Status (RFC 9211), so that a
// response through several tiers says what each did.
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithMaxFills bounds the fills (whole objects and chunks) in flight at
// once on this node (issue #12 item 2): a cache miss that would start one
// more is answered 503 with Retry-After at once; joining a running fill is
// never refused. 0 means DefaultMaxFills, a negative n no bound.
func WithMaxFills(n int) Option { return func(o *options) { o.maxFills = n } }

// WithShields gives the node a parent tier (SHD-1): fills for the origins
// t maps go to a shield node instead of the origin.
func WithShields(t shield.Tiers) Option { return func(o *options) { o.shields = t } }

// policyFor is the route's compiled cdnPolicy, compiled once per rule.
func (s *Server) policyFor(rule *config.RouteRule) *policy.Policy {
	if p, ok := s.policies.Load(rule); ok {
		return p.(*policy.Policy)
	}
	var cp *config.CDNPolicy
	if rule.RouteAction != nil {
		cp = rule.RouteAction.CDNPolicy
	}
	p := policy.New(cp)
	s.policies.Store(rule, &p)
	return &p
}

// serveCached answers v from the cache or through a collapsed fill
// (package session) and reports whether it did; false means: take the
// uncached path.
func (s *Server) serveCached(v *visit) bool {
	r := v.r
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	pol := s.policyFor(v.route.Rule)
	if pol.Mode == policy.BypassCache {
		return false
	}
	v.cacheKey = pol.Key(r)
	a := s.cache.Lookup(session.Request{HTTP: r, Policy: pol, Key: v.cacheKey, ID: v.id,
		Upstream: &fillUpstream{s: s, r: r, route: v.route, id: v.id}})
	v.cache, v.cacheHdr = a.Cache, a.Member
	if a.FillID != "" {
		v.fillID = a.FillID
	}
	if a.Result != nil {
		v.result = a.Result
	}
	switch a.Kind {
	case session.Bypass:
		return false
	case session.Gone:
		return true
	case session.Failed:
		s.failBeforeHead(v, a.What, a.Err)
		return true
	case session.Synthesized:
		s.synthesize(v, a.Status, a.Reason, a.Detail) // COL-7: every caller gets the fill's 502/504
		return true
	}
	defer a.Close()
	if a.Age != "" {
		v.w.Header().Set("Age", a.Age)
	}
	switch a.Kind {
	case session.Ranged:
		s.serveRanged(v, a)
	case session.Stored:
		s.writeHead(v, a.Status, a.Header, a.Size, a.ClientCC)
		if r.Method != http.MethodHead {
			s.sendBody(v, a.Body)
		}
	case session.Live:
		s.sendLive(v, a)
	}
	return true
}

// fillUpstream sends a request's cache fills to its parent tier
// (session.Upstream). The upstream request is built on first use, so a
// hit builds none; it holds no *visit, which stays on the stack.
type fillUpstream struct {
	s     *Server
	r     *http.Request
	route *routing.Result
	id    string
	once  sync.Once
	u     *upstreamReq
}

func (f *fillUpstream) req() *upstreamReq {
	f.once.Do(func() { f.u = f.s.upstreamFor(f.r, f.route, f.id) })
	return f.u
}

func (f *fillUpstream) Header() http.Header { return f.req().header }

func (f *fillUpstream) Fetch(ctx context.Context, h http.Header) *fetch.Result {
	u := *f.req()
	u.method, u.body, u.contentLength, u.header = http.MethodGet, nil, 0, h
	return f.s.fetchUpstream(ctx, &u)
}

// sendLive sends a fill's response as it arrives; one whose body fails
// before its first byte is a 502/504 (issue #12 item 7).
func (s *Server) sendLive(v *visit, a *session.Answer) {
	writeHead := func() { s.writeHead(v, a.Status, a.Header, a.Size, a.ClientCC) }
	if v.r.Method == http.MethodHead {
		writeHead()
		return
	}
	s.sendAfterFirstByte(v, a.Body, writeHead)
}

// serveRanged answers v with a 200 through http.ServeContent (ranges,
// If-Range, 416, conditional requests: RNG-3) over the stored or arriving
// bytes. A body that fails before anything was sent is a 502/504; one that
// fails later is truncated visibly and never committed (COL-7, RNG-5).
func (s *Server) serveRanged(v *visit, a *session.Answer) {
	r := v.r
	content := &recordingReader{ReadSeeker: a.Body}
	s.prepareHead(v, a.Header, a.ClientCC)
	if a.Unstorable != "" && r.Header.Get(shield.TierHeader) != "" {
		v.w.Header().Set(shield.UncacheableHeader, a.Unstorable)
	}
	if _, ok := a.Header["Content-Type"]; !ok {
		v.w.Header()["Content-Type"] = nil // no sniffing: the origin sent none
	}
	modTime, _ := http.ParseTime(a.Header.Get("Last-Modified"))
	sw := &statusWriter{ResponseWriter: v.w, rc: http.NewResponseController(v.w), src: streamingOf(a.Body)}
	http.ServeContent(sw, r, "", modTime, content)
	if content.err != nil && content.err != io.EOF && !sw.sent {
		// Nothing went out: answer the failure (issue #12 item 7).
		s.failBeforeHead(v, "reading the object", content.err)
		return
	}
	sw.commit()
	v.status, v.bytes = sw.status, sw.n
	if content.err != nil && content.err != io.EOF {
		v.trunc = truncReason(content.err)
		s.logVisit(v)
		v.logged = true
		// What was written may still sit in net/http's buffer (bytes from
		// the store are not flushed write by write): send it, so the
		// client sees the header and the bytes before the cut.
		_ = sw.rc.Flush()
		panic(http.ErrAbortHandler) // truncate visibly (COL-7, RNG-5)
	}
}

// recordingReader keeps the first read error, which http.ServeContent
// swallows.
type recordingReader struct {
	io.ReadSeeker
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.ReadSeeker.Read(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// statusWriter records the status and body bytes. While its source is
// streaming from a running fill it flushes every write, so that bytes reach
// the client as the fill delivers them (COL-5); bytes from the store are
// not flushed write by write (net/http sends them as its buffer fills and
// at the end), which saves a system call per write on a hit. It holds the
// header back until the first body byte (or commit), so that a body
// failing before it can still be answered with a 502/504.
type statusWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	src    streaming // nil: never flush
	status int
	sent   bool // the header was passed on
	n      int64
}

// streaming is implemented by bodies whose bytes may still be arriving
// from a fill (fillSeeker, a chunked object reading a chunk fill).
type streaming interface{ Streaming() bool }

// streamingOf is rd's streaming, if it has one.
func streamingOf(rd io.Reader) streaming {
	if st, ok := rd.(streaming); ok {
		return st
	}
	return nil
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

// commit passes the header on, if it has not been.
func (w *statusWriter) commit() {
	if w.sent {
		return
	}
	w.sent = true
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.ResponseWriter.WriteHeader(w.status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.commit()
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	if w.src != nil && w.src.Streaming() {
		_ = w.rc.Flush()
	}
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// prepareHead copies a stored or origin header to the response, less
// Content-Length and Content-Range (the cache sets those), with the route's
// response header action and Cache-Status.
func (s *Server) prepareHead(v *visit, header http.Header, clientCC string) {
	h := v.w.Header()
	for k, vals := range header {
		if (k == "Age" && h.Get("Age") != "") || k == "Content-Length" || k == "Content-Range" || k == "Cache-Status" || k == shield.UncacheableHeader {
			continue
		}
		h[k] = slices.Clone(vals)
	}
	if clientCC != "" {
		h.Set("Cache-Control", clientCC)
	}
	routing.ApplyResponseHeaders(h, v.route.Rule.HeaderAction)
	// The parent tier's Cache-Status members come first (RFC 9211 2).
	h["Cache-Status"] = append(slices.Clone(header["Cache-Status"]), v.cacheHdr)
}

// writeHead sends status and header (see prepareHead) with Content-Length
// when size is known.
func (s *Server) writeHead(v *visit, status int, header http.Header, size int64, clientCC string) {
	s.prepareHead(v, header, clientCC)
	if size >= 0 {
		v.w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	} else if cl := header.Get("Content-Length"); cl != "" && status != http.StatusPartialContent {
		v.w.Header().Set("Content-Length", cl)
	}
	v.status = status
	v.w.WriteHeader(status)
}
