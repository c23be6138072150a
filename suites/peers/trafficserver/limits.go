package trafficserver

import (
	"slices"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/genutil"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Documentation the limits point to (ATS 9.2).
const (
	docRecords = "https://docs.trafficserver.apache.org/en/9.2.x/admin-guide/files/records.config.en.html"
	docParent  = "https://docs.trafficserver.apache.org/en/9.2.x/admin-guide/files/parent.config.en.html"
	docRemap   = "https://docs.trafficserver.apache.org/en/9.2.x/admin-guide/files/remap.config.en.html"
	docOrigin  = "https://docs.trafficserver.apache.org/en/9.2.x/admin-guide/configuration/http2.en.html"
	docRange   = "https://docs.trafficserver.apache.org/en/9.2.x/admin-guide/plugins/cache_range_requests.en.html"
	docLogging = "https://docs.trafficserver.apache.org/en/9.2.x/admin-guide/logging/formatting.en.html"
)

// Limits are what ATS 9.2 cannot express of n, per rule (and scenario
// where only some scenarios are affected), each with its documentation.
func Limits(n *topology.Neutral) []peers.Limit {
	ls := []peers.Limit{
		{Rule: "PRT-1", Reason: "ATS 9 speaks only HTTP/1.1 to origins (h2 to origins came in ATS 10): an HTTP2 origin is reached with HTTP/1.1 over TLS", Doc: docOrigin},
		{Rule: "ATT-9", Reason: "no deadline across attempts (maxAttemptsTimeout): each attempt has its own connect_attempts_timeout", Doc: docRecords},
		{Rule: "TMO-2", Reason: "no deadline across attempts", Doc: docRecords},
		{Rule: "TMO-5", Reason: "responseTimeout has no exact equivalent: transaction_active_timeout_out runs from the start of the origin transaction, not from the first body byte; timeouts are whole seconds", Doc: docRecords},
		{Rule: "TMO-7", Reason: "no maxAttemptsTimeout deadline to shorten the last attempt's connect timeout to", Doc: docRecords},
		{Rule: "TMO-8", Reason: "no maxAttemptsTimeout deadline: a failover gets its full timeouts, not what is left", Doc: docRecords},
		{Rule: "RDR", Reason: "following origin redirects (number_of_redirections) is not per origin or per status list, and the redirect is not an attempt against the origin's maxAttempts", Doc: docRecords},
		{Rule: "MTH-2", Reason: "a GET with a body or trailers is proxied, not refused", Doc: docRemap},
		{Rule: "MTH-5", Reason: "remap matches the Host with its port: a Host naming the listener's port matches no rule", Doc: docRemap},
		{Rule: "CCH-2", Reason: "no cache mode by content type (CACHE_ALL_STATIC): every cacheable response of a caching route is stored", Doc: docRecords},
		{Rule: "CCH-5", Reason: "one negative_caching_lifetime per route, not one per status", Doc: docRecords},
		{Rule: "RNG-2", Reason: "no chunked range fills: a miss for a range fetches the whole object (or, with cache_range_requests, caches each range as its own object)", Doc: docRange},
		{Rule: "RNG-5", Reason: "no chunk fills, so no validator checks between them", Doc: docRange},
		{Rule: "SHD", Reason: "no shield tier configured", Doc: docParent},
		{Rule: "BKT", Reason: "not configured: the s3_auth plugin signs with a static key for whole remaps, not per origin of a chain", Doc: "https://docs.trafficserver.apache.org/en/9.2.x/admin-guide/plugins/s3_auth.en.html"},
		{Rule: "LOG-1", Reason: "one record per client request; no record per origin attempt or collapsed fill", Doc: docLogging},
		{Rule: "LOG-2", Reason: "no cache key fingerprint and no origin name (the origin's IP is logged)", Doc: docLogging},
	}
	for _, s := range n.Scenarios {
		chain := n.Chain(s.Chain[0])
		if len(chain) > 1 && (chain[0].Protocol == "HTTP") != (chain[1].Protocol == "HTTP") {
			ls = append(ls, peers.Limit{Rule: "ATT-5", Scenario: s.Name, Reason: "a failover over another scheme (cleartext vs TLS) cannot be a parent of the same rule: no failover configured", Doc: docParent})
		}
		for _, o := range chain[1:] {
			if o.HostRewrite != chain[0].HostRewrite || len(o.RequestHeadersToAdd) > 0 {
				ls = append(ls, peers.Limit{Rule: "HST-2", Scenario: s.Name, Reason: "parents share the route's request headers: a failover's own hostRewrite or headers cannot differ", Doc: docParent})
				break
			}
		}
		for _, o := range chain {
			if o.Protocol == "HTTP2" {
				for _, rule := range []string{"HST-1", "HST-2", "HST-3", "PRT-3", "PRT-4"} {
					ls = append(ls, peers.Limit{Rule: rule, Scenario: s.Name, Reason: "the scenario reaches an HTTP2 (h2-only) origin, which ATS 9 cannot speak to: its requests fail before the rule is exercised", Doc: docOrigin})
				}
				break
			}
		}
		if len(chain) > 1 && !slices.Contains(chain[0].RetryConditions, "CONNECT_FAILURE") {
			ls = append(ls, peers.Limit{Rule: "ATT-5", Scenario: s.Name, Reason: "a parent rule fails over on connect failures whatever the origin's retryConditions: CONNECT_FAILURE cannot be left out", Doc: docParent})
		}
		if len(chain) > 1 && (len(chain[1].RetryConditions) != len(chain[0].RetryConditions) || chain[1].MaxAttempts != chain[0].MaxAttempts) {
			ls = append(ls, peers.Limit{Rule: "ATT-3", Scenario: s.Name, Reason: "parent retries use the primary's retry responses and attempts for the whole chain, not each origin's own", Doc: docParent})
		}
	}
	for _, pm := range n.PathMatchers {
		for _, r := range pm.Routes {
			for _, m := range r.Match {
				if len(m.Headers) > 0 || len(m.Query) > 0 {
					ls = append(ls, peers.Limit{Rule: "MTH-4", Scenario: r.Scenario, Reason: "remap rules match host and path only: a route's header or query criteria are ignored", Doc: docRemap})
				}
				if m.IgnoreCase {
					ls = append(ls, peers.Limit{Rule: "MTH-6", Scenario: r.Scenario, Reason: "remap paths are case-sensitive: ignoreCase cannot be expressed", Doc: docRemap})
				}
			}
		}
	}
	return genutil.ExpandAreas(ls)
}
