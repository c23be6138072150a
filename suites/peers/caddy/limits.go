package caddy

import (
	"slices"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/genutil"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Documentation of what the limits refer to (Caddy 2.6).
const (
	docReverseProxy = "https://caddyserver.com/docs/json/apps/http/servers/routes/handle/reverse_proxy/"
	docTransport    = "https://caddyserver.com/docs/json/apps/http/servers/routes/handle/reverse_proxy/transport/http/"
	docIntercept    = "https://caddyserver.com/docs/caddyfile/directives/reverse_proxy#intercepting-responses"
	docModules      = "https://caddyserver.com/docs/modules/"
	docLogging      = "https://caddyserver.com/docs/json/logging/"
)

// Limits are what Caddy 2.6 cannot express of n, per rule (and scenario
// where only some scenarios are affected), each with its documentation.
func Limits(n *topology.Neutral) []peers.Limit {
	ls := []peers.Limit{
		{Rule: "TMO-2", Reason: "no deadline across attempts: lb_try_duration bounds only how long one reverse_proxy handler keeps retrying dial errors, not the whole request", Doc: docReverseProxy},
		{Rule: "ATT-9", Reason: "no maxAttemptsTimeout: the unrolled attempts are separate handlers with no shared deadline, so there is no 504 when it passes", Doc: docReverseProxy},
		{Rule: "TMO-5", Reason: "no responseTimeout (and so no cap of readTimeout by it): the http transport has dial_timeout, response_header_timeout and read_timeout (between reads) only", Doc: docTransport},
		{Rule: "TMO-6", Reason: "no responseTimeout to truncate a slow body with (read_timeout only)", Doc: docTransport},
		{Rule: "TMO-4", Reason: "redirects are not followed, so no redirect attempt uses the redirecting origin's timeouts", Doc: docIntercept},
		{Rule: "TMO-7", Reason: "no maxAttemptsTimeout deadline to shorten the last attempt's connect timeout to", Doc: docReverseProxy},
		{Rule: "TMO-8", Reason: "no maxAttemptsTimeout deadline: a failover gets its full timeouts, not what is left", Doc: docReverseProxy},
		{Rule: "MTH-2", Reason: "a request with trailers cannot be matched (a GET with a body is: Content-Length / Transfer-Encoding matchers)", Doc: "https://caddyserver.com/docs/json/apps/http/servers/routes/match/"},
		{Rule: "LOG", Reason: "the access log has the client request only: no record per origin attempt, no origin IP, cache status or cache key", Doc: docLogging},
		{Rule: "RDR", Reason: "origin redirects are not followed: handle_response can only route to a configured upstream, not to the Location's host", Doc: docIntercept},
		{Rule: "CCH", Reason: "the standard Caddy build has no HTTP cache (cache-handler is a third-party plugin, not in Debian's caddy); every route proxies", Doc: docModules},
		{Rule: "COL", Reason: "no cache, so no request collapsing: every client request is its own origin request", Doc: docModules},
		{Rule: "SHD", Reason: "no cache tiers", Doc: docModules},
		{Rule: "RNG-1", Reason: "no cache: large objects are never stored", Doc: docModules},
		{Rule: "RNG-2", Reason: "no cache: no chunked range fills, client ranges are passed to the origin as sent", Doc: docModules},
		{Rule: "RNG-3", Reason: "no cache: ranges are answered by the origin, not from cached chunks", Doc: docModules},
		{Rule: "BKT", Reason: "no AWS SigV4 signing of origin requests in the standard build", Doc: docModules},
	}
	for _, s := range n.Scenarios {
		if len(s.Chain) > 2 {
			ls = append(ls, peers.Limit{Rule: "ATT", Scenario: s.Name,
				Reason: "a connect failure fails over only from the primary: the server's error routes run once, an error inside them is not handled again",
				Doc:    "https://caddyserver.com/docs/json/apps/http/servers/errors/"})
		}
		for _, name := range s.Chain {
			if o, ok := n.Origin(name); ok && slices.Contains(o.RetryConditions, "CONNECT_FAILURE") && o.Name != s.Chain[0] && o.MaxAttempts > 1 {
				ls = append(ls, peers.Limit{Rule: "ATT-4", Scenario: s.Name,
					Reason: "a failover origin's connect failures are not retried on it", Doc: docReverseProxy})
				break
			}
		}
	}
	return genutil.ExpandAreas(ls)
}
