package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/outcome"
)

// maxPasses bounds the lookups of one request whose object keeps changing
// between chunk fills (RNG-5).
const maxPasses = 3

// step is one state of a request in the cache; it returns the next, or
// nil when the Answer is made.
type step func(*session) step

// session is one client request on its way through the cache.
type session struct {
	c      *Cache
	req    Request
	passes int
	p      pass
	a      Answer
}

// pass is what one lookup holds; a retry releases it and starts afresh.
type pass struct {
	stale   *entry.Meta // the entry found, fresh or not (shared: never modified)
	staleRd store.Reader
	res     *collapse.Result // the fill led or joined
	leader  bool
	detach  func()
	head    *fillHead
	// collapsed is the Cache-Status suffix of a follower.
	collapsed string
	// what stpDeliver serves: m's body from rd, or (chunked) through
	// chunk fills, chunk first of which is fill's body.
	m     *entry.Meta // shared with the store's note or the fill's head: never modified
	rd    io.ReadSeeker
	fill  *collapse.Result
	first int64
	body  io.Closer // a reader this pass opened (fillSeeker, object, fill body)
	hbody io.Closer // a passThrough body handed to the leader
}

// release closes what the pass holds, the body first, the stale entry
// last.
func (s *session) release() {
	p := &s.p
	if p.body != nil {
		p.body.Close()
	}
	if p.hbody != nil {
		p.hbody.Close()
	}
	if p.detach != nil {
		p.detach()
	}
	if p.staleRd != nil {
		p.staleRd.Close()
	}
	s.p = pass{}
}

// stpLookup opens the key's entry for the request's variant (CCH-6). A
// fresh one is a hit (policy.Fresh at policy.CurrentAge), served with Age;
// a stale one is revalidated through a fill (CCH-4); without one the
// object is filled, except for a HEAD, which never fills a GET entry.
func stpLookup(s *session) step {
	r := s.req.HTTP
	var memo *entry.Memo
	s.p.stale, memo, s.p.staleRd = s.c.open(s.req.Policy, s.req.Key, r)
	fwd := "miss"
	if s.p.stale != nil {
		if age, ok := fresh(s.p.stale); ok {
			s.a.Cache, s.a.Member, s.a.Memo = "hit", s.c.hit, memo
			s.a.Age = strconv.FormatInt(int64(age/time.Second), 10)
			s.p.m, s.p.rd = s.p.stale, s.p.staleRd
			return stpDeliver
		}
		fwd = "stale"
	}
	s.a.Cache, s.a.Member = "miss", s.c.name+"; fwd="+fwd
	if r.Method == http.MethodHead && s.p.stale == nil {
		return stpBypass
	}
	return stpJoin
}

// stpJoin leads or joins the key's one fill (COL-1) and waits for its
// head. A leader takes whatever the fill hands it, even after its client
// left (COL-6); a follower uses only a response meant for sharing and for
// its own Vary variant (CCH-1, CCH-6), else it fetches for itself.
func stpJoin(s *session) step {
	r := s.req.HTTP
	req := &http.Request{Method: http.MethodGet, URL: r.URL, Host: r.Host, Header: r.Header.Clone()}
	f := &filler{c: s.c, pol: s.req.Policy, key: s.req.Key, up: s.req.Upstream, id: s.req.ID, req: req,
		first: firstChunk(r.Header.Get("Range")), stale: s.p.stale}
	f.h = fillHeader(f.up.Header())
	s.p.res, s.p.leader = s.c.group.Do(context.WithoutCancel(r.Context()), s.req.Key, f.run)
	s.p.detach = attach(r.Context(), s.p.res)
	hctx := r.Context()
	if s.p.leader {
		hctx = context.WithoutCancel(hctx) // the leader takes what the fill hands it
	}
	hv, err := s.p.res.Head(hctx)
	if err != nil {
		return s.fail("filling the object", err)
	}
	head, ok := hv.(*fillHead)
	if !ok { // a key's fills publish *fillHead; never panic on anything else
		return s.fail("filling the object", fmt.Errorf("the fill of %q published a %T head", s.req.Key, hv))
	}
	s.p.head = head
	if head.kind == appeared {
		return stpRetry
	}
	if s.p.leader {
		s.a.Result = head.result
		if head.body != nil {
			s.p.hbody = head.body
			if r.Context().Err() != nil {
				return stpGone
			}
		}
	} else {
		if !head.shared || head.kind == passThrough {
			return stpBypass
		}
		if len(head.vary) > 0 {
			if vk, ok := s.req.Policy.VaryKey(s.req.Key, head.vary, r); !ok || vk != head.variant {
				return stpBypass
			}
		}
		s.a.Cache, s.a.FillID, s.p.collapsed = "collapsed", head.leaderID, "; collapsed"
	}
	s.a.Member += s.p.collapsed
	return afterHead(head.kind)
}

// afterHead is the state that follows stpJoin for a kind of fill head.
func afterHead(k fillKind) step {
	switch k {
	case synthesized:
		return stpSynthesized
	case chunked:
		return stpChunked
	case notModified:
		return stpRevalidated
	case passThrough:
		return stpPassThrough
	}
	return stpWhole
}

// stpSynthesized gives every caller of a fill that got no usable response
// the fill's 502/504 (COL-7, ATT-8, ATT-9).
func stpSynthesized(s *session) step {
	s.a.Kind, s.a.Status, s.a.Reason = Synthesized, s.p.head.status, s.p.head.result.Reason
	return nil
}

// stpRevalidated serves the stored body with the headers and lifetime a
// 304 refreshed (CCH-4), if the entry the request found is the version
// that was revalidated; else the request fetches for itself.
func stpRevalidated(s *session) step {
	if s.p.leader {
		s.a.Cache = "revalidated"
	}
	s.a.Member = s.c.name + "; fwd=stale; fwd-status=304" + s.p.collapsed
	if s.p.stale == nil || s.p.stale.Validator != s.p.head.meta.Validator {
		return stpBypass // joined another request's revalidation without the entry
	}
	s.p.m, s.p.rd = &s.p.head.meta, s.p.staleRd
	return stpDeliver
}

// stpChunked serves a large object chunk by chunk (RNG-1/2), the first
// chunk it needs from the running fill's body.
func stpChunked(s *session) step {
	s.p.m, s.p.rd, s.p.fill, s.p.first = &s.p.head.meta, nil, s.p.res, s.p.head.first
	return stpDeliver
}

// stpWhole serves a whole object as the fill streams it in (COL-5): a 200
// of known size to a request with a Range or conditional header through
// http.ServeContent over the arriving bytes (RNG-3; a fill failing midway
// truncates it visibly), anything else as it arrives.
func stpWhole(s *session) step {
	h := s.p.head
	if h.status == http.StatusOK && h.size >= 0 && evaluatesLocally(s.req.HTTP) {
		s.p.m = &entry.Meta{Status: h.status, Header: h.header, ClientCC: h.clientCC}
		fs := &fillSeeker{res: s.p.res, size: h.size}
		s.p.body, s.p.rd = fs, fs
		return stpDeliver
	}
	body := s.p.res.Body()
	s.p.body = body
	return s.live(body)
}

// stpPassThrough hands the leader a large 200 of an origin that ignored
// the range request (RNG-2): it is not cached.
func stpPassThrough(s *session) step { return s.live(s.p.head.body) }

// live answers with the fill's head and body as they arrive.
func (s *session) live(body io.ReadCloser) step {
	h := s.p.head
	s.a.Kind, s.a.Status, s.a.Header, s.a.Size, s.a.ClientCC = Live, h.status, h.header, h.size, h.clientCC
	s.a.Body = &stream{ReadCloser: body}
	return nil
}

// stpDeliver answers from an entry: a 200 through http.ServeContent
// (RNG-3), other statuses as stored. A chunked entry reads its chunks from
// the store or through chunk fills; the chunk holding the first byte the
// answer needs is opened before anything is sent, so that a changed object
// restarts the request (RNG-5) and a failed fill is a 502/504.
func stpDeliver(s *session) step {
	m := s.p.m
	if m.Status != http.StatusOK {
		s.a.Kind, s.a.Status, s.a.Header, s.a.Size, s.a.ClientCC, s.a.Body = Stored, m.Status, m.Header, sizeOf(s.p.rd), m.ClientCC, s.p.rd
		return nil
	}
	if m.Chunked {
		r := s.req.HTTP
		obj := &object{c: s.c, ctx: r.Context(), key: s.req.Key, m: *m, up: s.req.Upstream, id: s.req.ID,
			fill: s.p.fill, first: s.p.first}
		if m.Transient && m.Validator == "" {
			obj.private = s.req.ID // versions cannot be told apart: fill for this request alone
		}
		s.p.body, s.p.rd = obj, obj
		if r.Method == http.MethodGet {
			if err := obj.prime(firstOffset(r.Header.Get("Range"), m.Size)); err != nil {
				if errors.Is(err, ErrValidatorChanged) {
					return stpChanged
				}
				return s.fail("filling the object", err)
			}
		}
	}
	s.a.Kind, s.a.Status, s.a.Header, s.a.Size, s.a.ClientCC = Ranged, m.Status, m.Header, sizeOf(s.p.rd), m.ClientCC
	s.a.Body, s.a.Unstorable = s.p.rd, m.Unstorable
	return nil
}

// sizeOf is the size of rd's body (a store.Reader, fillSeeker or object),
// -1 if it does not say.
func sizeOf(rd io.ReadSeeker) int64 {
	if sr, ok := rd.(interface{ Size() int64 }); ok {
		return sr.Size()
	}
	return -1
}

// stpChanged: the object changed between chunk fills before anything was
// sent (RNG-5). A fill this request joined is of the old version: let it
// end, so that the retry does not join it.
func stpChanged(s *session) step {
	s.c.log.Info("object changed during the request: refetching", "request_id", s.req.ID, "key", s.req.Key) // RNG-5
	s.p.body.Close()
	s.p.body = nil
	if f := s.p.fill; f != nil {
		select {
		case <-f.Done():
		case <-s.req.HTTP.Context().Done():
			return stpGone
		}
	}
	return stpRetry
}

// stpRetry looks the key up again (nothing was sent), at most maxPasses
// times; an object that keeps changing is a 502 (RNG-5).
func stpRetry(s *session) step {
	s.release()
	s.a.Age = ""
	if s.passes++; s.passes < maxPasses {
		return stpLookup
	}
	s.a.Kind, s.a.Status, s.a.Reason = Synthesized, http.StatusBadGateway, outcome.HTTPResponseIncomplete
	s.a.Detail = "the object kept changing between chunk fills (RNG-5)"
	return nil
}

// stpBypass sends the request the uncached way.
func stpBypass(s *session) step { s.a.Kind = Bypass; return nil }

// stpGone ends a request whose client went away.
func stpGone(s *session) step { s.a.Kind = Gone; return nil }

// fail ends the request with err, before anything was sent.
func (s *session) fail(what string, err error) step {
	s.a.Kind, s.a.What, s.a.Err = Failed, what, err
	return nil
}

// open opens key's entry for r's variant, or returns nil (a miss), with
// the entry's memo (entry.DecodeMemo).
func (c *Cache) open(pol *policy.Policy, key string, r *http.Request) (*entry.Meta, *entry.Memo, store.Reader) {
	rd, ok := c.store.Open(key)
	if !ok {
		return nil, nil, nil
	}
	m, memo, err := entry.DecodeMemo(rd)
	if err != nil {
		rd.Close()
		return nil, nil, nil
	}
	if len(m.Vary) > 0 {
		if vk, ok := pol.VaryKey(key, m.Vary, r); !ok || vk != m.Variant {
			rd.Close()
			return nil, nil, nil
		}
	}
	return m, memo, rd
}

// fresh reports the entry's current age and whether it may be used
// without revalidation.
func fresh(m *entry.Meta) (time.Duration, bool) {
	date, dated := m.DateField()
	age := policy.CurrentAgeDated(date, dated, m.Header, m.ReqTime, m.RespTime, time.Now())
	return age, policy.Fresh(policy.Decision{Store: true, TTL: m.TTL, NoCache: m.NoCache}, age)
}
