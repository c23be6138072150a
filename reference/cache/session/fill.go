package session

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/outcome"
	"github.com/edgeconform/edgeconform/reference/shield"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// fillKind is what a fill found, as its head tells leader and followers.
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
	meta     entry.Meta    // chunked, notModified
	first    int64         // chunked: the chunk the fill's body holds
	body     io.ReadCloser // passThrough
	leaderID string
}

// fillStep is one state of a fill; it returns the next, or nil when the
// fill is over (err says how it ended).
type fillStep func(*filler) fillStep

// filler is the one fetch of a key from the parent tier (COL-1): it
// publishes what it found (see fillKind) and streams the body into the
// Group and, when it may be stored, into the store, committing only a
// complete body.
type filler struct {
	c     *Cache
	pol   *policy.Policy
	key   string
	up    Upstream
	id    string        // the leader's request id
	h     http.Header   // what the fill sends
	req   *http.Request // the leader's request, less its body
	first int64         // the chunk a Range fill asks for (RNG-2)
	stale *entry.Meta   // the entry being revalidated, if any (CCH-4)

	ctx      context.Context
	fw       *collapse.Fill
	res      *fetch.Result
	resp     *http.Response
	reqTime  time.Time
	respTime time.Time
	head     *fillHead
	varyOK   bool
	err      error
}

// run is the fill's collapse.FillFunc.
func (f *filler) run(ctx context.Context, fw *collapse.Fill) error {
	f.ctx, f.fw = ctx, fw
	for st := fillStep(fstpCheck); st != nil; {
		st = st(f)
	}
	return f.err
}

// sendHead sends the head to leader and followers and ends the fill.
func (f *filler) sendHead() fillStep {
	f.err = f.fw.Head(f.head)
	return nil
}

// fstpCheck: a fill that ended between the caller's lookup and its Do
// stored the object: no second origin request for it (COL-1). A stale
// entry's validators make the fill conditional (CCH-4).
func fstpCheck(f *filler) fillStep {
	if f.c.freshEntry(f.pol, f.key, f.req) {
		f.head = &fillHead{kind: appeared, shared: true, leaderID: f.id}
		return f.sendHead()
	}
	if f.stale != nil {
		for k, vals := range policy.Conditional(f.stale.Header) {
			f.h[k] = vals
		}
	}
	return fstpFetch
}

// fstpFetch asks the parent for the chunk holding the client's first byte
// (INT; RNG-2), or from the start when that is past the object's end.
func fstpFetch(f *filler) fillStep {
	for {
		start := f.first * entry.ChunkSize
		f.h.Set("Range", fmt.Sprintf("bytes=%d-%d", start, start+entry.ChunkSize-1))
		f.reqTime = time.Now()
		f.res = f.up.Fetch(f.ctx, f.h)
		if r := f.res.Response; r != nil && r.StatusCode == http.StatusRequestedRangeNotSatisfiable && f.first > 0 {
			r.Body.Close() // the client's range starts past the end: fill from the start
			f.first = 0
			continue
		}
		return fstpSort
	}
}

// fstpSort makes the head of what came back and picks the next state by
// its status: whether followers may share it is policy's (CCH-1, CCH-6).
func fstpSort(f *filler) fillStep {
	res := f.res
	f.head = &fillHead{kind: synthesized, result: res, status: res.Status, size: -1, shared: true, leaderID: f.id}
	if res.Response == nil {
		return f.sendHead() // ATT-8, ATT-9, COL-7: every caller gets the 502/504
	}
	f.resp, f.respTime = res.Response, time.Now()
	hdr := f.resp.Header.Clone()
	upstream.RemoveHopByHop(hdr)
	h := f.head
	h.kind, h.status, h.header, h.size = whole, f.resp.StatusCode, hdr, f.resp.ContentLength
	h.vary = hdr.Values("Vary")
	f.varyOK = true
	if len(h.vary) > 0 {
		h.variant, f.varyOK = f.pol.VaryKey(f.key, h.vary, f.req)
	}
	h.shared = policy.ShareWithFollowers(hdr, f.varyOK) // CCH-1, CCH-6
	switch {
	case f.resp.StatusCode == http.StatusNotModified && f.stale != nil:
		return fstpRevalidate
	case f.resp.StatusCode == http.StatusPartialContent:
		return fstpRange
	case f.resp.StatusCode == http.StatusOK && f.resp.ContentLength > policy.LargeObject:
		return fstpPassThrough
	}
	return fstpWhole
}

// meta is the entry for a response of status with header h, as d decided.
func (f *filler) meta(status int, h http.Header, d policy.Decision) entry.Meta {
	return entry.Meta{Status: status, Header: h, ReqTime: f.reqTime, RespTime: f.respTime, TTL: d.TTL,
		NoCache: d.NoCache, ClientCC: d.ClientCacheControl, Vary: f.head.vary, Variant: f.head.variant,
		Validator: entry.ValidatorOf(h)}
}

// fstpRevalidate: a 304 refreshes the stale entry's headers and lifetime
// (CCH-4, policy.Merge304); the entry is re-stored, or deleted if it may no
// longer be stored.
func fstpRevalidate(f *filler) fillStep {
	f.resp.Body.Close()
	stale, h := f.stale, f.head
	merged := policy.Merge304(stale.Header, h.header)
	d := f.pol.Decide(f.req, stale.Status, merged, f.respTime)
	m := *stale
	m.Header, m.ReqTime, m.RespTime, m.TTL, m.NoCache, m.ClientCC = merged, f.reqTime, f.respTime, d.TTL, d.NoCache, d.ClientCacheControl
	h.kind, h.meta, h.header, h.status = notModified, m, merged, stale.Status
	if d.Store {
		f.c.restore(f.key, stale, m)
	} else {
		f.c.store.Delete(f.key)
	}
	// The answer is complete: a request from now on looks the refreshed
	// entry up (and revalidates it again if it is no-cache: CCH-4) rather
	// than joining this fill after the origin answered (COL-1).
	f.fw.Release()
	return f.sendHead()
}

// fstpRange checks a 206 against the range asked for: one whose
// Content-Range says the object is at most policy.LargeObject is the whole
// (small) object, stored as a 200; a larger one starts a chunked object
// (RNG-1/2); any other range is the origin's protocol error (502).
func fstpRange(f *filler) fillStep {
	h, resp := f.head, f.resp
	start := f.first * entry.ChunkSize
	first, last, total, ok := policy.ParseContentRange(h.header.Get("Content-Range"))
	if !ok || first != start || last != min(start+entry.ChunkSize, total)-1 || (resp.ContentLength >= 0 && resp.ContentLength != last-first+1) {
		resp.Body.Close()
		h.kind, h.status, f.res.Reason = synthesized, http.StatusBadGateway, outcome.HTTPProtocolError
		f.c.log.Warn("fill: origin answered a range request with another range", "request_id", f.id, "key", f.key,
			"asked", fmt.Sprintf("bytes=%d-%d", start, start+entry.ChunkSize-1), "content_range", h.header.Get("Content-Range"))
		return f.sendHead()
	}
	wh := h.header.Clone()
	wh.Del("Content-Range")
	wh.Set("Content-Length", strconv.FormatInt(total, 10))
	if total > policy.LargeObject {
		return f.chunked(wh, total, last-first+1)
	}
	h.status, h.header, h.size = http.StatusOK, wh, total
	return fstpWhole
}

// chunked publishes a large object's manifest (RNG-1/2) with header wh of
// the whole object of total bytes and streams its first chunk (n bytes);
// both are stored if policy says the object is worth keeping
// (policy.DecideLarge, with SHD-1: the parent's reason it may not be).
func (f *filler) chunked(wh http.Header, total, n int64) fillStep {
	h := f.head
	defer f.resp.Body.Close()
	d := f.pol.Decide(f.req, http.StatusOK, wh, f.respTime)
	h.shared = policy.ShareAuthorized(h.shared, d, f.req) // CCH-1
	large := policy.DecideLarge(h.header, h.header.Get(shield.UncacheableHeader), policy.WorthStoring(d, wh, f.varyOK), h.shared)
	wh.Del(shield.UncacheableHeader)
	if !large.Keep {
		f.c.log.Info("fill: large object not cached", "request_id", f.id, "key", f.key, "reason", large.Why, "decision", d.Reason)
	}
	m := f.meta(http.StatusOK, wh, d)
	m.Chunked, m.Size, m.Transient = true, total, !large.Keep
	if !large.Cacheable {
		m.Unstorable = large.Why
	}
	h.kind, h.meta, h.header, h.size = chunked, m, wh, total
	h.first = f.first
	if f.err = f.fw.Head(h); f.err != nil {
		return nil
	}
	var sw store.Writer
	if large.Keep {
		sw = f.c.beginEntry(entry.ChunkKey(f.key, f.first), []byte(m.Validator), n)
	}
	if f.err = f.c.pump(f.resp.Body, f.fw, sw, -1); f.err != nil {
		return nil
	}
	if large.Keep {
		if mw := f.c.beginEntry(f.key, entry.Encode(m), 0); mw != nil {
			_ = mw.Commit()
		}
	}
	return nil
}

// fstpPassThrough: the origin ignored the range request for an object
// over policy.LargeObject (RNG-2); such an object is not cached. The
// leader gets the body; followers fetch their own. The body lives as long
// as the fill: it waits for the leader to finish with it.
func fstpPassThrough(f *filler) fillStep {
	h := f.head
	d := f.pol.Decide(f.req, h.status, h.header, f.respTime)
	body := &handedBody{ReadCloser: f.resp.Body, closed: make(chan struct{})}
	h.kind, h.body, h.shared, h.clientCC = passThrough, body, false, d.ClientCacheControl
	f.c.log.Info("fill: origin ignored the range request; large object not cached (RNG-2)", "request_id", f.id, "key", f.key)
	if f.err = f.fw.Head(h); f.err != nil {
		body.Close()
		return nil
	}
	select {
	case <-body.closed:
	case <-f.ctx.Done():
		body.Close()
	}
	return nil
}

// fstpWhole streams a whole object to leader and followers and stores it
// when policy.Decide allows and it is at most policy.LargeObject. An
// authorized answer stays the leader's unless it may be shared (CCH-1).
func fstpWhole(f *filler) fillStep {
	h := f.head
	defer f.resp.Body.Close()
	d := f.pol.Decide(f.req, h.status, h.header, f.respTime)
	h.clientCC = d.ClientCacheControl
	h.shared = policy.ShareAuthorized(h.shared, d, f.req) // CCH-1
	var sw store.Writer
	if policy.StoreWhole(policy.WorthStoring(d, h.header, f.varyOK), h.size) {
		sw = f.c.beginEntry(f.key, entry.Encode(f.meta(h.status, h.header, d)), h.size)
	}
	if f.err = f.fw.Head(h); f.err != nil {
		if sw != nil {
			sw.Abort()
		}
		return nil
	}
	f.err = f.c.pump(f.resp.Body, f.fw, sw, policy.LargeObject)
	return nil
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

// freshEntry reports whether key has a fresh entry for req's variant.
func (c *Cache) freshEntry(pol *policy.Policy, key string, req *http.Request) bool {
	m, _, rd := c.open(pol, key, req)
	if m == nil {
		return false
	}
	defer rd.Close()
	_, ok := fresh(m)
	return ok
}

// fillHeader is a copy of h for a fill: less the client's Range and
// conditional fields, which the cache evaluates itself.
func fillHeader(h http.Header) http.Header {
	c := h.Clone()
	if c == nil {
		c = http.Header{}
	}
	for _, k := range []string{"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		c.Del(k)
	}
	return c
}
