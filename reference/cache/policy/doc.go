// Package policy is the reference edge cache's cache semantics: what may be
// stored, for how long, under which key, and how a stored response is aged,
// revalidated, merged and invalidated. It follows Envoy's cache_v2 split:
// semantics here, storage and the upstream client elsewhere. Everything is a
// pure function of the request, the response status and headers, the route's
// cdnPolicy and the times passed in; there is no I/O and no clock.
//
// Rules are ../shared/spec/behaviour.md's CCH-1..7 and RNG-1, cited by ID.
//
// The cache fill's decisions on a response it got (share.go) are here too:
// whether followers of a collapsed fill may use it (ShareWithFollowers,
// ShareAuthorized: CCH-1, CCH-6, COL-7), whether it is worth storing
// (WorthStoring, StoreWhole) and what becomes of an object over 1 MiB sent
// in chunks (DecideLarge: RNG-1).
//
// # Interpretations (INT) where the rules are silent
//
//   - Positive and negative statuses. 200, 203, 204 and 206 are "positive"
//     and follow the cache mode (CCH-2). Every other CCH-1 status (3xx, 4xx,
//     5xx) is "negative" and is stored only when negativeCaching is on AND the
//     code is in the effective table: the CCH-5 defaults (300/301/308: 10m,
//     404/410/451: 120s, 405/501: 60s) or, when negativeCachingPolicy is
//     non-empty, exactly its codes. With negative caching off no 3xx/4xx/5xx
//     is stored in any mode, even with origin directives, and even under
//     FORCE_CACHE_ALL ("every cacheable status" of CCH-2 is read as every
//     status cacheable under CCH-1 and CCH-5). A negativeCachingPolicy
//     without negativeCaching: true is ignored.
//   - Negative TTL. Under FORCE_CACHE_ALL the table TTL overrides every
//     origin directive. In CACHE_ALL_STATIC and USE_ORIGIN_HEADERS an
//     explicit origin freshness lifetime (s-maxage, max-age, Expires) wins
//     (capped at maxTtl in CACHE_ALL_STATIC), otherwise the table TTL is
//     used (as Cloud CDN documents for negative caching).
//   - CACHE_ALL_STATIC: "directives" means an explicit freshness lifetime.
//     A static type (StaticContentType) without one gets defaultTtl; any
//     type with one gets it capped at maxTtl; a non-static type without one
//     is not stored, unless it says no-cache (CCH-4: stored, revalidated
//     before each use, TTL 0).
//   - USE_ORIGIN_HEADERS: only an explicit freshness lifetime (or no-cache,
//     CCH-4) makes a response storable; heuristic freshness (RFC 9111 4.2.2)
//     is never used; maxTtl does not apply (Media CDN forbids it there).
//   - CCH-3 "Expires is ignored when Cache-Control is present" is taken
//     literally: any non-empty Cache-Control field disables Expires, even
//     one without max-age. Expires that is invalid or not after Date means
//     "already expired": TTL 0 (RFC 9111 5.3). Valid is strict
//     (ParseHTTPDate): one field line holding exactly an IMF-fixdate,
//     rfc850-date or asctime-date, two-digit hours and days, single
//     spaces, "GMT"; several Expires lines are stale (RFC 9111 4.2.1). Freshness from Expires is Expires - Date
//     (Date absent or invalid: now).
//   - A TTL of 0 (max-age=0, a 0s TTL in the configuration) is stored and
//     revalidated before every use ("0 means always revalidate").
//   - Invalid or duplicate directive values: the first occurrence counts, an
//     invalid max-age/s-maxage is ignored; delta-seconds are capped at
//     2147483648 s (RFC 9111 1.2.2).
//   - private and no-cache with a field list are treated like the
//     unqualified directives.
//   - must-revalidate, proxy-revalidate and a valid s-maxage (RFC 9111 5.2.2.10)
//     set MustRevalidate. FORCE_CACHE_ALL ignores all origin directives, so
//     MustRevalidate and NoCache are never set there.
//   - Authorization (RFC 9111 3.5): storable only with public, s-maxage or
//     must-revalidate, in every mode including FORCE_CACHE_ALL. Set-Cookie
//     and a request no-store forbid storing in every mode.
//   - Vary (CCH-6): allowed on Accept, Accept-Encoding, Origin and the
//     route's includedHeaderNames; Vary: * or any other header makes the
//     response not storable (Decide) and VaryKey return ok=false.
//   - clientTtl (ClientCacheControl) applies to CACHE_ALL_STATIC and
//     FORCE_CACHE_ALL only, and only when set: "public, max-age=N" with N
//     the origin max-age clamped to clientTtl (CACHE_ALL_STATIC, when the
//     origin sent max-age), otherwise min(clientTtl, the decision's TTL)
//     (= defaultTtl for positive responses).
//   - Cache key: "[scheme:][//host]path[?query]" then one line per
//     included header ("\nheader:name=v1,v2", values joined with ",") and
//     cookie ("\ncookie:name=value"); absent ones are written without "=".
//     Host is lower-cased without its port (IPv6 keeps its brackets);
//     query pairs are sorted by decoded name, then by their raw text, and
//     keep their raw encoding; empty pairs are dropped. Scheme is the
//     request URL's, else https with TLS, else http.
//   - Merge304 replaces stored fields with the 304's except Content-Length,
//     Content-Range, Content-Encoding, Transfer-Encoding, Set-Cookie and
//     hop-by-hop fields; a stored Age the 304 does not repeat is dropped
//     (the age restarts at the revalidation). Inputs are not modified.
//   - CurrentAge: an absent or invalid Date gives apparent age 0; an
//     absent Age counts as 0. An Age that is not one field line holding one
//     non-negative integer ("old, 0", "0, 0", "-5", two lines) makes the
//     response stale (age 2^31 s). RFC 9111 5.1 says to use a list's first
//     member or ignore an invalid field; the reference is stricter: a cache
//     that cannot tell a response's age does not serve it as fresh.
//   - RNG-1: LargeObjectCacheable checks only the headers; the caller
//     applies it to objects over LargeObject bytes (or of unknown length).
//     A 206's Content-Length must match its Content-Range.
package policy
