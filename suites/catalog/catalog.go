// Package catalog is the list of rules of ../shared/spec/behaviour.md: ID,
// area, level and text. Specs cite rule IDs in Ginkgo labels; the results
// file and the report list every rule of the catalog, with or without a
// spec, so a rule nobody tests yet shows as such.
//
// When behaviour.md changes, change this list with it: TestCatalogMatchesBehaviourMD
// compares the two (IDs, order, levels, texts) and fails until they agree.
package catalog

import (
	"slices"
	"strconv"
	"strings"
)

// Level is how a rule is grounded.
type Level string

// Levels (behaviour.md): DOC rules are stated by the documentation, INT
// rules are the reference's interpretation (reported as observations), EXT
// rules go beyond Media CDN (run against the reference unless asked).
const (
	DOC Level = "DOC"
	INT Level = "INT"
	EXT Level = "EXT"
)

// Rule is one numbered rule.
type Rule struct {
	ID    string `json:"id"`
	Area  string `json:"area"`
	Level Level  `json:"level"`
	Text  string `json:"text"`
}

// Areas in behaviour.md order, with their titles.
var areas = []struct{ ID, Title string }{
	{"MTH", "Methods and routing"},
	{"ATT", "Attempts, retries and failover"},
	{"TMO", "Timeouts"},
	{"RDR", "Redirects from the origin"},
	{"HST", "Host header and SNI"},
	{"PRT", "Protocols"},
	{"BKT", "Bucket origins"},
	{"COL", "Request collapsing"},
	{"SHD", "Origin shielding"},
	{"CCH", "Caching"},
	{"RNG", "Large objects and ranges"},
	{"LOG", "Logging"},
}

var rules = []Rule{
	{ID: "MTH-1", Area: "MTH", Level: DOC, Text: "without routeMethods, only GET, HEAD and OPTIONS are allowed; another method gets 405."},
	{ID: "MTH-2", Area: "MTH", Level: DOC, Text: "a GET with a body, or a request with trailers, gets 400."},
	{ID: "MTH-3", Area: "MTH", Level: DOC, Text: "an unknown host, or a path that matches no route, gets 404."},
	{ID: "MTH-4", Area: "MTH", Level: DOC, Text: "route rules are tried by ascending priority; the first match wins."},
	{ID: "MTH-5", Area: "MTH", Level: DOC, Text: "host matching: exact host first, then the longest wildcard (*.example.com, foo.*), then *; the port in the request's Host is ignored."},
	{ID: "MTH-6", Area: "MTH", Level: DOC, Text: "before matching, repeated slashes are merged and dot segments removed; no percent-decoding and no case folding (unless ignoreCase)."},
	{ID: "MTH-7", Area: "MTH", Level: DOC, Text: "rewrites (hostRewrite, pathPrefixRewrite, pathTemplateRewrite) apply after matching; routes are not re-matched and the cache key is not changed by a rewrite."},
	{ID: "ATT-1", Area: "ATT", Level: DOC, Text: "retries, failover and redirect following happen only for GET, HEAD and OPTIONS."},
	{ID: "ATT-2", Area: "ATT", Level: DOC, Text: "if an unsafe method (POST, PUT, PATCH, DELETE) fails on its first attempt to the primary origin, the client gets 502 and no other attempt is made."},
	{ID: "ATT-3", Area: "ATT", Level: DOC, Text: "the primary origin is tried up to its maxAttempts (default 1); then its failoverOrigin is tried under that origin's own maxAttempts, retryConditions, originRedirect and failoverOrigin."},
	{ID: "ATT-4", Area: "ATT", Level: DOC, Text: "at most 4 origin attempts per client request across all origins, failovers and followed redirects, whatever each origin's maxAttempts says."},
	{ID: "ATT-5", Area: "ATT", Level: DOC, Text: "retry conditions: CONNECT_FAILURE = DNS, routing, TCP and TLS handshake errors and connect timeouts; HTTP_5XX = any 5xx status; GATEWAY_ERROR = 502, 503, 504; RETRIABLE_4XX = 409 and 429; NOT_FOUND = 404; FORBIDDEN = 403. Each origin's list applies only to attempts against that origin."},
	{ID: "ATT-6", Area: "ATT", Level: DOC, Text: "a response whose status matches none of the current origin's retry conditions ends the chain and is returned to the client as is (primary fails its TLS handshake, failover answers 404 → client sees 404)."},
	{ID: "ATT-7", Area: "ATT", Level: DOC, Text: "if every attempt ends in a status that matches a retry condition, the client gets 502, not the origin's status."},
	{ID: "ATT-8", Area: "ATT", Level: DOC, Text: "if no attempt produces an HTTP response at all, the client gets 502."},
	{ID: "ATT-9", Area: "ATT", Level: DOC, Text: "if maxAttemptsTimeout passes before a usable response, the client gets 504."},
	{ID: "ATT-10", Area: "ATT", Level: INT, Text: "a status outside every retry condition's reach is \"usable\" even if it is an error (4xx/5xx); it is passed through, with the origin's body."},
	{ID: "ATT-11", Area: "ATT", Level: INT, Text: "retries happen immediately, without backoff."},
	{ID: "TMO-1", Area: "TMO", Level: DOC, Text: "connectTimeout applies to each attempt separately and runs from the start of the attempt (DNS, TCP, TLS, writing the request) until the response headers arrive; when it passes, the attempt counts as a connect failure (CONNECT_FAILURE)."},
	{ID: "TMO-2", Area: "TMO", Level: DOC, Text: "maxAttemptsTimeout caps the time across all attempts of one client request, failovers and redirects included; only the value of the route's (first) origin counts."},
	{ID: "TMO-3", Area: "TMO", Level: DOC, Text: "once a response has been chosen, connectTimeout and maxAttemptsTimeout no longer apply; only readTimeout and responseTimeout do."},
	{ID: "TMO-4", Area: "TMO", Level: DOC, Text: "each attempt uses the connectTimeout, readTimeout and responseTimeout of the origin that attempt goes to; a followed redirect uses those of the origin that returned the redirect."},
	{ID: "TMO-5", Area: "TMO", Level: DOC, Text: "readTimeout is the longest allowed gap between two reads of the response body; responseTimeout is the longest allowed time for the whole body, measured from its first byte; readTimeout is capped by responseTimeout."},
	{ID: "TMO-6", Area: "TMO", Level: DOC, Text: "when readTimeout or responseTimeout passes after headers went to the client, the response is truncated (the client sees an incomplete body, never a complete-looking one) and the event is logged; a truncated response is never cached."},
	{ID: "TMO-7", Area: "TMO", Level: DOC, Text: "the last attempt's connectTimeout is shortened so that the maxAttemptsTimeout deadline holds."},
	{ID: "TMO-8", Area: "TMO", Level: DOC, Text: "primary with maxAttemptsTimeout 5s, maxAttempts 1 and a failover; the primary fails within 1s (bad TLS certificate) → the failover gets the remaining ≈4s."},
	{ID: "TMO-9", Area: "TMO", Level: DOC, Text: "maxAttempts 3, maxAttemptsTimeout 10s, no failover → up to three attempts, all within 10s."},
	{ID: "RDR-1", Area: "RDR", Level: DOC, Text: "only the 3xx codes listed in redirectConditions are followed (301, 302, 303, 307, 308 by name); any other 3xx is returned to the client."},
	{ID: "RDR-2", Area: "RDR", Level: DOC, Text: "following a redirect is one more attempt, counted against the maxAttempts of the origin that returned it and against maxAttemptsTimeout and the cap of ATT-4."},
	{ID: "RDR-3", Area: "RDR", Level: DOC, Text: "redirects are followed only for GET, HEAD and OPTIONS."},
	{ID: "RDR-4", Area: "RDR", Level: INT, Text: "the redirected request keeps its method (HEAD stays HEAD) and goes to the Location host with the protocol of the origin that returned it; Host and SNI are the Location host."},
	{ID: "RDR-5", Area: "RDR", Level: INT, Text: "once redirects would exceed the attempt cap, the client gets 502."},
	{ID: "RDR-6", Area: "RDR", Level: EXT, Text: "an optional allow-list of redirect target hosts protects against open-redirect abuse (the documentation warns of it); a redirect to a host outside the list is not followed and is returned to the client."},
	{ID: "HST-1", Area: "HST", Level: DOC, Text: "the Host sent to the origin is the origin's originOverrideAction.urlRewrite.hostRewrite if set, else the route's urlRewrite.hostRewrite if set, else the client's Host."},
	{ID: "HST-2", Area: "HST", Level: DOC, Text: "a failover origin sees the same Host as the primary unless its own hostRewrite is set."},
	{ID: "HST-3", Area: "HST", Level: DOC, Text: "for HTTP2 and HTTPS, the TLS SNI equals the Host sent to the origin, and the certificate is verified against that name."},
	{ID: "HST-4", Area: "HST", Level: DOC, Text: "for gs:// origins any hostRewrite is ignored; the Host comes from the bucket name."},
	{ID: "HST-5", Area: "HST", Level: DOC, Text: "collapsed fills carry the leader's request headers, User-Agent included."},
	{ID: "HST-6", Area: "HST", Level: DOC, Text: "headers from originOverrideAction.headerAction apply only to that origin and take precedence over client headers and route-level header actions."},
	{ID: "PRT-1", Area: "PRT", Level: DOC, Text: "HTTP2 is h2 over TLS with no fallback: an origin that cannot speak h2 fails the attempt (a connect failure), and the client ends with 502 when nothing else succeeds."},
	{ID: "PRT-2", Area: "PRT", Level: DOC, Text: "HTTPS is HTTP/1.1 over TLS and never negotiates h2; HTTP is cleartext HTTP/1.1."},
	{ID: "PRT-3", Area: "PRT", Level: DOC, Text: "default ports: 443 for HTTP2 and HTTPS, 80 for HTTP."},
	{ID: "PRT-4", Area: "PRT", Level: DOC, Text: "an invalid origin certificate (expired, untrusted, wrong name) is a TLS handshake error, i.e. a connect failure."},
	{ID: "PRT-5", Area: "PRT", Level: DOC, Text: "requests to the origin carry no TE header; origin trailers are neither cached nor forwarded."},
	{ID: "BKT-1", Area: "BKT", Level: DOC, Text: "an origin with awsV4Authentication signs every origin request with AWS Signature Version 4 (not SigV4a) using accessKeyId, the secret named by secretAccessKeyVersion, and originRegion, for service s3; only GET, HEAD and OPTIONS."},
	{ID: "BKT-2", Area: "BKT", Level: INT, Text: "the signature covers host, x-amz-date and x-amz-content-sha256 (set to UNSIGNED-PAYLOAD); it is computed after every rewrite, on the exact Host sent."},
	{ID: "BKT-3", Area: "BKT", Level: DOC, Text: "a virtual-hosted bucket host (BUCKET.s3.REGION.amazonaws.com or an S3-compatible equivalent) is used; a different service host needs a hostRewrite."},
	{ID: "BKT-4", Area: "BKT", Level: DOC, Text: "gs://BUCKET origins reach Cloud Storage with the Host set from the bucket name; a private bucket is read with the service's own credentials (a bearer token)."},
	{ID: "BKT-5", Area: "BKT", Level: DOC, Text: "Cloud Storage responses always carry Cache-Control, and are cached by it unless the route uses FORCE_CACHE_ALL."},
	{ID: "COL-1", Area: "COL", Level: DOC, Text: "concurrent cache fills for the same cache key on one node become one origin request."},
	{ID: "COL-2", Area: "COL", Level: DOC, Text: "the origin sees only the leader's request (its headers and User-Agent); both the client requests and the one fill are logged."},
	{ID: "COL-3", Area: "COL", Level: DOC, Text: "requests with different cache keys are never collapsed."},
	{ID: "COL-4", Area: "COL", Level: DOC, Text: "collapsing is on by default."},
	{ID: "COL-5", Area: "COL", Level: INT, Text: "followers receive the response as it streams in; they do not wait for the fill to complete."},
	{ID: "COL-6", Area: "COL", Level: INT, Text: "the fill outlives the leader's client: if the leader disconnects, followers still get the whole object."},
	{ID: "COL-7", Area: "COL", Level: INT, Text: "if the fill fails before a usable response, followers receive the same final error status (502/504) the leader gets; a fill that fails mid-body truncates every follower and is not cached."},
	{ID: "SHD-1", Area: "SHD", Level: DOC, Text: "tiers: an edge node fills from a shield node, which fills from the origin; each tier collapses fills (COL-1), so N edges produce at most one origin fill per key."},
	{ID: "SHD-2", Area: "SHD", Level: EXT, Text: "in the reference, a node's parent tier is configured explicitly (a flexible-shielding region maps to a named shield node)."},
	{ID: "CCH-1", Area: "CCH", Level: DOC, Text: "cacheable only for GET/HEAD, status in {200, 203, 204, 206, 300, 301, 302, 307, 308, 400, 403, 404, 405, 410, 451, 500–504}, size ≤ 100 GiB; never with Set-Cookie; not when the request has no-store; not with Authorization unless the response says public; private/no-store responses not cached except under FORCE_CACHE_ALL."},
	{ID: "CCH-2", Area: "CCH", Level: DOC, Text: "CACHE_ALL_STATIC (default) caches static content types (text/css, text/javascript, application/javascript, font/*, image/*, video/*, audio/*, application/pdf, …) without cache directives for defaultTtl, and honours origin directives capped at maxTtl; USE_ORIGIN_HEADERS caches only by origin directives; FORCE_CACHE_ALL caches every cacheable status for defaultTtl ignoring private/no-store/no-cache; BYPASS_CACHE always fetches from the origin."},
	{ID: "CCH-3", Area: "CCH", Level: DOC, Text: "s-maxage beats max-age; Expires is ignored when Cache-Control is present; Pragma is ignored; request cache directives are ignored except no-store."},
	{ID: "CCH-4", Area: "CCH", Level: DOC, Text: "a no-cache response is stored but revalidated before each use; must-revalidate/proxy-revalidate force revalidation once stale; stale objects are revalidated with conditional requests."},
	{ID: "CCH-5", Area: "CCH", Level: DOC, Text: "negative caching is off by default; when on, default TTLs are 10 min for 300/301/308, 120s for 404/410/451, 60s for 405/501, and a negativeCachingPolicy lists exactly the codes cached."},
	{ID: "CCH-6", Area: "CCH", Level: DOC, Text: "the default cache key is host + path + sorted query string; cacheKeyPolicy can include the protocol, exclude the host or query, include/exclude named query parameters, and add named headers or cookies; Vary values join the key for the allowed headers."},
	{ID: "CCH-7", Area: "CCH", Level: EXT, Text: "in USE_ORIGIN_HEADERS mode the reference is an RFC 9111 shared cache (freshness, Age, validation, invalidation on unsafe methods, Vary)."},
	{ID: "RNG-1", Area: "RNG", Level: DOC, Text: "a response over 1 MiB is cached only if the GET response carries a validator (ETag or Last-Modified), a valid Date, a valid Content-Length, and, for range requests, Content-Range: bytes x-y/z."},
	{ID: "RNG-2", Area: "RNG", Level: DOC, Text: "objects over 1 MiB are filled from the origin with range requests of at most 2 MiB each; an origin without range support cannot serve such objects through the cache."},
	{ID: "RNG-3", Area: "RNG", Level: DOC, Text: "client range requests are answered from cached chunks (206 with Content-Range); a multipart range becomes single-range fills and one multipart/byteranges answer."},
	{ID: "RNG-4", Area: "RNG", Level: DOC, Text: "an open-ended range stays open until the origin closes it or a read/response timeout passes."},
	{ID: "RNG-5", Area: "RNG", Level: INT, Text: "if the validator changes between chunk fills, the object is refetched rather than served as a mix of versions."},
	{ID: "LOG-1", Area: "LOG", Level: DOC, Text: "each client request is logged once, and each origin fill request is logged separately (a collapsed fill once, linked to the requests it served)."},
	{ID: "LOG-2", Area: "LOG", Level: DOC, Text: "log fields include the origin, origin IP, backend latencies, cacheStatus (e.g. hit, miss), cacheKeyFingerprint, proxyStatus, and the range header."},
}

// All returns every rule in behaviour.md order.
func All() []Rule { return slices.Clone(rules) }

// Lookup returns the rule with the given ID.
func Lookup(id string) (Rule, bool) {
	for _, r := range rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// IsRuleID reports whether s has the form of a rule ID (AREA-N) naming a
// rule of the catalog.
func IsRuleID(s string) bool {
	_, ok := Lookup(s)
	return ok
}

// IsArea reports whether s is an area code (ATT, TMO, ...).
func IsArea(s string) bool {
	for _, a := range areas {
		if a.ID == s {
			return true
		}
	}
	return false
}

// AreaTitle returns an area's title ("" for an unknown area).
func AreaTitle(area string) string {
	for _, a := range areas {
		if a.ID == area {
			return a.Title
		}
	}
	return ""
}

// Areas returns the area codes in behaviour.md order.
func Areas() []string {
	out := make([]string, len(areas))
	for i, a := range areas {
		out[i] = a.ID
	}
	return out
}

// Less orders rule IDs as behaviour.md does: by area, then by number.
func Less(a, b string) bool {
	aa, an := split(a)
	ba, bn := split(b)
	if aa != ba {
		return areaIndex(aa) < areaIndex(ba)
	}
	return an < bn
}

func split(id string) (string, int) {
	area, num, _ := strings.Cut(id, "-")
	n, _ := strconv.Atoi(num)
	return area, n
}

func areaIndex(area string) int {
	for i, a := range areas {
		if a.ID == area {
			return i
		}
	}
	return len(areas)
}
