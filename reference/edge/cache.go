package edge

// Caching, first step (CCH, COL, RNG-1 of behaviour.md): whole-object GET
// and HEAD only.
//
//   - A GET or HEAD without Range, on a route whose cdnPolicy is not
//     BYPASS_CACHE, looks its key (policy.Key) up in the store. A fresh
//     entry (policy.Fresh at policy.CurrentAge) is served from the store
//     with Age and "Cache-Status: edgecache; hit".
//   - A GET miss (or a stale entry: revalidation is not done yet, a stale
//     entry is a miss and is replaced by the fill) goes through the
//     collapse Group: one fill per key fetches from the origin with the
//     Group's context (COL-6), and the leader and every follower stream its
//     body ("edgecache; fwd=miss" for the leader, "edgecache; fwd=miss;
//     collapsed" for followers; "fwd=stale" instead of "fwd=miss" when a
//     stale entry was found). The fill tees the body into the store when
//     policy.Decide says Store with a positive TTL and the body is at most
//     policy.LargeObject (1 MiB) bytes; larger objects pass through
//     uncached (RNG-1's large-object caching comes later). The entry is
//     committed only when the origin body completed (COL-7: a truncated
//     body is never cached).
//   - Vary (CCH-6): an entry stores its Vary field lines and the VaryKey of
//     the request that filled it; a lookup whose VaryKey differs is a miss
//     (one variant per key at a time). A follower whose VaryKey differs from
//     the leader's does its own uncached fetch.
//   - A follower never shares a response meant for the leader alone
//     (Set-Cookie, private, no-store, a Vary that cannot be keyed): it does
//     its own uncached fetch. Synthesized 502/504s are shared (COL-7).
//   - HEAD is answered from a stored GET entry; a HEAD miss, a request with
//     Authorization that misses, a Range request and any other method take
//     the uncached path. An unsafe method whose response is 2xx/3xx deletes
//     the key (CCH-7, policy.Invalidates).
//
// The log record's cache_status is "hit", "miss", "collapsed" or "bypass".

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/routing"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// DefaultStoreBytes bounds the memory store New uses without [WithStore].
const DefaultStoreBytes = 256 << 20

// Option configures [New].
type Option func(*options)

type options struct {
	store store.Store
	fetch []fetch.Option
}

// WithStore makes the edge cache objects in st instead of a memory store
// of DefaultStoreBytes.
func WithStore(st store.Store) Option { return func(o *options) { o.store = st } }

// WithFetch passes options on to the fetch engine (fetch.WithGCS, ...).
func WithFetch(fo ...fetch.Option) Option {
	return func(o *options) { o.fetch = append(o.fetch, fo...) }
}

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
}

// fillHead is what a fill publishes to its leader and followers.
type fillHead struct {
	result   *fetch.Result // Response.Body belongs to the fill
	status   int
	header   http.Header // nil when synthesized
	size     int64
	shared   bool // followers may use it
	vary     []string
	variant  string
	clientCC string
}

// serveCached answers v from the cache or through a collapsed fill and
// reports whether it did; false means: take the uncached path.
func (s *Server) serveCached(v *visit) bool {
	r := v.r
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if _, ok := r.Header["Range"]; ok {
		return false
	}
	pol := s.policyFor(v.route.Rule)
	if pol.Mode == policy.BypassCache {
		return false
	}
	key := pol.Key(r)
	fwd := "miss"
	if rd, ok := s.store.Open(key); ok {
		served, stale := s.serveHit(v, pol, key, rd)
		if served {
			return true
		}
		if stale {
			fwd = "stale"
		}
	}
	v.cache, v.cacheHdr = "miss", "edgecache; fwd="+fwd
	if r.Method == http.MethodHead || r.Header.Get("Authorization") != "" {
		return false // never fill a GET entry from a HEAD; never share an authorized response
	}
	req := &http.Request{Method: http.MethodGet, URL: r.URL, Host: r.Host, Header: r.Header.Clone()}
	res, leader := s.group.Do(r.Context(), key, s.fill(pol, key, v.route.Origin, s.originRequest(v), req))
	hv, err := res.Head(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			v.errText = "client gone: " + err.Error()
			return true
		}
		v.status = http.StatusBadGateway
		v.errText = err.Error()
		http.Error(v.w, "502 Bad Gateway: "+err.Error(), http.StatusBadGateway)
		return true
	}
	head := hv.(*fillHead)
	if leader {
		v.result = head.result
	} else {
		if !head.shared {
			return false
		}
		if len(head.vary) > 0 {
			if vk, ok := pol.VaryKey(key, head.vary, r); !ok || vk != head.variant {
				return false
			}
		}
		v.cache, v.cacheHdr = "collapsed", v.cacheHdr+"; collapsed"
	}
	if head.header == nil { // synthesized 502/504 (COL-7)
		v.status = head.status
		h := v.w.Header()
		h.Add("Cache-Status", v.cacheHdr)
		h.Set("Content-Type", "text/plain; charset=utf-8")
		v.w.WriteHeader(head.status)
		fmt.Fprintf(v.w, "%d %s: %s\n", head.status, http.StatusText(head.status), head.result.Reason)
		return true
	}
	body := res.Body()
	defer body.Close()
	s.writeHead(v, head.status, head.header, head.size, head.clientCC)
	s.sendBody(v, body)
	return true
}

// serveHit serves a fresh stored entry; stale reports an entry that was
// not fresh. It closes rd.
func (s *Server) serveHit(v *visit, pol policy.Policy, key string, rd store.Reader) (served, stale bool) {
	defer rd.Close()
	var m entryMeta
	if err := json.Unmarshal(rd.Meta(), &m); err != nil {
		return false, false
	}
	if len(m.Vary) > 0 {
		if vk, ok := pol.VaryKey(key, m.Vary, v.r); !ok || vk != m.Variant {
			return false, false
		}
	}
	age := policy.CurrentAge(m.Header, m.ReqTime, m.RespTime, time.Now())
	if !policy.Fresh(policy.Decision{Store: true, TTL: m.TTL, NoCache: m.NoCache}, age) {
		return false, true
	}
	v.cache, v.cacheHdr = "hit", "edgecache; hit"
	h := v.w.Header()
	h.Set("Age", strconv.FormatInt(int64(age/time.Second), 10))
	s.writeHead(v, m.Status, m.Header, rd.Size(), m.ClientCC)
	if v.r.Method == http.MethodHead {
		return true, false
	}
	s.sendBody(v, rd)
	return true, false
}

// writeHead sends status and header (copied, with the route's response
// header action, Cache-Status and Content-Length when size is known).
func (s *Server) writeHead(v *visit, status int, header http.Header, size int64, clientCC string) {
	h := v.w.Header()
	for k, vals := range header {
		if k == "Age" && h.Get("Age") != "" {
			continue
		}
		h[k] = slices.Clone(vals)
	}
	if clientCC != "" {
		h.Set("Cache-Control", clientCC)
	}
	routing.ApplyResponseHeaders(h, v.route.Rule.HeaderAction)
	h.Add("Cache-Status", v.cacheHdr)
	if size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(size, 10))
	}
	v.status = status
	v.w.WriteHeader(status)
}

// fill is the one origin fetch of a key: it publishes the head, streams
// the body into the Group and, when it may be stored, into the store,
// committing only a complete body.
func (s *Server) fill(pol policy.Policy, key, origin string, oreq fetch.Request, req *http.Request) collapse.FillFunc {
	return func(ctx context.Context, fw *collapse.Fill) error {
		reqTime := time.Now()
		res := s.engine.Fetch(ctx, origin, oreq)
		s.metrics.observeFetch(res)
		head := &fillHead{result: res, status: res.Status, size: -1, shared: true}
		if res.Response == nil {
			return fw.Head(head)
		}
		resp := res.Response
		defer resp.Body.Close()
		respTime := time.Now()
		hdr := resp.Header.Clone()
		upstream.RemoveHopByHop(hdr)
		head.status, head.header, head.size = resp.StatusCode, hdr, resp.ContentLength
		head.vary = hdr.Values("Vary")
		cc := policy.ParseCacheControl(hdr)
		_, cookie := hdr["Set-Cookie"]
		head.shared = !cookie && !cc.Has("private") && !cc.Has("no-store")
		varyOK := true
		if len(head.vary) > 0 {
			head.variant, varyOK = pol.VaryKey(key, head.vary, req)
			head.shared = head.shared && varyOK
		}
		d := pol.Decide(req, resp.StatusCode, hdr, respTime)
		head.clientCC = d.ClientCacheControl

		var sw store.Writer
		if d.Store && !d.NoCache && d.TTL > 0 && varyOK && resp.ContentLength <= policy.LargeObject {
			if w, err := s.store.Begin(key); err == nil {
				sw = w
				defer func() {
					if sw != nil {
						sw.Abort()
					}
				}()
				meta, _ := json.Marshal(entryMeta{
					Status: resp.StatusCode, Header: hdr, ReqTime: reqTime, RespTime: respTime,
					TTL: d.TTL, NoCache: d.NoCache, ClientCC: d.ClientCacheControl,
					Vary: head.vary, Variant: head.variant,
				})
				sw.SetMeta(meta)
				if resp.ContentLength >= 0 {
					sw.SetSize(resp.ContentLength)
				}
			}
		}
		if err := fw.Head(head); err != nil {
			return err
		}
		buf := s.buffer()
		defer s.bufs.Put(buf)
		var n int64
		for {
			m, rerr := resp.Body.Read(*buf)
			if m > 0 {
				p := (*buf)[:m]
				if _, err := fw.Write(p); err != nil {
					return err
				}
				if sw != nil {
					n += int64(m)
					if n > policy.LargeObject {
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
}
