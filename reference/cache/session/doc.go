// Package session is the reference edge cache's cache path: one client
// request's way through the cache, as named states (Varnish's vbf_stp_*
// steps), and the fills that bring objects from the parent tier. Package
// edge hands it a request it may answer from the cache (a GET or HEAD on a
// route that caches); it answers with one [Answer]: a response head and one
// io.ReadSeeker over stored or arriving bytes, whether they come from the
// store or a running fill (edge need not know which), or what edge must do
// instead (take the uncached path, synthesize a 502/503/504).
//
// The client side (states.go), from [Cache.Lookup]:
//
//	lookup -> hit ---------------------------------------------> deliver
//	       -> join (lead or join the key's fill, wait for its head)
//	            -> revalidated (a 304 refreshed the entry) ------> deliver
//	            -> chunked (a large object, chunk by chunk) -----> deliver
//	            -> whole (a whole object as it streams in) ------> deliver | live
//	            -> passThrough (a large 200: the leader's alone) -> live
//	            -> synthesized (COL-7) | bypass | fail | retry -> lookup
//	deliver -> changed (RNG-5) -> retry -> lookup
//
// The fill side (fill.go), one per key (COL-1), run in the collapse
// Group's context so that it outlives its leader's client (COL-6):
//
//	check (stored meanwhile?) -> fetch -> sort -> revalidate (CCH-4)
//	                                          -> range -> whole | chunked (RNG-1/2)
//	                                          -> passThrough (RNG-2) | whole | fail
//
// The storage format is package entry; HTTP cache semantics package
// policy; storage package store; collapsing package collapse. Delivery
// (writing the head, copying the body, http.ServeContent for ranges and
// conditionals, truncating visibly: TMO-6) and logging stay in edge.
//
// # Caching
//
// The rules (CCH, COL, RNG of behaviour.md). Edge asks the cache about GET
// and HEAD on routes whose cdnPolicy is not BYPASS_CACHE:
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
//     the header went out is a 502/504 with its reason (edge's errors.go).
//   - memory: a fill's body is held once. The store gets the collapse
//     fill's own buffers (pump: collapse.Fill.Bytes, store.Adopt), each
//     whole one when it is full and the trimmed rest at the end, not a
//     copy; a revalidated entry is re-committed over the stored buffers
//     (store.Bodied).
//   - limits: a fill nobody is attached to any more stops after one
//     chunk's worth of body, and fills in flight are bounded (the collapse
//     Group edge builds, fills.go): a miss past the bound is a 503.
//
// A response meant for one client (Set-Cookie, private, no-store, a Vary
// that cannot be keyed, an answer to a request with Authorization that may
// not be stored: CCH-1) is never shared with followers: they fetch for
// themselves. Synthesized 502/504s are shared (COL-7). HEAD is answered
// from a stored GET entry; a HEAD miss takes the uncached path (edge sends
// other methods there too, and deletes the key when an unsafe method's
// response is 2xx/3xx: CCH-7, policy.Invalidates).
//
// The log record's cache_status is "hit", "miss", "revalidated",
// "collapsed" or "bypass"; a collapsed request's record names the fill's
// request in fill_request_id (LOG-1).
package session
