package policy

import "net/http"

// Sharing and storing a fill's response: the decisions the edge's cache
// fill takes once it has the origin's response head. They are pure
// functions of the response, the request and the Decision, so that what the
// cache does with a response can be read (and tested) here rather than in
// the fill's plumbing.

// ShareWithFollowers reports whether a fill's response may be handed to
// the requests that joined the fill (COL-1): never one meant for a single
// client (Set-Cookie, Cache-Control private or no-store: CCH-1) or one
// whose Vary cannot be keyed (varyKeyed false: CCH-6). A synthesized
// 502/504 has no head to look at and is always shared (COL-7).
func ShareWithFollowers(h http.Header, varyKeyed bool) bool {
	if _, cookie := h["Set-Cookie"]; cookie {
		return false
	}
	cc := ParseCacheControl(h)
	return !cc.Has("private") && !cc.Has("no-store") && varyKeyed
}

// ShareAuthorized narrows shared once the fill's Decision is known
// (CCH-1): the answer to a request with Authorization that may not be
// stored stays the leader's.
func ShareAuthorized(shared bool, d Decision, req *http.Request) bool {
	return shared && (d.Store || req.Header.Get("Authorization") == "")
}

// WorthStoring reports whether a response the Decision allows to store is
// worth keeping: it can be keyed (varyKeyed, CCH-6) and it is fresh for a
// while or can be revalidated (an ETag or Last-Modified, CCH-4).
func WorthStoring(d Decision, h http.Header, varyKeyed bool) bool {
	return d.Store && varyKeyed &&
		((d.TTL > 0 && !d.NoCache) || h.Get("Etag") != "" || h.Get("Last-Modified") != "")
}

// StoreWhole reports whether a whole (not chunked) response is stored: it
// is worth storing and at most LargeObject bytes long (size -1: unknown,
// decided while the body streams). Larger objects are cached in chunks
// (RNG-1/2).
func StoreWhole(worth bool, size int64) bool { return worth && size <= LargeObject }

// Large is what the cache does with an object over LargeObject that the
// origin sends in chunks (a 206 to a chunk's range request, RNG-1/2).
type Large struct {
	// Keep: the manifest and the chunks are stored.
	Keep bool
	// Cacheable is RNG-1's verdict on the origin's response (validator,
	// Date, Content-Length, Content-Range); Why says why not.
	Cacheable bool
	Why       string
}

// DecideLarge decides a chunked object (RNG-1): h is the 206's header;
// parentWhy is a parent tier's reason the origin's response may not be
// stored ("" for none, SHD-1 with RNG-1: the parent saw what the child
// cannot); worth is WorthStoring of the whole object and shared whether
// followers may use it (a response meant for one client is not kept).
func DecideLarge(h http.Header, parentWhy string, worth, shared bool) Large {
	ok, why := LargeObjectCacheable(http.StatusPartialContent, h)
	if parentWhy != "" {
		ok, why = false, "the parent tier's origin response: "+parentWhy
	}
	return Large{Keep: ok && worth && shared, Cacheable: ok, Why: why}
}
