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
	"time"

	"github.com/edgeconform/edgeconform/internal/httpdate"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/session"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/h1serve"
	"github.com/edgeconform/edgeconform/reference/headervars"
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
	geo      *headervars.Geo // headers.go
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
	x := &cachedVisit{fill: fillUpstream{s: s, r: r, route: v.route, id: v.id}}
	a := s.cache.LookupIn(session.Request{HTTP: r, Policy: pol, Key: v.cacheKey, ID: v.id, Upstream: &x.fill}, &x.room)
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
	if a.Age != "" && a.Kind != session.Ranged { // serveRanged sets its own
		v.w.Header()["Age"] = x.vals.one(0, a.Age)
	}
	switch a.Kind {
	case session.Ranged:
		s.serveRanged(v, a, x)
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

// cachedVisit is what the cache path of one request needs beside the
// visit, in one allocation (issue #14: a hit made nine: the cache
// lookup's state, the fill upstream, the reader, the status writer and
// its ResponseController, and four one-value slices). A fill may keep
// fill after the request; the rest is the request's alone.
type cachedVisit struct {
	room    session.Room // the cache lookup's state
	fill    fillUpstream
	vals    headValues
	content recordingReader
	sw      statusWriter
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
	f.once.Do(func() { f.u = f.s.upstreamFor(f.r, f.route, f.id, false) })
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
func (s *Server) serveRanged(v *visit, a *session.Answer, x *cachedVisit) {
	r := v.r
	x.content = recordingReader{ReadSeeker: a.Body}
	content := &x.content
	x.sw = statusWriter{ResponseWriter: v.w, src: streamingOf(a.Body)}
	sw := &x.sw
	memo := renderable(v, a)
	if memo {
		if rh := rendered(v, a); rh != nil && s.serveRendered(sw, rh, a.Age, content) {
			if rh.key == v.cacheKey {
				v.keyPrint = rh.keyPrint
			}
			s.endRanged(v, sw, content)
			return
		}
	}
	if a.Age != "" {
		v.w.Header()["Age"] = x.vals.one(0, a.Age)
	}
	s.prepareHead(v, a.Header, a.ClientCC)
	if a.Unstorable != "" && r.Header.Get(shield.TierHeader) != "" {
		v.w.Header().Set(shield.UncacheableHeader, a.Unstorable)
	}
	if _, ok := a.Header["Content-Type"]; !ok {
		v.w.Header()["Content-Type"] = nil // no sniffing: the origin sent none
	}
	modTime, _ := httpdate.Parse(a.Header.Get("Last-Modified"))
	var keep func(http.Header)
	if memo {
		keep = func(h http.Header) { remember(v, a, h) }
	}
	if !plainRequest(r) || !s.serveWhole(sw, r, modTime, content, &x.vals, keep) {
		http.ServeContent(sw, r, "", modTime, content)
	}
	s.endRanged(v, sw, content)
}

// endRanged ends serveRanged's answer: a failure before anything was sent
// is answered, one after it truncates visibly.
func (s *Server) endRanged(v *visit, sw *statusWriter, content *recordingReader) {
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
		sw.flush()
		panic(http.ErrAbortHandler) // truncate visibly (COL-7, RNG-5)
	}
}

// plainRequest reports whether r leaves http.ServeContent nothing to
// decide: no Range and no conditional header field (RNG-3 needs it only
// for those).
func plainRequest(r *http.Request) bool {
	for _, k := range [...]string{"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		if _, ok := r.Header[k]; ok {
			return false
		}
	}
	return true
}

// serveWhole answers a plainRequest as http.ServeContent would (the same
// head: Last-Modified normalized, Accept-Ranges, Content-Length unless
// Content-Encoding is set; the whole body), without its per-request costs
// (issue #14: ~8% of a 1 KiB hit's CPU, and an io.CopyN buffer per
// response): the body goes through a pooled buffer. It reports false,
// having written nothing, when content's size cannot be had or w's
// Content-Type is unset (ServeContent would sniff it).
func (s *Server) serveWhole(w *statusWriter, r *http.Request, modTime time.Time, content io.ReadSeeker, vals *headValues, keep func(http.Header)) bool {
	h := w.Header()
	if _, ok := h["Content-Type"]; !ok {
		return false
	}
	size, err := content.Seek(0, io.SeekEnd)
	if err != nil || size < 0 {
		return false
	}
	if _, err := content.Seek(0, io.SeekStart); err != nil {
		return false
	}
	if !modTime.IsZero() && !modTime.Equal(time.Unix(0, 0)) {
		h["Last-Modified"] = vals.one(1, lastModified(h["Last-Modified"], modTime))
	}
	// Canonical keys set directly: Header.Set canonicalises on every call.
	h["Accept-Ranges"] = vals.one(2, "bytes")
	if h.Get("Content-Encoding") == "" {
		h["Content-Length"] = vals.one(3, strconv.FormatInt(size, 10))
	}
	if keep != nil {
		keep(h) // the head is complete: the next hits send it rendered
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return true
	}
	s.sendWhole(w, content, size)
	return true
}

// serveRendered answers a plain GET hit with the entry's rendered head rh
// (rendered.go) and the whole body; false if the body's size cannot be
// had, before anything was sent.
func (s *Server) serveRendered(w *statusWriter, rh *renderedHead, age string, content io.ReadSeeker) bool {
	size, err := content.Seek(0, io.SeekEnd)
	if err != nil || size < 0 {
		return false
	}
	if _, err := content.Seek(0, io.SeekStart); err != nil {
		return false
	}
	w.status, w.fields, w.fieldValue = http.StatusOK, rh.fields, age
	s.sendWhole(w, content, size)
	return true
}

// sendWhole writes content's size bytes to w.
func (s *Server) sendWhole(w *statusWriter, content io.ReadSeeker, size int64) {
	if rr, ok := content.(*recordingReader); ok && rr.writeStored(w) {
		return // the stored bytes as they lie, no copy
	}
	buf := s.buffer()
	defer s.bufs.Put(buf)
	for left := size; left > 0; { // io.CopyN's reads: never past size
		n, err := content.Read((*buf)[:min(int64(len(*buf)), left)])
		if n > 0 {
			if _, werr := w.Write((*buf)[:n]); werr != nil {
				break
			}
			left -= int64(n)
		}
		if err != nil {
			break
		}
	}
}

// headValues backs the one-value fields the cache path sets on a
// response head (Age, Last-Modified, Accept-Ranges, Content-Length): one
// allocation for all of them, not one per field (issue #14).
type headValues [4]string

// one is the field value v as a slice of one, in slot i.
func (hv *headValues) one(i int, v string) []string {
	hv[i] = v
	return hv[i : i+1 : i+1]
}

// lastModified is t as http.ServeContent writes Last-Modified: the stored
// field's own string when it is already that (no new string per hit),
// else t formatted.
func lastModified(stored []string, t time.Time) string {
	var buf [len(http.TimeFormat)]byte
	b := httpdate.Append(buf[:0], t)
	if len(stored) == 1 && string(b) == stored[0] {
		return stored[0]
	}
	return string(b)
}

// recordingReader keeps the first read error, which http.ServeContent
// swallows.
type recordingReader struct {
	io.ReadSeeker
	err error
	ew  writeErr // writeStored's, kept here to spare an allocation
}

// writeStored writes the rest of the body to w through the body's own
// WriteTo, if it has one (the memory store's), and reports whether it
// did. A failure of the body's own (not of w) is recorded as Read's are.
func (r *recordingReader) writeStored(w io.Writer) bool {
	wt, ok := r.ReadSeeker.(io.WriterTo)
	if !ok {
		return false
	}
	r.ew = writeErr{w: w}
	ew := &r.ew
	if _, err := wt.WriteTo(ew); err != nil && ew.err == nil && r.err == nil {
		r.err = err
	}
	return true
}

// writeErr remembers w's first error.
type writeErr struct {
	w   io.Writer
	err error
}

// WriteBuffers passes a stored body's chunks to w at once (store.BuffersWriter).
func (e *writeErr) WriteBuffers(bufs [][]byte) (int64, error) {
	var n int64
	var err error
	if bw, ok := e.w.(store.BuffersWriter); ok {
		n, err = bw.WriteBuffers(bufs)
	} else {
		n, err = writeEach(e.w, bufs)
	}
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// writeEach writes bufs to w one Write each, up to the first error.
func writeEach(w io.Writer, bufs [][]byte) (int64, error) {
	var n int64
	for _, b := range bufs {
		m, err := w.Write(b)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (e *writeErr) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
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
	rc     *http.ResponseController // made at the first flush
	src    streaming                // nil: never flush
	status int
	sent   bool // the header was passed on
	n      int64
	// fields, when set, are the head to send (h1serve.FieldsWriter)
	// instead of the header map (serveRendered).
	fields     *h1serve.Fields
	fieldValue string
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
	if fw, ok := w.ResponseWriter.(h1serve.FieldsWriter); ok && w.fields != nil && fw.WriteFields(w.status, w.fields, w.fieldValue) {
		return
	}
	w.ResponseWriter.WriteHeader(w.status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.commit()
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	if w.src != nil && w.src.Streaming() {
		w.flush()
	}
	return n, err
}

// WriteBuffers writes a stored body's chunks: in one gathered write
// through h1serve (h1serve.BuffersWriter), else Write of each.
func (w *statusWriter) WriteBuffers(bufs [][]byte) (int64, error) {
	w.commit()
	if bw, ok := w.ResponseWriter.(h1serve.BuffersWriter); ok && (w.src == nil || !w.src.Streaming()) {
		n, err := bw.WriteBuffers(bufs)
		w.n += n
		return n, err
	}
	return writeEach(w, bufs)
}

// flush sends what the server buffered of the response.
func (w *statusWriter) flush() {
	if w.rc == nil {
		w.rc = http.NewResponseController(w.ResponseWriter)
	}
	_ = w.rc.Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// prepareHead copies a stored or origin header to the response, less
// Content-Length and Content-Range (the cache sets those), with the route's
// response header action and Cache-Status.
func (s *Server) prepareHead(v *visit, header http.Header, clientCC string) {
	h := v.w.Header()
	hasAge := h.Get("Age") != ""
	copyHeaderExcept(h, header, func(k string) bool {
		return (k == "Age" && hasAge) || k == "Content-Length" || k == "Content-Range" || k == "Cache-Status" || k == shield.UncacheableHeader
	})
	if clientCC != "" {
		h.Set("Cache-Control", clientCC)
	}
	s.applyResponseHeaders(h, v) // headers.go
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
