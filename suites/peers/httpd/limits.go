package httpd

import (
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/genutil"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Documentation the limits point to (httpd 2.4).
const (
	docProxy        = "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxypass"
	docBalancer     = "https://httpd.apache.org/docs/2.4/mod/mod_proxy_balancer.html"
	docFailOnStatus = "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxypass" // failonstatus, under "Balancer parameters"
	docCache        = "https://httpd.apache.org/docs/2.4/mod/mod_cache.html"
	docCacheLock    = "https://httpd.apache.org/docs/2.4/mod/mod_cache.html#cachelock"
	docHeaders      = "https://httpd.apache.org/docs/2.4/mod/mod_headers.html#requestheader"
	docLog          = "https://httpd.apache.org/docs/2.4/mod/mod_log_config.html#formats"
)

// Limits are what httpd 2.4 cannot express of n, per rule (and scenario
// where only some are affected), each with its documentation.
func Limits(n *topology.Neutral) []peers.Limit {
	ls := []peers.Limit{
		{Rule: "ATT-5", Reason: "no retry or failover on a response status: failonstatus only puts the member into error state for later requests, this one gets the origin's response", Doc: docFailOnStatus},
		{Rule: "ATT-7", Reason: "statuses are never retried, so there is no 502 for exhausted retryable statuses", Doc: docFailOnStatus},
		{Rule: "ATT-4", Reason: "a connect failure is not retried on the same origin: a failed balancer member is in error state for retry= seconds (retry=0 would keep picking it and never fail over)", Doc: docProxy},
		{Rule: "ATT-9", Reason: "no maxAttemptsTimeout: nothing bounds the attempts of one request together", Doc: docProxy},
		{Rule: "TMO-2", Reason: "no deadline across attempts", Doc: docProxy},
		{Rule: "TMO-1", Reason: "connectiontimeout covers the TCP connect only; the wait for response headers is bounded by timeout (readTimeout), and expiring it after the request was sent is not a failover", Doc: docProxy},
		{Rule: "TMO-5", Reason: "no responseTimeout (and so no cap of readTimeout by it): timeout is a socket timeout between reads", Doc: docProxy},
		{Rule: "TMO-6", Reason: "no responseTimeout to truncate a slow body with (timeout between reads only)", Doc: docProxy},
		{Rule: "TMO-4", Reason: "redirects are not followed, so no redirect attempt uses the redirecting origin's timeouts", Doc: docProxy},
		{Rule: "TMO-7", Reason: "no maxAttemptsTimeout deadline to shorten the last attempt's connect timeout to", Doc: docProxy},
		{Rule: "TMO-8", Reason: "no maxAttemptsTimeout deadline: a failover gets its full timeouts, not what is left", Doc: docProxy},
		{Rule: "RDR", Reason: "mod_proxy never follows an origin's redirect: the 3xx is returned to the client (ProxyPassReverse only rewrites its Location)", Doc: docProxy},
		{Rule: "MTH-2", Reason: "a request with trailers cannot be matched (a GET with a body is: Content-Length / Transfer-Encoding conditions)", Doc: "https://httpd.apache.org/docs/2.4/mod/mod_rewrite.html#rewritecond"},
		{Rule: "COL-5", Reason: "CacheLock makes other requests for an object being filled go to the origin (or get a stale copy) instead of streaming the fill", Doc: docCacheLock},
		{Rule: "COL-1", Reason: "no request collapsing: CacheLock does not make concurrent misses wait for one fill", Doc: docCacheLock},
		{Rule: "CCH-2", Reason: "no cache mode by content type (CACHE_ALL_STATIC) and CacheIgnoreCacheControl (FORCE_CACHE_ALL) applies to a whole virtual host, not a route: every caching route follows the origin's headers with defaultTtl as CacheDefaultExpire", Doc: docCache},
		{Rule: "CCH-5", Reason: "no negative caching policy: mod_cache caches error statuses only when the origin's headers make them cacheable", Doc: docCache},
		{Rule: "CCH-6", Reason: "no per-route cache key policy: CacheIgnoreQueryString and CacheIgnoreURLSessionIdentifiers are per virtual host, no header or cookie in the key", Doc: docCache},
		{Rule: "RNG-2", Reason: "no chunked range fills: mod_cache passes a client's range to the origin on a miss and caches only whole 200 responses", Doc: docCache},
		{Rule: "RNG-5", Reason: "no chunk fills, so no validator checks between them", Doc: docCache},
		{Rule: "SHD", Reason: "no shield tier configured", Doc: docCache},
		{Rule: "BKT", Reason: "no AWS SigV4 signing of origin requests", Doc: docProxy},
		{Rule: "LOG", Reason: "the access log has one record per client request and the balancer member chosen, no record per origin attempt, no origin IP or cache key", Doc: docLog},
	}
	for _, s := range n.Scenarios {
		if len(s.Chain) < 2 {
			continue
		}
		first, _ := n.Origin(s.Chain[0])
		for _, name := range s.Chain[1:] {
			o, _ := n.Origin(name)
			if o.HostRewrite != first.HostRewrite {
				ls = append(ls, peers.Limit{Rule: "HST-2", Scenario: s.Name, Reason: "one Host per route: a failover's own hostRewrite cannot differ from the primary's (RequestHeader runs before the balancer picks a member)", Doc: docHeaders})
			}
			if len(o.RequestHeadersToAdd) > 0 || len(first.RequestHeadersToAdd) > 0 {
				ls = append(ls, peers.Limit{Rule: "HST-6", Scenario: s.Name, Reason: "origin-level request headers apply to every member of the balancer, not only to that origin's attempts", Doc: docHeaders})
				break
			}
		}
	}
	return genutil.ExpandAreas(ls)
}
