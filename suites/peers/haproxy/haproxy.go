// Package haproxy generates an HAProxy 2.6 configuration from the neutral
// topology, so that the conformance suites can judge HAProxy as an edge
// (load balancer with its small cache) in front of the emulated origins.
//
// Mapping: host rules and routes become variables set by http-request
// rules in one frontend (MTH); each origin chain becomes a backend whose
// servers are the chain's origins in order ("balance first"), with
// "retries" for maxAttempts (capped at 4 attempts, ATT-4), "retry-on" for
// the retry conditions and "option redispatch" placed so that the retry
// that should go to the failover does (ATT-3); unsafe methods use a twin
// backend without retries (ATT-1, ATT-2). Cacheable routes use a cache
// section each. What HAProxy cannot express (a total deadline, per-origin
// timeouts or retry conditions within one backend, redirect following,
// most of the cache policy, request collapsing) is declared as a Limit
// with a pointer into the HAProxy 2.6 manual.
package haproxy

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/genutil"
	"github.com/edgeconform/edgeconform/suites/topology"
)

const manual = "https://docs.haproxy.org/2.6/configuration.html"

// Documentation anchors.
const (
	docRetryOn    = manual + "#4.2-retry-on"
	docRedispatch = manual + "#4.2-option%20redispatch"
	docTimeout    = manual + "#4.2-timeout%20server"
	docCache      = manual + "#6.1"
	docServer     = manual + "#5.2"
	docHTTPReq    = manual + "#4.2-http-request"
)

// Peer is HAProxy 2.6 (Debian package haproxy).
type Peer struct{}

var _ peers.Peer = Peer{}

// Name is "haproxy".
func (Peer) Name() string { return "haproxy" }

// Package is the Debian package.
func (Peer) Package() string { return "haproxy" }

// Binaries are where haproxy is looked for.
func (Peer) Binaries() []string { return []string{"haproxy", "/usr/sbin/haproxy"} }

// ConfigFile is the generated configuration's name in env.Dir.
const ConfigFile = "haproxy.cfg"

// LogFile is where the per-request JSON records go (LOG-1, LOG-2).
const LogFile = "access.jsonl"

// logFormat is one "client request" record per request, with the
// reference's field names: the server is named after the origin, %si is
// its IP, %Tr the wait for its response headers, %tsc the termination
// state (proxy status), %rc the retries (quoted: "+1" when redispatched);
// the Range header is captured.
const logFormat = `{"msg":"client request","request_id":"%ID","uri":"%HP","method":"%HM","status":%ST,"bytes":%B,` +
	`"origin":"%s","origin_ip":"%si","backend_latency_ms":%Tr,"latency_ms":%Ta,"cache_status":"%[var(txn.ec_cache)]",` +
	`"proxy_status":"%tsc","range":"%[capture.req.hdr(0)]","retries":"%rc"}`

// errorFile is HAProxy's own 503 (no server could be reached) and 504
// (the server timeout passed before a response) answered as 502: a
// connect failure, or no response at all, is 502 (ATT-8, TMO-1).
const errorFile = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nConnection: close\r\n\r\nBad Gateway\n"

// Generate writes haproxy.cfg (and its error file) into env.Dir and
// returns haproxy's foreground command (-db: no daemon, logs on stdout).
func (Peer) Generate(topo *topology.Neutral, env peers.Env) (*peers.Setup, error) {
	errPath := env.Path("502.http")
	if err := os.WriteFile(errPath, []byte(errorFile), 0o644); err != nil {
		return nil, fmt.Errorf("haproxy: writing the error file: %w", err)
	}
	cfg, limits, err := Config(topo, Options{Listen: env.Listen, OriginCA: env.OriginCA, ErrorFile: errPath})
	if err != nil {
		return nil, err
	}
	path := env.Path(ConfigFile)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("haproxy: writing %s: %w", path, err)
	}
	bin := env.Binary
	if bin == "" {
		bin = "haproxy"
	}
	logs := env.Path(LogFile)
	return &peers.Setup{
		// HAProxy logs to stdout (it cannot write a file): the shell sends
		// stdout to the log file and execs haproxy, which stays the
		// process the runner stops. Notices and alerts stay on stderr.
		Command: []string{"/bin/sh", "-c", `exec "$0" -db -f "$1" >>"$2"`, bin, path, logs},
		Health:  "/",
		Limits:  limits,
		Logs: &peers.LogSource{Path: logs, Fields: []string{"uri", "request_id", "status", "origin", "origin_ip",
			"backend_latency_ms", "cache_status", "proxy_status", "range", "retries"}},
		Notes: []string{
			"each origin chain is one backend: its origins are servers in order (balance first), maxAttempts is retries, the failover is a redispatch",
			"connectTimeout is timeout connect; timeout server (the wait for headers and between body reads) is the smaller of connectTimeout and readTimeout",
		},
	}, nil
}

// Options are what the configuration needs besides the topology.
type Options struct {
	Listen    string // 127.0.0.1:PORT
	OriginCA  string // PEM file trusted for TLS origins
	ErrorFile string // the 502 answer for HAProxy's 503 and 504
}

type gen struct {
	n      *topology.Neutral
	o      Options
	b      strings.Builder
	limits genutil.Limits
}

func (g *gen) p(format string, a ...any) { fmt.Fprintf(&g.b, format, a...) }

func (g *gen) limit(rule, scenario, reason, doc string) { g.limits.Add(rule, scenario, reason, doc) }

// Config returns haproxy.cfg for n and the limits it declares.
func Config(n *topology.Neutral, o Options) (string, []peers.Limit, error) {
	if n == nil {
		return "", nil, fmt.Errorf("haproxy: no topology")
	}
	if o.Listen == "" {
		return "", nil, fmt.Errorf("haproxy: no listen address")
	}
	g := &gen{n: n, o: o}
	g.globalLimits()
	g.p("# Generated by suites/peers/haproxy from the neutral topology (%s, profile %s).\n# Rule IDs are behaviour.md's.\n", n.SchemaVersion, n.Profile.Name)
	g.p("global\n  # normalize-uri (MTH-6) is experimental in 2.6.\n  expose-experimental-directives\n  log stdout format raw local0\n  maxconn 4096\n  tune.bufsize 65536\n\n")
	g.p("defaults\n  mode http\n  log global\n  log-format %s\n  unique-id-format %%pid-%%rt\n  timeout client 120s\n  timeout http-request 30s\n  timeout http-keep-alive 30s\n", quote(logFormat))
	if o.ErrorFile != "" {
		g.p("  errorfile 503 %s\n  errorfile 504 %s\n", o.ErrorFile, o.ErrorFile)
	}
	g.p("\n")
	chains, err := g.frontend()
	if err != nil {
		return "", nil, err
	}
	for _, c := range chains {
		g.backend(c, false)
		g.backend(c, true)
	}
	return g.b.String(), g.limits.List(), nil
}

func (g *gen) globalLimits() {
	g.limit("ATT-9", "", "no deadline across attempts: HAProxy bounds each connection (timeout connect) and each wait for data (timeout server), never a request's attempts together", docTimeout)
	g.limit("TMO-2", "", "no maxAttemptsTimeout: no total deadline across retries", docTimeout)
	g.limit("TMO-7", "", "no maxAttemptsTimeout, so the last attempt's timeouts are never shortened", docTimeout)
	g.limit("TMO-8", "", "no maxAttemptsTimeout: a failover gets its own full timeouts, not what is left", docTimeout)
	g.limit("TMO-9", "", "no maxAttemptsTimeout across the attempts", docTimeout)
	g.limit("TMO-5", "", "no responseTimeout (whole body), and one timeout server serves both the wait for headers and the gaps between body reads", docTimeout)
	g.limit("RDR-1", "", "HAProxy does not follow origin redirects: every 3xx reaches the client", manual+"#4.2-http-response")
	g.limit("RDR-2", "", "redirects are never followed", manual+"#4.2-http-response")
	g.limit("RDR-4", "", "redirects are never followed", manual+"#4.2-http-response")
	g.limit("RDR-5", "", "redirects are never followed", manual+"#4.2-http-response")
	g.limit("ATT-5", "", "RETRIABLE_4XX (409, 429) cannot be retried: retry-on accepts only 401, 403, 404, 408, 425 and 500-504; HTTP_5XX covers only 500-504", docRetryOn)
	g.limit("COL-1", "", "the HAProxy cache does not collapse concurrent misses: each goes to the origin", docCache)
	g.limit("COL-5", "", "no request collapsing", docCache)
	g.limit("CCH-2", "", "one max-age per cache section stands for both defaultTtl and maxTtl; no static-content rule, no FORCE_CACHE_ALL; only responses with an explicit lifetime or a validator are stored", docCache)
	g.limit("CCH-4", "", "the HAProxy cache never revalidates: a stale object is dropped and fetched again", docCache)
	g.limit("CCH-5", "", "only 200 responses are cached: no negative caching", docCache)
	g.limit("CCH-6", "", "the cache key is fixed: the Host and the URI as sent (no sorted query, no cacheKeyPolicy)", docCache)
	g.limit("CCH-1", "", "objects larger than max-object-size (8 MiB here) are never cached", docCache)
	g.limit("RNG-2", "", "no range fills: the cache stores only whole 200 responses", docCache)
	g.limit("RNG-3", "", "the cache does not answer ranges from stored objects of more than one buffer", docCache)
	g.limit("BKT-1", "", "HAProxy cannot sign requests with AWS SigV4", docHTTPReq)
	g.limit("LOG-1", "", "one log line per client request: retries are counted (%rc), never logged as origin attempt records", manual+"#8.2.4")
	g.limit("LOG-2", "", "no cache key fingerprint among the log-format variables", manual+"#8.2.4")
	g.limit("MTH-2", "", "a request with trailers cannot be detected (only a GET with a body gets 400)", docHTTPReq)
}

// chain is a backend: a route's origin chain.
type chain struct {
	name    string // backend name
	first   string
	origins []topology.NeutralOrigin
	cache   *topology.NeutralCache
	route   topology.NeutralRoute
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

func backendName(first string, unsafe bool) string {
	s := "be_" + nonName.ReplaceAllString(first, "_")
	if unsafe {
		s += "_unsafe"
	}
	return s
}

func hostACL(h string) string {
	switch {
	case h == "*":
		return "TRUE"
	case strings.HasPrefix(h, "*."):
		return fmt.Sprintf("{ var(txn.ec_host) -m end %s } !{ var(txn.ec_host) -m str %s }", h[1:], h[2:])
	case strings.HasSuffix(h, ".*"):
		return fmt.Sprintf("{ var(txn.ec_host) -m beg %s } !{ var(txn.ec_host) -m str %s }", h[:len(h)-1], h[:len(h)-2])
	}
	return fmt.Sprintf("{ var(txn.ec_host) -m str %s }", h)
}

func quote(s string) string { return strconv.Quote(s) }

// matchACL is the condition of one match rule.
func matchACL(m topology.NeutralMatch) string {
	var cs []string
	i := ""
	if m.IgnoreCase {
		i = "-i "
	}
	switch {
	case m.Prefix != "":
		cs = append(cs, fmt.Sprintf("{ path %s-m beg %s }", i, m.Prefix))
	case m.FullPath != "":
		cs = append(cs, fmt.Sprintf("{ path %s-m str %s }", i, m.FullPath))
	case m.PathTemplate != "":
		cs = append(cs, fmt.Sprintf("{ path %s-m reg %s }", i, quote("^"+genutil.TemplateRegexp(m.PathTemplate)+"$")))
	}
	for _, h := range m.Headers {
		var c string
		switch {
		case h.Exact != "":
			c = fmt.Sprintf("{ req.hdr(%s) -m str %s }", h.Name, quote(h.Exact))
		case h.Prefix != "":
			c = fmt.Sprintf("{ req.hdr(%s) -m beg %s }", h.Name, quote(h.Prefix))
		case h.Suffix != "":
			c = fmt.Sprintf("{ req.hdr(%s) -m end %s }", h.Name, quote(h.Suffix))
		case h.Present != nil && !*h.Present:
			c = fmt.Sprintf("!{ req.hdr(%s) -m found }", h.Name)
		default:
			c = fmt.Sprintf("{ req.hdr(%s) -m found }", h.Name)
		}
		if h.Invert {
			if strings.HasPrefix(c, "!") {
				c = c[1:]
			} else {
				c = "!" + c
			}
		}
		cs = append(cs, c)
	}
	for _, q := range m.Query {
		if q.Exact != "" {
			cs = append(cs, fmt.Sprintf("{ url_param(%s) -m str %s }", q.Name, quote(q.Exact)))
		} else {
			cs = append(cs, fmt.Sprintf("{ url_param(%s) -m found }", q.Name))
		}
	}
	return strings.Join(cs, " ")
}

func routeID(pm string, i int) string { return fmt.Sprintf("%s/%d", pm, i) }

const safe = "METH_GET or METH_HEAD or METH_OPTIONS"

func (g *gen) frontend() ([]*chain, error) {
	g.p("frontend edge\n  bind %s\n", g.o.Listen)
	g.p("  # MTH-6: repeated slashes merged, dot segments removed (no percent-decoding).\n")
	g.p("  http-request normalize-uri path-merge-slashes\n  http-request normalize-uri path-strip-dot\n  http-request normalize-uri path-strip-dotdot full\n")
	g.p("  # LOG-2: the Range header and the cache status in the log.\n  http-request capture req.hdr(Range) len 100\n")
	g.p("  http-response set-var(txn.ec_cache) str(hit) if { res.cache_hit }\n  http-response set-var(txn.ec_cache) str(miss) unless { var(txn.ec_cache) -m found }\n")
	g.p("  # MTH-5: hosts without the port, case-insensitively.\n  http-request set-var(txn.ec_host) req.hdr(host),field(1,:),lower\n")
	for _, h := range genutil.Hosts(g.n) {
		g.p("  http-request set-var(txn.ec_pm) str(%s) if !{ var(txn.ec_pm) -m found } %s\n", h.Matcher, hostACL(h.Host))
	}
	byFirst := map[string]*chain{}
	var chains []*chain
	type routeRef struct {
		id string
		r  topology.NeutralRoute
	}
	var routes []routeRef
	for _, pm := range g.n.PathMatchers {
		for _, i := range genutil.PriorityOrder(pm) { // MTH-4
			r := pm.Routes[i]
			id := routeID(pm.Name, i)
			var ors []string
			for _, m := range r.Match {
				ors = append(ors, matchACL(m))
			}
			for _, or := range ors {
				g.p("  http-request set-var(txn.ec_route) str(%s) if { var(txn.ec_pm) -m str %s } !{ var(txn.ec_route) -m found } %s\n", id, pm.Name, or)
			}
			routes = append(routes, routeRef{id, r})
			c, ok := byFirst[r.Origin]
			if !ok {
				os := g.n.Chain(r.Origin)
				if len(os) == 0 {
					return nil, fmt.Errorf("haproxy: route %s: origin %q not in the topology", id, r.Origin)
				}
				c = &chain{name: backendName(r.Origin, false), first: r.Origin, origins: os, route: r}
				byFirst[r.Origin] = c
				chains = append(chains, c)
			}
			if r.Cache.Mode != "BYPASS_CACHE" && c.cache == nil {
				cc := r.Cache
				c.cache = &cc
			}
		}
	}
	g.p("  # MTH-3: no host rule or no route.\n  http-request return status 404 content-type text/plain string \"no route\\n\" unless { var(txn.ec_route) -m found }\n")
	g.p("  # MTH-2: a GET with a body.\n  http-request return status 400 content-type text/plain string \"GET with a body\\n\" if METH_GET { req.hdr_cnt(transfer-encoding) gt 0 } or METH_GET { req.hdr(content-length) -m int gt 0 }\n")
	for _, rr := range routes {
		r, id := rr.r, rr.id
		cond := fmt.Sprintf("{ var(txn.ec_route) -m str %s }", id)
		var ms []string
		for _, m := range r.Methods {
			ms = append(ms, "{ method "+m+" }")
		}
		g.p("  # route %s (scenario %s)\n", id, r.Scenario)
		g.p("  http-request return status 405 content-type text/plain string \"method not allowed\\n\" hdr Allow %s if %s !%s\n", quote(strings.Join(r.Methods, ", ")), cond, strings.Join(ms, " !"))
		if u := r.URLRewrite; u != nil {
			// MTH-7: after matching (the route is chosen).
			if u.PathPrefix != "" && len(r.Match) > 0 && r.Match[0].Prefix != "" {
				g.p("  http-request replace-path %s %s if %s\n", quote("^"+regexp.QuoteMeta(r.Match[0].Prefix)+"(.*)"), quote(u.PathPrefix+`\1`), cond)
			}
			if u.PathTemplate != "" {
				g.limit("MTH-7", r.Scenario, "pathTemplateRewrite is not generated for HAProxy", docHTTPReq)
			}
			if u.Host != "" {
				g.p("  http-request set-header Host %s if %s # HST-1 (route)\n", quote(u.Host), cond)
			}
		}
		g.headerRules("http-request", r.RequestHeadersToRemove, r.RequestHeadersToAdd, " if "+cond)
		g.headerRules("http-response", r.ResponseHeadersToRemove, r.ResponseHeadersToAdd, " if "+cond)
		be := byFirst[r.Origin].name
		// ATT-1/ATT-2: unsafe methods go to a twin backend that never retries.
		g.p("  use_backend %s if %s %s\n  use_backend %s if %s\n", be, cond, safeACL, backendName(r.Origin, true), cond)
	}
	g.p("\n")
	return chains, nil
}

const safeACL = "{ method GET HEAD OPTIONS }"

// headerRules removes and adds (or, with Replace, sets) headers with
// directive (http-request, http-response) under cond (" if ...", or "").
func (g *gen) headerRules(directive string, remove []string, add []topology.NeutralHeader, cond string) {
	for _, h := range remove {
		g.p("  %s del-header %s%s\n", directive, h, cond)
	}
	for _, h := range add {
		verb := "add-header"
		if h.Replace {
			verb = "set-header"
		}
		g.p("  %s %s %s %s%s\n", directive, verb, h.Name, quote(h.Value), cond)
	}
}

// retryOn maps a retry condition to retry-on keywords (ATT-5); the bool
// says whether HAProxy covers the whole condition.
func retryOn(cond string) ([]string, bool) {
	switch cond {
	case "CONNECT_FAILURE":
		// TMO-1: a connect timeout includes the wait for the headers.
		return []string{"conn-failure", "empty-response", "response-timeout"}, true
	case "HTTP_5XX":
		return []string{"500", "501", "502", "503", "504"}, false
	case "GATEWAY_ERROR":
		return []string{"502", "503", "504"}, true
	case "RETRIABLE_4XX":
		return nil, false
	case "NOT_FOUND":
		return []string{"404"}, true
	case "FORBIDDEN":
		return []string{"403"}, true
	}
	return nil, false
}

// statusACL is the statuses of a condition HAProxy retries, for mapping a
// final one to 502 (ATT-7); a status it cannot retry (409, 429, 505+)
// passes through as HAProxy answers it.
func statusACL(cond string) string {
	switch cond {
	case "HTTP_5XX":
		return "{ status 500:504 }"
	case "GATEWAY_ERROR":
		return "{ status 502:504 }"
	case "NOT_FOUND":
		return "{ status 404 }"
	case "FORBIDDEN":
		return "{ status 403 }"
	}
	return ""
}

func ms(v int64) string { return strconv.FormatInt(v, 10) + "ms" }

func (g *gen) backend(c *chain, unsafe bool) {
	scn := c.origins[0].Scenario
	name := backendName(c.first, unsafe)
	g.p("backend %s # scenario %s\n  balance first\n", name, scn)
	os := c.origins
	if unsafe {
		// ATT-2: an unsafe method gets one attempt to the primary.
		os = os[:1]
		g.p("  retries 0\n  retry-on none\n")
	} else {
		g.attempts(c)
	}
	p := os[0]
	// TMO-1 and TMO-5 share timeout server; TMO-4: the primary's values
	// stand for the whole chain.
	server := min(p.Timeouts.ConnectMs, p.Timeouts.ReadMs)
	g.p("  timeout connect %s\n  timeout server %s\n", ms(p.Timeouts.ConnectMs), ms(server))
	if !unsafe {
		if p.Timeouts.ConnectMs != p.Timeouts.ReadMs {
			g.limit("TMO-1", scn, fmt.Sprintf("timeout server is %s for both the wait for headers (connectTimeout %s) and body reads (readTimeout %s)", ms(server), ms(p.Timeouts.ConnectMs), ms(p.Timeouts.ReadMs)), docTimeout)
		}
		for _, o := range os[1:] {
			if o.Timeouts.ConnectMs != p.Timeouts.ConnectMs || o.Timeouts.ReadMs != p.Timeouts.ReadMs {
				g.limit("TMO-4", scn, "timeouts are per backend: the failover "+o.Name+" gets the primary's", docTimeout)
			}
		}
	}
	// HST-1/HST-6: Host and headers are per backend, not per server.
	if p.HostRewrite != "" {
		g.p("  http-request set-header Host %s # HST-1 (origin)\n", quote(p.HostRewrite))
	}
	g.headerRules("http-request", nil, p.RequestHeadersToAdd, "") // HST-6
	if !unsafe {
		for _, o := range os[1:] {
			if o.HostRewrite != p.HostRewrite {
				g.limit("HST-2", scn, "Host rewrites are per backend: the failover "+o.Name+" gets the primary's Host", docHTTPReq)
			}
			if !slices.Equal(o.RequestHeadersToAdd, p.RequestHeadersToAdd) {
				g.limit("HST-6", scn, "origin request headers are per backend: the failover "+o.Name+" gets the primary's", docHTTPReq)
			}
		}
	}
	g.p("  http-request del-header TE # PRT-5\n")
	if c.cache != nil && !unsafe {
		g.p("  http-request cache-use %s\n  http-response cache-store %s\n", cacheName(c), cacheName(c))
	}
	// ATT-7: a final status that matched the origin's retry conditions is 502.
	for i, o := range os {
		var acls []string
		for _, rc := range o.RetryConditions {
			if a := statusACL(rc); a != "" {
				acls = append(acls, a)
			}
		}
		for _, a := range acls {
			g.p("  http-response set-status 502 if { srv_id %d } %s\n", i+1, a)
		}
	}
	for i, o := range os {
		g.server(i, o)
	}
	g.p("\n")
	if c.cache != nil && !unsafe {
		g.cacheSection(c)
	}
}

func cacheName(c *chain) string { return "c_" + nonName.ReplaceAllString(c.first, "_") }

func (g *gen) cacheSection(c *chain) {
	ttl := int64(3600)
	if c.cache.DefaultTTLSeconds != nil {
		ttl = *c.cache.DefaultTTLSeconds
	}
	g.p("cache %s # CCH-2 %s\n  total-max-size 16\n  max-object-size 8388608\n  max-age %d\n  process-vary on\n\n", cacheName(c), c.cache.Mode, ttl)
}

// attempts writes retries, retry-on and redispatch for a chain (ATT-3..5).
func (g *gen) attempts(c *chain) {
	os := c.origins
	scn := os[0].Scenario
	total := genutil.Attempts(os)
	g.p("  retries %d\n", total-1)
	var on []string
	for _, o := range os {
		for _, rc := range o.RetryConditions {
			ks, full := retryOn(rc)
			if !full && rc != "HTTP_5XX" {
				g.limit("ATT-5", scn, "retry condition "+rc+" has no retry-on keyword", docRetryOn)
			}
			for _, k := range ks {
				if !slices.Contains(on, k) {
					on = append(on, k)
				}
			}
		}
		if !slices.Equal(o.RetryConditions, os[0].RetryConditions) {
			g.limit("ATT-5", scn, "retry-on is per backend: every origin of the chain retries on the union of their conditions", docRetryOn)
		}
	}
	if len(on) == 0 {
		on = []string{"none"}
	}
	g.p("  retry-on %s\n", strings.Join(on, " "))
	switch {
	case len(os) == 1:
		g.p("  option redispatch 0\n")
	case len(os) == 2:
		m0 := max(os[0].MaxAttempts, 1)
		if m0 >= total {
			g.p("  option redispatch 0\n")
			break
		}
		// The retry number m0 (1-based) must go to the failover: that is
		// the (total-m0)th retry counting back from the last (-1).
		g.p("  option redispatch -%d # ATT-3: the failover after %d attempts\n", total-m0, m0)
		if m0 > 1 {
			g.limit("ATT-3", scn, "retries on a status (retry-on with codes) go to another server each time (balance first then alternates primary and failover), so the primary's maxAttempts is not kept", docRedispatch)
		}
	default:
		g.p("  option redispatch 1\n")
		g.limit("ATT-3", scn, fmt.Sprintf("a chain of %d origins: redispatch moves to another server on every retry, so each origin's maxAttempts is not kept", len(os)), docRedispatch)
	}
}

func (g *gen) server(i int, o topology.NeutralOrigin) {
	scn := o.Scenario
	switch {
	case strings.HasPrefix(o.Address, "gs://"):
		g.limit("BKT-4", scn, "HAProxy has no Cloud Storage client", docServer)
		g.p("  server %s 127.0.0.1:9 disabled # gs:// is not reachable\n", serverName(o))
		return
	case o.AWSV4 != nil:
		g.limit("BKT-1", scn, "origin "+o.Name+" needs SigV4 signing, which HAProxy cannot do: requests go unsigned", docHTTPReq)
	}
	g.p("  server %s %s:%d", serverName(o), o.Address, o.Port)
	switch o.Protocol {
	case "HTTP2":
		// PRT-1: h2 only, no fallback to HTTP/1.1.
		g.p(" ssl verify required ca-file %s sni req.hdr(host),field(1,:) alpn h2 proto h2", g.caFile())
	case "HTTPS":
		// PRT-2: HTTP/1.1 over TLS, never h2.
		g.p(" ssl verify required ca-file %s sni req.hdr(host),field(1,:) alpn http/1.1", g.caFile())
	}
	g.p("\n")
}

// serverName is the origin's name (the log's origin field, LOG-2).
func serverName(o topology.NeutralOrigin) string { return nonName.ReplaceAllString(o.Name, "_") }

func (g *gen) caFile() string {
	if g.o.OriginCA == "" {
		return "@system-ca"
	}
	return g.o.OriginCA
}
