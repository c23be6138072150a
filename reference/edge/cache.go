package edge

// Caching (CCH, COL, RNG of behaviour.md). The cache serves GET and HEAD on
// routes whose cdnPolicy is not BYPASS_CACHE:
//
//   - lookup: the key (policy.Key, CCH-6) is opened in the store; an entry
//     whose Vary variant matches and that is fresh (policy.Fresh at
//     policy.CurrentAge) is a hit, served with Age and
//     "Cache-Status: NAME; hit". A stale entry is revalidated (CCH-4): the
//     fill carries If-None-Match / If-Modified-Since from the stored
//     validators; a 304 refreshes the entry's headers and lifetime
//     (policy.Merge304) and the stored body is served ("fwd=stale;
//     fwd-status=304"); anything else replaces it.
//   - fill: one per key at a time (COL-1), through the collapse Group, run
//     with the Group's context so it outlives the leader's client (COL-6);
//     followers stream its body as it arrives (COL-5) and get
//     "; collapsed". A fill is a GET of the client's request less its
//     Range and conditional headers (the cache answers those itself), with
//     Range: bytes=A-B for one 2 MiB chunk (INT: the chunk holding the
//     client's first byte; RNG-2).
//   - what the fill found: a 206 whose Content-Range says the object is at
//     most 1 MiB is the whole object (stored as a 200); a 206 of a larger
//     object starts a chunked object (RNG-1/2): the entry under the key is
//     a manifest (headers, size, validator) and each 2 MiB chunk is an
//     entry of its own, filled on demand with a range request, collapsed
//     per chunk and validator (a response never joins another version's
//     chunk fill), and checked against the manifest's validator (RNG-5: a
//     changed validator deletes the manifest, and the request restarts if
//     nothing was sent yet, or is truncated). A 200 of known length over 1
//     MiB means the origin ignores ranges: it goes to the leader uncached
//     and followers fetch for themselves (RNG-2). Any other response is
//     stored whole when policy.Decide allows and it is at most 1 MiB.
//   - deliver: a 200 entry is served with http.ServeContent, which answers
//     single, multipart, suffix and open-ended ranges, If-Range, 416 and
//     the client's conditional headers from the stored validators (RNG-3).
//     Other statuses are sent as stored. A body that fails midway is
//     truncated visibly and never committed (COL-7); one that fails before
//     the header went out is a 502/504 with its reason (errors.go).
//   - limits: a fill nobody is attached to any more stops after one
//     chunk's worth of body, and fills in flight are bounded (fills.go).
//
// A response meant for one client (Set-Cookie, private, no-store, a Vary
// that cannot be keyed, an answer to a request with Authorization that may
// not be stored: CCH-1) is never shared with followers: they fetch for
// themselves. Synthesized 502/504s are shared (COL-7). HEAD is answered
// from a stored GET entry; a HEAD miss and other methods take the uncached
// path; an unsafe method whose response is 2xx/3xx deletes the key (CCH-7,
// policy.Invalidates).
//
// The log record's cache_status is "hit", "miss", "revalidated",
// "collapsed" or "bypass"; a collapsed request's record names the fill's
// request in fill_request_id (LOG-1).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/headervars"
	"github.com/edgeconform/edgeconform/reference/outcome"
	"github.com/edgeconform/edgeconform/reference/receive"
	"github.com/edgeconform/edgeconform/reference/shield"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

const (
	// DefaultStoreBytes bounds the memory store New uses without [WithStore].
	DefaultStoreBytes = 256 << 20
	// DefaultName is the node's name in Cache-Status without [WithName].
	DefaultName = "edgecache"
	// ChunkSize is the largest range a fill asks for (RNG-2).
	ChunkSize = 2 << 20
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

// policyFor is the route's compiled cdnPolicy.
func (s *Server) policyFor(rule *config.RouteRule) policy.Policy {
	if p, ok := s.policies.Load(rule); ok {
		return p.(policy.Policy)
	}
	var cp *config.CDNPolicy
	if rule.RouteAction != nil {
		cp = rule.RouteAction.CDNPolicy
	}
	p := policy.New(cp)
	s.policies.Store(rule, p)
	return p
}

// entryMeta is a stored entry's metadata.
type entryMeta struct {
	Status   int           `json:"status"`
	Header   http.Header   `json:"header"` // the origin's, less hop-by-hop fields
	ReqTime  time.Time     `json:"reqTime"`
	RespTime time.Time     `json:"respTime"`
	TTL      time.Duration `json:"ttl"`
	NoCache  bool          `json:"noCache,omitempty"`
	ClientCC string        `json:"clientCC,omitempty"` // clientTtl's Cache-Control
	Vary     []string      `json:"vary,omitempty"`     // the response's Vary field lines
	Variant  string        `json:"variant,omitempty"`  // VaryKey of the filling request
	// Chunked: the body is in chunks of ChunkSize under chunkKey(key, i),
	// each with Validator as its metadata; the entry itself has none.
	Chunked   bool   `json:"chunked,omitempty"`
	Size      int64  `json:"size,omitempty"`
	Validator string `json:"validator,omitempty"`
	// transient: a chunked object that is not stored (RNG-1): its chunks
	// are not stored either. unstorable says why, when the reason is one
	// a child tier cannot see (shield.UncacheableHeader).
	transient  bool
	unstorable string
}

// validatorOf is what must not change between the chunks of one object
// (RNG-5): the ETag and Last-Modified fields together.
func validatorOf(h http.Header) string {
	etag, lm := strings.TrimSpace(h.Get("Etag")), strings.TrimSpace(h.Get("Last-Modified"))
	if etag == "" && lm == "" {
		return ""
	}
	return etag + "|" + lm
}

func chunkKey(key string, i int64) string { return key + "\x00chunk " + strconv.FormatInt(i, 10) }

// errValidatorChanged fails a chunk fill whose response is of another
// version of the object than its manifest (RNG-5).
var errValidatorChanged = errors.New("the object changed between chunk fills (validator differs)")

type fillKind int

const (
	synthesized fillKind = iota // a 502/504 without an origin response
	whole                       // the body streams through the fill
	chunked                     // a large object; the fill's body is chunk first
	notModified                 // a revalidation answered 304; meta is the refreshed entry
	passThrough                 // a large 200: body is the leader's alone
	appeared                    // a fresh entry was stored after the caller looked: look again
)

// fillHead is what a fill publishes to its leader and followers.
type fillHead struct {
	kind     fillKind
	result   *fetch.Result // Response.Body belongs to the fill
	status   int
	header   http.Header
	size     int64
	shared   bool // followers may use it
	vary     []string
	variant  string
	clientCC string
	meta     entryMeta     // chunked, notModified
	first    int64         // chunked: the chunk the fill's body holds
	body     io.ReadCloser // passThrough
	leaderID string
}

// storedEntry is an entry opened from the store.
type storedEntry struct {
	m  entryMeta
	rd store.Reader
}

// serveCached answers v from the cache or through a collapsed fill and
// reports whether it did; false means: take the uncached path.
func (s *Server) serveCached(v *visit) bool {
	r := v.r
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	pol := s.policyFor(v.route.Rule)
	if pol.Mode == policy.BypassCache {
		return false
	}
	key := pol.Key(r)
	v.cacheKey = key
	for range 3 {
		done, retry := s.serveKey(v, pol, key)
		if !retry {
			return done
		}
		v.w.Header().Del("Age") // nothing was sent; the next pass sets its own
	}
	s.synthesize(v, http.StatusBadGateway, outcome.HTTPResponseIncomplete, "the object kept changing between chunk fills (RNG-5)")
	return true
}

// lookup opens key's entry for r's variant, or returns nil (a miss).
func (s *Server) lookup(pol policy.Policy, key string, r *http.Request) *storedEntry {
	rd, ok := s.store.Open(key)
	if !ok {
		return nil
	}
	m, err := decodeMeta(rd)
	if err != nil {
		rd.Close()
		return nil
	}
	if len(m.Vary) > 0 {
		if vk, ok := pol.VaryKey(key, m.Vary, r); !ok || vk != m.Variant {
			rd.Close()
			return nil
		}
	}
	return &storedEntry{m: *m, rd: rd}
}

// decodeMeta is a stored entry's metadata, decoded once per entry: the
// store keeps the decoded value beside the bytes (store.Noted), so a hit
// costs no JSON decoding. Callers must not modify it (they copy the struct
// and replace, never change, its Header).
func decodeMeta(rd store.Reader) (*entryMeta, error) {
	n, noted := rd.(store.Noted)
	if noted {
		if m, ok := n.Note().(*entryMeta); ok {
			return m, nil
		}
	}
	m := &entryMeta{}
	if err := json.Unmarshal(rd.Meta(), m); err != nil {
		return nil, fmt.Errorf("decoding a cache entry's metadata: %w", err)
	}
	if noted {
		n.SetNote(m)
	}
	return m, nil
}

// fresh reports the entry's current age and whether it may be used
// without revalidation.
func (e *storedEntry) fresh() (time.Duration, bool) {
	age := policy.CurrentAge(e.m.Header, e.m.ReqTime, e.m.RespTime, time.Now())
	return age, policy.Fresh(policy.Decision{Store: true, TTL: e.m.TTL, NoCache: e.m.NoCache}, age)
}

// serveKey is one pass of serveCached; retry means nothing was sent and
// the object changed (RNG-5).
func (s *Server) serveKey(v *visit, pol policy.Policy, key string) (done, retry bool) {
	r := v.r
	stale := s.lookup(pol, key, r)
	fwd := "miss"
	if stale != nil {
		defer stale.rd.Close()
		if age, ok := stale.fresh(); ok {
			v.cache, v.cacheHdr = "hit", s.name+"; hit"
			v.w.Header().Set("Age", strconv.FormatInt(int64(age/time.Second), 10))
			return s.serveEntry(v, key, stale.m, stale.rd, nil, 0)
		}
		fwd = "stale"
	}
	v.cache, v.cacheHdr = "miss", s.name+"; fwd="+fwd
	if r.Method == http.MethodHead && stale == nil {
		return false, false // never fill a GET entry from a HEAD
	}
	up := s.upstreamRequest(v).fill(v.id)
	req := &http.Request{Method: http.MethodGet, URL: r.URL, Host: r.Host, Header: r.Header.Clone()}
	var staleMeta *entryMeta
	if stale != nil {
		staleMeta = &stale.m
	}
	fill := s.fill(pol, key, up, req, firstChunk(r.Header.Get("Range")), staleMeta)
	res, leader := s.group.Do(context.WithoutCancel(r.Context()), key, fill)
	defer attach(r.Context(), res)()
	hctx := r.Context()
	if leader {
		hctx = context.WithoutCancel(hctx) // the leader takes what the fill hands it
	}
	hv, err := res.Head(hctx)
	if err != nil {
		s.failBeforeHead(v, "filling the object", err)
		return true, false
	}
	head := hv.(*fillHead)
	if head.kind == appeared {
		return false, true
	}
	if leader {
		v.result = head.result
		if head.body != nil {
			defer head.body.Close()
			if r.Context().Err() != nil {
				return true, false
			}
		}
	} else {
		if !head.shared || head.kind == passThrough {
			return false, false
		}
		if len(head.vary) > 0 {
			if vk, ok := pol.VaryKey(key, head.vary, r); !ok || vk != head.variant {
				return false, false
			}
		}
		v.cache, v.fillID = "collapsed", head.leaderID
	}
	collapsed := ""
	if !leader {
		collapsed = "; collapsed"
	}
	v.cacheHdr += collapsed
	switch head.kind {
	case synthesized: // COL-7: every caller gets the fill's 502/504
		s.synthesize(v, head.status, head.result.Reason, "")
		return true, false
	case passThrough:
		s.sendFill(v, head, head.body)
		return true, false
	case notModified:
		if leader {
			v.cache = "revalidated"
		}
		v.cacheHdr = s.name + "; fwd=stale; fwd-status=304" + collapsed
		if stale == nil || stale.m.Validator != head.meta.Validator {
			return false, false // joined another request's revalidation without the entry
		}
		return s.serveEntry(v, key, head.meta, stale.rd, nil, 0)
	case chunked:
		done, retry = s.serveEntry(v, key, head.meta, nil, res, head.first)
		if retry { // RNG-5: let the outdated fill end, so that the retry does not join it
			select {
			case <-res.Done():
			case <-r.Context().Done():
				return true, false
			}
		}
		return done, retry
	}
	if head.status == http.StatusOK && head.size >= 0 && evaluatesLocally(r) {
		// Ranges and conditions are answered from the fill as it streams
		// in, so a fill that fails midway truncates this answer visibly.
		m := entryMeta{Status: head.status, Header: head.header, ClientCC: head.clientCC}
		body := &fillSeeker{res: res, size: head.size}
		defer body.Close()
		return s.serveEntry(v, key, m, body, nil, 0)
	}
	body := res.Body()
	defer body.Close()
	s.sendFill(v, head, body)
	return true, false
}

// sendFill sends a fill's response as it arrives; one whose body fails
// before its first byte is a 502/504 (issue #12 item 7).
func (s *Server) sendFill(v *visit, head *fillHead, body io.Reader) {
	writeHead := func() { s.writeHead(v, head.status, head.header, head.size, head.clientCC) }
	if v.r.Method == http.MethodHead {
		writeHead()
		return
	}
	s.sendAfterFirstByte(v, body, writeHead)
}

// fillSeeker reads a running fill's body of known size as an
// io.ReadSeeker for http.ServeContent: seeking is free, reading forward
// skips, reading backward starts a new reader of the fill.
type fillSeeker struct {
	res      *collapse.Result
	size     int64
	off, pos int64
	rd       io.ReadCloser
}

func (f *fillSeeker) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.size
	}
	if offset < 0 {
		return 0, fmt.Errorf("fill seek: negative offset %d", offset)
	}
	f.off = offset
	return offset, nil
}

func (f *fillSeeker) Read(p []byte) (int, error) {
	if f.off >= f.size {
		return 0, io.EOF
	}
	if f.rd == nil || f.pos > f.off {
		f.Close()
		f.rd, f.pos = f.res.Body(), 0
	}
	if f.pos < f.off {
		n, err := io.CopyN(io.Discard, f.rd, f.off-f.pos)
		f.pos += n
		if err != nil {
			return 0, fmt.Errorf("skipping to byte %d of the fill: %w", f.off, err)
		}
	}
	if int64(len(p)) > f.size-f.off {
		p = p[:f.size-f.off]
	}
	n, err := f.rd.Read(p)
	f.pos += int64(n)
	f.off += int64(n)
	if err == io.EOF && f.off < f.size {
		err = fmt.Errorf("the fill ended at byte %d of %d: %w", f.off, f.size, io.ErrUnexpectedEOF)
	}
	return n, err
}

// Streaming implements streaming: the fill is still running.
func (f *fillSeeker) Streaming() bool {
	select {
	case <-f.res.Done():
		return false
	default:
		return true
	}
}

func (f *fillSeeker) Close() error {
	if f.rd != nil {
		f.rd.Close()
		f.rd = nil
	}
	return nil
}

// evaluatesLocally reports whether r has a Range or a conditional header
// that the cache answers (RNG-3, RFC 9110 13).
func evaluatesLocally(r *http.Request) bool {
	for _, k := range []string{"Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since"} {
		if _, ok := r.Header[k]; ok {
			return true
		}
	}
	return false
}

// firstChunk is the chunk holding the first byte of a Range field's first
// range ("bytes=N-..."), 0 when it has none or is a suffix range.
func firstChunk(rng string) int64 {
	spec, ok := strings.CutPrefix(strings.TrimSpace(rng), "bytes=")
	if !ok {
		return 0
	}
	spec, _, _ = strings.Cut(spec, ",")
	first, _, _ := strings.Cut(strings.TrimSpace(spec), "-")
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n / ChunkSize
}

// firstOffset is the first byte of the object a Range field's first range
// needs, 0 when it has none.
func firstOffset(rng string, size int64) int64 {
	spec, ok := strings.CutPrefix(strings.TrimSpace(rng), "bytes=")
	if !ok {
		return 0
	}
	spec, _, _ = strings.Cut(spec, ",")
	first, last, _ := strings.Cut(strings.TrimSpace(spec), "-")
	if first == "" { // suffix range: the last N bytes
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n <= 0 {
			return 0
		}
		return max(size-n, 0)
	}
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil || n < 0 || n >= size {
		return 0
	}
	return n
}

// serveEntry answers v from an entry: a 200 with http.ServeContent (ranges,
// If-Range, 416, conditional requests), other statuses as stored. A chunked
// entry reads its chunks from the store or through chunk fills; fill, when
// not nil, is a fill whose body is chunk first.
func (s *Server) serveEntry(v *visit, key string, m entryMeta, rd io.ReadSeeker, fill *collapse.Result, first int64) (done, retry bool) {
	r := v.r
	if m.Status != http.StatusOK {
		size := int64(-1)
		if sr, ok := rd.(interface{ Size() int64 }); ok {
			size = sr.Size()
		}
		s.writeHead(v, m.Status, m.Header, size, m.ClientCC)
		if r.Method != http.MethodHead {
			s.sendBody(v, rd)
		}
		return true, false
	}
	content := &recordingReader{ReadSeeker: rd}
	if m.Chunked {
		obj := &object{s: s, ctx: r.Context(), key: key, m: m, up: s.upstreamRequest(v).fill(v.id),
			fill: fill, first: first}
		if m.transient && m.Validator == "" {
			obj.private = v.id // versions cannot be told apart: fill for this request alone
		}
		defer obj.Close()
		// Open the first chunk the answer needs before a header goes out,
		// so that a changed object restarts the request (RNG-5).
		if r.Method == http.MethodGet {
			if err := obj.prime(firstOffset(r.Header.Get("Range"), m.Size)); err != nil {
				if errors.Is(err, errValidatorChanged) {
					s.log.Info("object changed during the request: refetching", "request_id", v.id, "key", key) // RNG-5
					return false, true
				}
				s.failBeforeHead(v, "filling the object", err)
				return true, false
			}
		}
		content.ReadSeeker = obj
	}
	s.prepareHead(v, m.Header, m.ClientCC)
	if m.unstorable != "" && v.r.Header.Get(shield.TierHeader) != "" {
		v.w.Header().Set(shield.UncacheableHeader, m.unstorable)
	}
	if _, ok := m.Header["Content-Type"]; !ok {
		v.w.Header()["Content-Type"] = nil // no sniffing: the origin sent none
	}
	modTime, _ := http.ParseTime(m.Header.Get("Last-Modified"))
	sw := &statusWriter{ResponseWriter: v.w, rc: http.NewResponseController(v.w), src: streamingOf(content.ReadSeeker)}
	http.ServeContent(sw, r, "", modTime, content)
	if content.err != nil && content.err != io.EOF && !sw.sent {
		// Nothing went out: answer the failure (issue #12 item 7).
		s.failBeforeHead(v, "reading the object", content.err)
		return true, false
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
	return true, false
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

// fill is the one fetch of a key from the parent tier: it publishes what it
// found (see fillKind) and streams the body into the Group and, when it
// may be stored, into the store, committing only a complete body.
func (s *Server) fill(pol policy.Policy, key string, up *upstreamReq, req *http.Request, first int64, stale *entryMeta) collapse.FillFunc {
	return func(ctx context.Context, fw *collapse.Fill) error {
		// A fill that ended between the caller's lookup and its Do stored
		// the object: no second origin request for it (COL-1).
		if s.freshEntry(pol, key, req) {
			return fw.Head(&fillHead{kind: appeared, shared: true, leaderID: up.id()})
		}
		if stale != nil {
			for k, vals := range policy.Conditional(stale.Header) { // CCH-4
				up.headers()[k] = vals
			}
		}
		for {
			start := first * ChunkSize
			up.setHeader("Range", fmt.Sprintf("bytes=%d-%d", start, start+ChunkSize-1))
			reqTime := time.Now()
			res := s.fetchUpstream(ctx, up)
			if res.Response != nil && res.Response.StatusCode == http.StatusRequestedRangeNotSatisfiable && first > 0 {
				res.Response.Body.Close() // the client's range starts past the end: fill from the start
				first = 0
				continue
			}
			return s.publish(ctx, fw, pol, key, up, req, first, stale, res, reqTime)
		}
	}
}

// freshEntry reports whether key has a fresh entry for req's variant.
func (s *Server) freshEntry(pol policy.Policy, key string, req *http.Request) bool {
	e := s.lookup(pol, key, req)
	if e == nil {
		return false
	}
	defer e.rd.Close()
	_, ok := e.fresh()
	return ok
}

// publish sorts the fill's response and streams it.
func (s *Server) publish(ctx context.Context, fw *collapse.Fill, pol policy.Policy, key string, up *upstreamReq,
	req *http.Request, first int64, stale *entryMeta, res *fetch.Result, reqTime time.Time) error {
	head := &fillHead{kind: synthesized, result: res, status: res.Status, size: -1, shared: true, leaderID: up.id()}
	if res.Response == nil {
		return fw.Head(head)
	}
	resp := res.Response
	respTime := time.Now()
	hdr := resp.Header.Clone()
	upstream.RemoveHopByHop(hdr)
	head.kind, head.status, head.header, head.size = whole, resp.StatusCode, hdr, resp.ContentLength
	head.vary = hdr.Values("Vary")
	varyOK := true
	if len(head.vary) > 0 {
		head.variant, varyOK = pol.VaryKey(key, head.vary, req)
	}
	head.shared = policy.ShareWithFollowers(hdr, varyOK) // CCH-1, CCH-6
	meta := func(status int, h http.Header, d policy.Decision) entryMeta {
		return entryMeta{Status: status, Header: h, ReqTime: reqTime, RespTime: respTime, TTL: d.TTL,
			NoCache: d.NoCache, ClientCC: d.ClientCacheControl, Vary: head.vary, Variant: head.variant,
			Validator: validatorOf(h)}
	}

	switch {
	case resp.StatusCode == http.StatusNotModified && stale != nil: // CCH-4
		resp.Body.Close()
		merged := policy.Merge304(stale.Header, hdr)
		d := pol.Decide(req, stale.Status, merged, respTime)
		m := *stale
		m.Header, m.ReqTime, m.RespTime, m.TTL, m.NoCache, m.ClientCC = merged, reqTime, respTime, d.TTL, d.NoCache, d.ClientCacheControl
		head.kind, head.meta, head.header, head.status = notModified, m, merged, stale.Status
		if d.Store {
			s.restore(key, stale, m)
		} else {
			s.store.Delete(key)
		}
		return fw.Head(head)

	case resp.StatusCode == http.StatusPartialContent:
		start := first * ChunkSize
		f, l, total, ok := policy.ParseContentRange(hdr.Get("Content-Range"))
		if !ok || f != start || l != min(start+ChunkSize, total)-1 || (resp.ContentLength >= 0 && resp.ContentLength != l-f+1) {
			resp.Body.Close()
			head.kind, head.status, res.Reason = synthesized, http.StatusBadGateway, outcome.HTTPProtocolError
			s.log.Warn("fill: origin answered a range request with another range", "request_id", up.id(),
				"key", key, "asked", fmt.Sprintf("bytes=%d-%d", start, start+ChunkSize-1), "content_range", hdr.Get("Content-Range"))
			return fw.Head(head)
		}
		whole := hdr.Clone()
		whole.Del("Content-Range")
		whole.Set("Content-Length", strconv.FormatInt(total, 10))
		if total <= policy.LargeObject { // the whole (small) object
			head.status, head.header, head.size = http.StatusOK, whole, total
			break
		}
		// RNG-1/2: a large object, cached chunk by chunk.
		defer resp.Body.Close()
		d := pol.Decide(req, http.StatusOK, whole, respTime)
		head.shared = policy.ShareAuthorized(head.shared, d, req) // CCH-1
		// RNG-1 (with SHD-1: the parent's reason the origin's response may not be stored)
		large := policy.DecideLarge(hdr, hdr.Get(shield.UncacheableHeader), policy.WorthStoring(d, whole, varyOK), head.shared)
		whole.Del(shield.UncacheableHeader)
		keep := large.Keep
		if !keep {
			s.log.Info("fill: large object not cached", "request_id", up.id(), "key", key, "reason", large.Why, "decision", d.Reason)
		}
		m := meta(http.StatusOK, whole, d)
		m.Chunked, m.Size, m.transient = true, total, !keep
		if !large.Cacheable {
			m.unstorable = large.Why
		}
		head.kind, head.meta, head.first, head.header, head.size = chunked, m, first, whole, total
		if err := fw.Head(head); err != nil {
			return err
		}
		var sw store.Writer
		if keep {
			sw = s.beginEntry(chunkKey(key, first), []byte(m.Validator), l-f+1)
		}
		if err := s.pump(resp.Body, fw, sw, -1); err != nil {
			return err
		}
		if keep {
			if mw := s.beginEntry(key, mustJSON(m), 0); mw != nil {
				_ = mw.Commit()
			}
		}
		return nil

	case resp.StatusCode == http.StatusOK && resp.ContentLength > policy.LargeObject:
		// RNG-2: the origin ignored the range request; such an object is
		// not cached. The leader gets the body; followers fetch their own.
		d := pol.Decide(req, resp.StatusCode, hdr, respTime)
		body := &handedBody{ReadCloser: resp.Body, closed: make(chan struct{})}
		head.kind, head.body, head.shared, head.clientCC = passThrough, body, false, d.ClientCacheControl
		s.log.Info("fill: origin ignored the range request; large object not cached (RNG-2)", "request_id", up.id(), "key", key)
		if err := fw.Head(head); err != nil {
			body.Close()
			return err
		}
		select { // the body lives as long as the fill: wait for the leader to finish with it
		case <-body.closed:
		case <-ctx.Done():
			body.Close()
		}
		return nil
	}

	defer resp.Body.Close()
	d := pol.Decide(req, head.status, head.header, respTime)
	head.clientCC = d.ClientCacheControl
	head.shared = policy.ShareAuthorized(head.shared, d, req) // CCH-1: an authorized answer stays the leader's
	var sw store.Writer
	if policy.StoreWhole(policy.WorthStoring(d, head.header, varyOK), head.size) {
		sw = s.beginEntry(key, mustJSON(meta(head.status, head.header, d)), head.size)
	}
	if err := fw.Head(head); err != nil {
		if sw != nil {
			sw.Abort()
		}
		return err
	}
	return s.pump(resp.Body, fw, sw, policy.LargeObject)
}

// handedBody is a response body the fill hands to its leader; closed is
// closed by the first Close.
type handedBody struct {
	io.ReadCloser
	once   sync.Once
	closed chan struct{}
}

func (b *handedBody) Close() error {
	var err error
	b.once.Do(func() { err = b.ReadCloser.Close(); close(b.closed) })
	return err
}

// restore re-commits a revalidated entry with its refreshed metadata (a
// chunked manifest has no body; a whole object's body is copied from the
// stored entry if it is still the same version).
func (s *Server) restore(key string, stale *entryMeta, m entryMeta) {
	if m.Chunked {
		if w := s.beginEntry(key, mustJSON(m), 0); w != nil {
			_ = w.Commit()
		}
		return
	}
	rd, ok := s.store.Open(key)
	if !ok {
		return
	}
	defer rd.Close()
	cur, err := decodeMeta(rd)
	if err != nil || cur.Validator != stale.Validator || !cur.RespTime.Equal(stale.RespTime) {
		return // replaced meanwhile
	}
	w := s.beginEntry(key, mustJSON(m), rd.Size())
	if w == nil {
		return
	}
	if _, err := io.Copy(w, io.NewSectionReader(rd, 0, rd.Size())); err != nil {
		w.Abort()
		return
	}
	_ = w.Commit()
}

// beginEntry starts a store entry, or returns nil if the store refuses.
func (s *Server) beginEntry(key string, meta []byte, size int64) store.Writer {
	w, err := s.store.Begin(key)
	if err != nil {
		return nil
	}
	w.SetMeta(meta)
	if size >= 0 {
		w.SetSize(size)
	}
	return w
}

func mustJSON(m entryMeta) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("encoding entry metadata: %v", err)) // only plain fields: cannot happen
	}
	return b
}

// pump streams body into the fill and, while it stays within limit bytes
// (limit < 0: any), into sw (nil: not stored), committing sw only when the
// body completed.
func (s *Server) pump(body io.Reader, fw *collapse.Fill, sw store.Writer, limit int64) error {
	if sw != nil {
		defer func() {
			if sw != nil {
				sw.Abort()
			}
		}()
	}
	buf := s.buffer()
	defer s.bufs.Put(buf)
	var n int64
	for {
		m, rerr := body.Read(*buf)
		if m > 0 {
			p := (*buf)[:m]
			if _, err := fw.Write(p); err != nil {
				return err
			}
			n += int64(m)
			if sw != nil {
				if limit >= 0 && n > limit {
					sw.Abort()
					sw = nil
				} else if _, err := sw.Write(p); err != nil {
					sw.Abort()
					sw = nil
				}
			}
		}
		if rerr == io.EOF {
			if sw != nil {
				_ = sw.Commit() // a failed Commit only means "not stored"
				sw = nil
			}
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
