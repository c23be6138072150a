// Package squid generates a Squid 5 configuration (a reverse proxy:
// http_port in accelerator mode, every origin a cache_peer originserver)
// from the neutral topology, so that the conformance suites can judge
// Squid as an edge cache in front of the emulated origins.
//
// Mapping: routes and host rules are ACLs (dstdomain, urlpath_regex,
// req_header) combined so that exactly one route matches (MTH-4, MTH-5);
// each origin of a route's chain is a cache_peer the route may use, in
// chain order, repeated maxAttempts times (Squid tries each destination
// once; forward_max_tries 4 is ATT-4); connect-timeout per peer (TMO-1),
// forceddomain for the Host (HST-1, HST-2), tls-domain for the name the
// certificate is verified against (HST-3, PRT-4); refresh_pattern per
// cacheable route (CCH-2), collapsed_forwarding (COL-1). What Squid cannot
// express (h2 to origins, retries on statuses per origin, 405 for a
// method, per-route read and total timeouts, sub-minute TTLs, redirect
// following, range fills) is declared as a Limit with a pointer into the
// Squid configuration reference.
package squid

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/genutil"
	"github.com/edgeconform/edgeconform/suites/topology"
)

const ref = "http://www.squid-cache.org/Doc/config/"

// Documentation pointers.
const (
	docPeer      = ref + "cache_peer/"
	docRetry     = ref + "retry_on_error/"
	docAccess    = ref + "http_access/"
	docDenyInfo  = ref + "deny_info/"
	docRead      = ref + "read_timeout/"
	docForward   = ref + "forward_timeout/"
	docRefresh   = ref + "refresh_pattern/"
	docNegative  = ref + "negative_ttl/"
	docRange     = ref + "range_offset_limit/"
	docReqHeader = ref + "request_header_add/"
	docStoreID   = ref + "store_id_program/"
	docCollapsed = ref + "collapsed_forwarding/"
	docHTTP2     = "https://wiki.squid-cache.org/Features/HTTP2"
)

// Peer is Squid 5 (Debian package squid).
type Peer struct{}

var _ peers.Peer = Peer{}

// Name is "squid".
func (Peer) Name() string { return "squid" }

// Package is the Debian package.
func (Peer) Package() string { return "squid" }

// Binaries are where squid is looked for.
func (Peer) Binaries() []string { return []string{"squid", "/usr/sbin/squid"} }

// ConfigFile is the generated configuration's name in env.Dir.
const ConfigFile = "squid.conf"

// LogFile is where the per-request JSON records go, in env.Dir.
const LogFile = "access.jsonl"

// Counters are quoted: Squid writes "-" for a value it does not have
// (no origin contacted).
const logFormat = `{"msg":"client request","request_id":"%master_xaction","uri":"%rp","method":"%rm","status":%>Hs,` +
	`"bytes":"%<st","origin":"%<A","origin_ip":"%<a","backend_latency_ms":"%<pt","latency_ms":"%tr","cache_status":"%Ss",` +
	`"proxy_status":"%Sh","range":"%{Range}>h"}`

// User is the unprivileged user Squid switches to when started as root
// (Squid refuses to serve as root); it must be able to write env.Dir.
const User = "proxy"

// Generate writes squid.conf into env.Dir and returns squid's foreground
// command (-N: no daemon; -n: a service name of its own, which names its
// shared memory segments). Started as root, Squid runs as User, so
// env.Dir is handed to that user; every directory above it must let
// others through (o+x), else Generate says which does not.
func (Peer) Generate(topo *topology.Neutral, env peers.Env) (*peers.Setup, error) {
	if err := handOver(env.Dir); err != nil {
		return nil, err
	}
	cfg, limits, err := Config(topo, Options{Dir: env.Dir, Listen: env.Listen, OriginCA: env.OriginCA})
	if err != nil {
		return nil, err
	}
	path := env.Path(ConfigFile)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("squid: writing %s: %w", path, err)
	}
	bin := env.Binary
	if bin == "" {
		bin = "squid"
	}
	_, port, _ := strings.Cut(env.Listen, ":")
	return &peers.Setup{
		Command: []string{bin, "-N", "-n", "edgeconform" + port, "-f", path},
		Health:  "/",
		Limits:  limits,
		Logs: &peers.LogSource{Path: env.Path(LogFile), Fields: []string{"uri", "request_id", "status", "origin",
			"origin_ip", "backend_latency_ms", "cache_status", "proxy_status", "range"}},
		Notes: []string{
			"each origin is a cache_peer originserver, listed maxAttempts times; Squid tries the route's peers in order on connect failures",
			"TLS origins are reached with TLS 1.2: Debian's GnuTLS build of Squid 5 gets a read error on TLS 1.3 responses",
			"tls-cafile and tls-domain are set, yet Debian's GnuTLS build of Squid 5 sends requests to origins with expired, untrusted or wrong-name certificates (see the PRT-4 expectation)",
			"read_timeout and forward_timeout are global: the topology's most common readTimeout and maxAttemptsTimeout",
		},
	}, nil
}

// handOver gives dir to User when running as root, and checks User can
// reach it.
func handOver(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(User)
	if err != nil {
		return fmt.Errorf("squid: started as root, Squid switches to user %s: %w", User, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("squid: handing %s to user %s: %w", dir, User, err)
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("squid: checking %s: %w", d, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm()&0o001 == 0 && !(ok && (int(st.Uid) == uid || int(st.Gid) == gid)) {
			return fmt.Errorf("squid: user %s cannot reach %s: %s is %v (chmod o+x it, or put the peer's directory elsewhere)", User, dir, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// Options are what the configuration needs besides the topology.
type Options struct {
	Dir      string // the peer's directory: pid, logs
	Listen   string // 127.0.0.1:PORT
	OriginCA string // PEM file trusted for TLS origins
}

type gen struct {
	n      *topology.Neutral
	o      Options
	b      strings.Builder
	limits genutil.Limits
}

func (g *gen) p(format string, a ...any) { fmt.Fprintf(&g.b, format, a...) }

func (g *gen) limit(rule, scenario, reason, doc string) { g.limits.Add(rule, scenario, reason, doc) }

// route is one route and the ACL list (ANDed, "!" negates) that is true
// exactly when it is the route chosen.
type route struct {
	pm    string
	r     topology.NeutralRoute
	chain []topology.NeutralOrigin
	cond  []string
}

func (r *route) acl() string { return strings.Join(r.cond, " ") }

var nonName = regexp.MustCompile(`[^A-Za-z0-9_]`)

func aclName(parts ...string) string {
	for i, p := range parts {
		parts[i] = nonName.ReplaceAllString(p, "_")
	}
	return strings.Join(parts, "_")
}

// Config returns squid.conf for n and the limits it declares.
func Config(n *topology.Neutral, o Options) (string, []peers.Limit, error) {
	if n == nil {
		return "", nil, fmt.Errorf("squid: no topology")
	}
	if o.Listen == "" || o.Dir == "" {
		return "", nil, fmt.Errorf("squid: no listen address or directory")
	}
	g := &gen{n: n, o: o}
	g.globalLimits()
	read, forward := g.globalTimeouts()
	g.p("# Generated by suites/peers/squid from the neutral topology (%s, profile %s).\n# Rule IDs are behaviour.md's.\n", n.SchemaVersion, n.Profile.Name)
	g.p("http_port %s accel vhost\n", o.Listen)
	g.p("pid_filename %s\ncache_log %s\ncoredump_dir %s\n", filepath.Join(o.Dir, "squid.pid"), filepath.Join(o.Dir, "cache.log"), o.Dir)
	// LOG-1/LOG-2: one "client request" record per request, JSON Lines,
	// with the reference's field names (%<A is the cache_peer's name, %Ss
	// the cache status, %Sh the hierarchy code).
	g.p("logformat edgeconform %s\naccess_log stdio:%s edgeconform\n", logFormat, filepath.Join(o.Dir, LogFile))
	g.p("cache_effective_user %s\npinger_enable off\nnetdb_filename none\nshutdown_lifetime 1 seconds\n", User)
	g.p("workers 1\nmemory_cache_shared off\nshared_transient_entries_limit 0\n")
	g.p("cache_mem 256 MB\nmaximum_object_size_in_memory 16 MB\nmaximum_object_size 16 MB\n")
	g.p("# COL-1: concurrent misses for one URL become one origin request.\ncollapsed_forwarding on\n")
	g.p("# ATT-4: at most 4 attempts; each destination once, no reconnects.\nforward_max_tries 4\nconnect_retries 0\nretry_on_error off\n")
	g.p("# TMO-5 readTimeout and TMO-2 maxAttemptsTimeout, global, in whole seconds.\nread_timeout %d seconds\nforward_timeout %d seconds\n", ceilSec(read), ceilSec(forward))
	g.p("never_direct allow all\nvia on\n# RNG: ranges are forwarded, never widened.\nrange_offset_limit 0\n\n")
	routes, err := g.routes()
	if err != nil {
		return "", nil, err
	}
	g.access(routes)
	g.peersFor(routes)
	g.headers(routes)
	g.caching(routes)
	return g.b.String(), g.limits.List(), nil
}

func (g *gen) globalLimits() {
	g.limit("PRT-1", "", "Squid 5 speaks only HTTP/1.1 to origins: HTTP2 origins are configured as HTTP/1.1 over TLS", docHTTP2)
	g.limit("MTH-1", "", "a method the route does not allow is denied with 403, not 405 (deny_info sets only 3xx redirects or a reset)", docDenyInfo)
	g.limit("MTH-3", "", "an unknown host or path is denied with 403, not 404", docDenyInfo)
	g.limit("MTH-2", "", "a GET with a body or a request with trailers is forwarded, not refused with 400", docAccess)
	g.limit("MTH-7", "", "no path rewrite without a url_rewrite_program helper process: the rewritten route's origin gets the client's path", ref+"url_rewrite_program/")
	g.limit("MTH-6", "", "repeated slashes and dot segments are not normalised before matching", docAccess)
	g.limit("ATT-5", "", "retries on a status are global (retry_on_error: 403, 500, 501, 503 with 502 and 504 always), not per origin; here off: only connect failures move to the next peer", docRetry)
	g.limit("ATT-7", "", "the last origin's status reaches the client; it is not replaced by 502", docRetry)
	g.limit("ATT-9", "", "forward_timeout is global and bounds finding a destination, not the wait for a response", docForward)
	g.limit("TMO-2", "", "maxAttemptsTimeout is one global forward_timeout", docForward)
	g.limit("TMO-4", "", "only connect-timeout is per origin; read_timeout is global", docRead)
	g.limit("TMO-5", "", "no responseTimeout (whole body); readTimeout is one global read_timeout", docRead)
	g.limit("TMO-1", "", "connect-timeout bounds the TCP (and TLS) connect only; the wait for headers falls under the global read_timeout", docPeer)
	g.limit("RDR-1", "", "Squid does not follow origin redirects: every 3xx reaches the client", docPeer)
	g.limit("RDR-2", "", "redirects are never followed", docPeer)
	g.limit("RDR-4", "", "redirects are never followed", docPeer)
	g.limit("RDR-5", "", "redirects are never followed", docPeer)
	g.limit("CCH-2", "", "refresh_pattern TTLs are whole minutes and apply by URL, not by content type: defaultTtl and maxTtl under a minute become 0", docRefresh)
	g.limit("CCH-5", "", "negative caching is one global negative_ttl (0 here), not per route or status", docNegative)
	g.limit("CCH-6", "", "the cache key is the URL as sent (query not sorted; no cacheKeyPolicy without a store_id helper)", docStoreID)
	g.limit("RNG-2", "", "no 2 MiB range fills: a miss fetches the object whole, a range request is forwarded and not stored", docRange)
	g.limit("RNG-3", "", "range requests on objects not cached are forwarded to the origin", docRange)
	g.limit("BKT-1", "", "Squid cannot sign origin requests with AWS SigV4", docPeer)
	g.limit("LOG-1", "", "one access log record per client request: the attempts behind it are not logged", ref+"logformat/")
	g.limit("LOG-2", "", "no cache key fingerprint among the logformat codes", ref+"logformat/")
	g.limit("COL-5", "", "collapsed requests wait for the leader's response headers before streaming", docCollapsed)
}

// mostCommon returns the most frequent value of f over the origins.
func (g *gen) mostCommon(f func(topology.NeutralOrigin) int64) int64 {
	count := map[int64]int{}
	var best int64
	for _, o := range g.n.Origins {
		v := f(o)
		count[v]++
		if count[v] > count[best] || count[v] == count[best] && v > best {
			best = v
		}
	}
	return best
}

func (g *gen) globalTimeouts() (read, forward int64) {
	read = g.mostCommon(func(o topology.NeutralOrigin) int64 { return o.Timeouts.ReadMs })
	forward = g.mostCommon(func(o topology.NeutralOrigin) int64 { return o.Timeouts.MaxAttemptsMs })
	for _, o := range g.n.Origins {
		if o.Timeouts.ReadMs != read {
			for _, rule := range []string{"TMO-5", "TMO-6", "RNG-4"} {
				g.limit(rule, o.Scenario, fmt.Sprintf("origin %s: readTimeout %dms cannot be set; the global read_timeout is %dms", o.Name, o.Timeouts.ReadMs, read), docRead)
			}
		}
		if o.Timeouts.MaxAttemptsMs != forward && o.Name == firstOf(g.n, o) {
			for _, rule := range []string{"TMO-2", "TMO-7", "ATT-9"} {
				g.limit(rule, o.Scenario, fmt.Sprintf("origin %s: maxAttemptsTimeout %dms cannot be set; the global forward_timeout is %dms", o.Name, o.Timeouts.MaxAttemptsMs, forward), docForward)
			}
		}
	}
	return read, forward
}

// ceilSec is ms in whole seconds, rounded up, at least 1.
func ceilSec(ms int64) int64 { return max(1, (ms+999)/1000) }

// firstOf is the first origin of o's chain (the route's origin).
func firstOf(n *topology.Neutral, o topology.NeutralOrigin) string {
	for _, s := range n.Scenarios {
		if s.Name == o.Scenario && len(s.Chain) > 0 {
			return s.Chain[0]
		}
	}
	return o.Name
}

func regexpEscape(s string) string { return regexp.QuoteMeta(s) }

// routes writes the host and route ACLs and returns the routes.
func (g *gen) routes() ([]*route, error) {
	// MTH-5: a path matcher's hosts, minus the hosts of other matchers
	// tried before them.
	hosts := genutil.Hosts(g.n)
	pmHosts := map[string][]string{}
	pmNot := map[string][]string{}
	for i, h := range hosts {
		name := fmt.Sprintf("host_%d", i)
		switch {
		case h.Host == "*":
			g.p("acl %s src all\n", name)
		case strings.HasPrefix(h.Host, "*."):
			g.p("acl %s dstdom_regex -i ^.+%s$\n", name, regexpEscape(h.Host[1:]))
		case strings.HasSuffix(h.Host, ".*"):
			g.p("acl %s dstdom_regex -i ^%s.+$\n", name, regexpEscape(h.Host[:len(h.Host)-1]))
		default:
			g.p("acl %s dstdomain %s\n", name, h.Host)
		}
		pmHosts[h.Matcher] = append(pmHosts[h.Matcher], name)
	}
	for i, h := range hosts {
		for j := 0; j < i; j++ {
			if hosts[j].Matcher != h.Matcher && !slices.Contains(pmNot[h.Matcher], fmt.Sprintf("!host_%d", j)) {
				pmNot[h.Matcher] = append(pmNot[h.Matcher], fmt.Sprintf("!host_%d", j))
			}
		}
	}
	for _, pm := range g.n.PathMatchers {
		if len(pmHosts[pm.Name]) > 0 {
			g.p("acl pm_%s any-of %s\n", aclName(pm.Name), strings.Join(pmHosts[pm.Name], " "))
		}
	}
	var out []*route
	for _, pm := range g.n.PathMatchers {
		if len(pmHosts[pm.Name]) == 0 {
			continue // no host selects it
		}
		var earlier []earlierRoute
		for _, i := range genutil.PriorityOrder(pm) { // MTH-4
			r := pm.Routes[i]
			chain := g.n.Chain(r.Origin)
			if len(chain) == 0 {
				return nil, fmt.Errorf("squid: path matcher %s, route %s: origin %q not in the topology", pm.Name, r.Scenario, r.Origin)
			}
			var ms []string
			for j, m := range r.Match {
				ms = append(ms, g.matchACL(aclName("m", pm.Name, strconv.Itoa(i), strconv.Itoa(j)), m))
			}
			any := aclName("route", pm.Name, strconv.Itoa(i))
			g.p("# scenario %s\nacl %s any-of %s\n", r.Scenario, any, strings.Join(ms, " "))
			rt := &route{pm: pm.Name, r: r, chain: chain}
			rt.cond = append(append([]string{"pm_" + aclName(pm.Name)}, pmNot[pm.Name]...), any)
			for _, e := range earlier {
				if mayOverlap(e.r, r) {
					rt.cond = append(rt.cond, "!"+e.acl)
				}
			}
			earlier = append(earlier, earlierRoute{any, r})
			out = append(out, rt)
		}
	}
	g.p("\n")
	return out, nil
}

type earlierRoute struct {
	acl string
	r   topology.NeutralRoute
}

// mayOverlap says whether a request could match both routes: their
// prefixes nest, or one has a match rule without a prefix.
func mayOverlap(a, b topology.NeutralRoute) bool {
	for _, ma := range a.Match {
		for _, mb := range b.Match {
			pa, pb := strings.ToLower(ma.Prefix), strings.ToLower(mb.Prefix)
			if pa == "" || pb == "" || strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa) {
				return true
			}
		}
	}
	return false
}

func (g *gen) matchACL(name string, m topology.NeutralMatch) string {
	var parts []string
	i := ""
	if m.IgnoreCase {
		i = "-i "
	}
	path := ""
	switch {
	case m.Prefix != "":
		path = "^" + regexpEscape(m.Prefix)
	case m.FullPath != "":
		path = "^" + regexpEscape(m.FullPath) + "(\\?|$)"
	case m.PathTemplate != "":
		path = "^" + genutil.TemplateRegexp(m.PathTemplate) + "(\\?|$)"
	}
	if path != "" {
		g.p("acl %s_path urlpath_regex %s%s\n", name, i, path)
		parts = append(parts, name+"_path")
	}
	for k, h := range m.Headers {
		hn := fmt.Sprintf("%s_h%d", name, k)
		var re string
		switch {
		case h.Exact != "":
			re = "^" + regexpEscape(h.Exact) + "$"
		case h.Prefix != "":
			re = "^" + regexpEscape(h.Prefix)
		case h.Suffix != "":
			re = regexpEscape(h.Suffix) + "$"
		default:
			re = "."
		}
		g.p("acl %s req_header %s %s\n", hn, h.Name, re)
		if h.Invert || (h.Present != nil && !*h.Present) {
			g.limit("MTH-4", "", "an inverted or absent header match is not generated for Squid", docAccess)
		}
		parts = append(parts, hn)
	}
	for k, q := range m.Query {
		qn := fmt.Sprintf("%s_q%d", name, k)
		v := "[^&]*"
		if q.Exact != "" {
			v = regexpEscape(q.Exact)
		}
		g.p("acl %s url_regex [?&]%s(=%s)?(&|$)\n", qn, regexpEscape(q.Name), v)
		parts = append(parts, qn)
	}
	if len(parts) == 0 {
		g.p("acl %s src all\n", name)
		return name
	}
	g.p("acl %s all-of %s\n", name, strings.Join(parts, " "))
	return name
}

// access writes http_access: each route's methods (MTH-1, as 403), and
// nothing outside the routes (MTH-3, as 403).
func (g *gen) access(routes []*route) {
	methods := map[string]string{}
	for _, rt := range routes {
		key := strings.Join(rt.r.Methods, " ")
		name, ok := methods[key]
		if !ok {
			name = fmt.Sprintf("methods_%d", len(methods))
			methods[key] = name
			g.p("acl %s method %s\n", name, key)
		}
		g.p("http_access deny %s !%s\n", rt.acl(), name)
		g.p("http_access allow %s\n", rt.acl())
	}
	g.p("http_access deny all\n\n")
}

// peerName names the k-th attempt's cache_peer of origin o.
func peerName(o topology.NeutralOrigin, k int) string {
	return aclName("p", o.Name, strconv.Itoa(k))
}

// peersFor writes each chain's cache_peers (each origin maxAttempts times,
// 4 in all), and which routes may use them.
func (g *gen) peersFor(routes []*route) {
	done := map[string][]string{} // chain -> peer names
	var order []string
	for _, rt := range routes {
		first := rt.chain[0].Name
		names, ok := done[first]
		if !ok {
			names = g.chainPeers(rt)
			done[first] = names
			order = append(order, first)
		}
		for _, n := range names {
			g.p("cache_peer_access %s allow %s\n", n, rt.acl())
		}
	}
	for _, first := range order {
		for _, n := range done[first] {
			g.p("cache_peer_access %s deny all\n", n)
		}
	}
	g.p("\n")
}

func (g *gen) chainPeers(rt *route) []string {
	var names []string
	left := genutil.Attempts(rt.chain)
	scn := rt.r.Scenario
	routeHost := ""
	if rt.r.URLRewrite != nil {
		routeHost = rt.r.URLRewrite.Host
	}
	for _, o := range rt.chain {
		if o.Protocol == "HTTP2" {
			for _, rule := range []string{"PRT-1", "PRT-3", "HST-1", "HST-2", "HST-3"} {
				g.limit(rule, scn, "origin "+o.Name+" is HTTP2: Squid 5 reaches it with HTTP/1.1 over TLS, which an h2-only origin refuses", docHTTP2)
			}
		}
		if strings.HasPrefix(o.Address, "gs://") {
			g.limit("BKT-4", scn, "Squid has no Cloud Storage client: the gs:// origin "+o.Name+" is left out", docPeer)
			continue
		}
		for k := 0; k < max(o.MaxAttempts, 1) && left > 0; k++ {
			left--
			name := peerName(o, k)
			names = append(names, name)
			g.p("# %s, attempt %d\n", o.Name, k+1)
			g.p("cache_peer %s parent %d 0 no-query no-digest no-netdb-exchange originserver name=%s connect-fail-limit=1000000", o.Address, o.Port, name)
			// TMO-1: connect-timeout is whole seconds.
			g.p(" connect-timeout=%d", ceilSec(o.Timeouts.ConnectMs))
			if o.Timeouts.ConnectMs%1000 != 0 {
				g.limit("TMO-1", scn, fmt.Sprintf("connect-timeout is whole seconds: %dms is rounded up", o.Timeouts.ConnectMs), docPeer)
			}
			// HST-1, HST-2: the origin's hostRewrite, else the route's.
			host := o.HostRewrite
			if host == "" {
				host = routeHost
			}
			if host != "" {
				g.p(" forceddomain=%s", host)
			}
			if o.Protocol == "HTTPS" || o.Protocol == "HTTP2" {
				// HST-3/PRT-4: the certificate is verified against the Host
				// sent; without a rewrite that is the client's, which a
				// static peer cannot know: the client host stands for it.
				tlsName := host
				if tlsName == "" {
					tlsName = g.n.ClientHost
					g.limit("HST-3", scn, "the SNI and the name verified are fixed per peer (tls-domain): the main client host, not each request's Host", docPeer)
				}
				// Debian's Squid 5 uses GnuTLS, which fails to read a TLS 1.3
				// response after the server's session tickets (ERR_READ_ERROR):
				// TLS 1.2 it is.
				g.p(" tls tls-options=NORMAL:-VERS-TLS1.3 tls-domain=%s", tlsName)
				if g.o.OriginCA != "" {
					g.p(" tls-cafile=%s", g.o.OriginCA)
				}
			}
			g.p("\n")
		}
		if len(o.RetryConditions) > 1 || len(o.RetryConditions) == 1 && o.RetryConditions[0] != "CONNECT_FAILURE" {
			g.limit("ATT-5", scn, "origin "+o.Name+": only connect failures move to the next attempt", docRetry)
		}
		if !slices.Contains(o.RetryConditions, "CONNECT_FAILURE") && o.Failover != "" {
			g.limit("ATT-5", scn, "origin "+o.Name+" lacks CONNECT_FAILURE, but Squid moves on after a connect failure whatever the conditions", docPeer)
		}
	}
	return names
}

// headers writes the routes' header actions and the primary origin's
// request headers (HST-6: over the route's; Squid cannot tell them apart
// per peer, so they reach the failover too).
func (g *gen) headers(routes []*route) {
	for _, rt := range routes {
		for _, h := range rt.r.ResponseHeadersToAdd {
			g.p("reply_header_add %s %s %s\n", h.Name, strconv.Quote(h.Value), rt.acl())
		}
		for _, h := range rt.r.RequestHeadersToRemove {
			g.p("request_header_access %s deny %s\n", h, rt.acl())
		}
		primary := rt.chain[0]
		own := map[string]bool{}
		for _, h := range primary.RequestHeadersToAdd {
			own[strings.ToLower(h.Name)] = true
		}
		for _, o := range rt.chain[1:] {
			if !slices.Equal(o.RequestHeadersToAdd, primary.RequestHeadersToAdd) {
				g.limit("HST-6", rt.r.Scenario, "request headers are added per request, not per cache_peer: the primary's reach the failover "+o.Name+" too", docReqHeader)
			}
		}
		for _, h := range rt.r.RequestHeadersToAdd {
			if own[strings.ToLower(h.Name)] {
				continue // the origin's value takes precedence
			}
			if h.Replace {
				g.p("request_header_access %s deny %s\n", h.Name, rt.acl())
			}
			g.p("request_header_add %s %s %s\n", h.Name, strconv.Quote(h.Value), rt.acl())
		}
		for _, h := range primary.RequestHeadersToAdd {
			if h.Replace {
				g.p("request_header_access %s deny %s\n", h.Name, rt.acl())
			}
			g.p("request_header_add %s %s %s\n", h.Name, strconv.Quote(h.Value), rt.acl())
		}
	}
	g.p("\n")
}

// caching writes which routes cache (CCH-2) and their refresh_pattern.
func (g *gen) caching(routes []*route) {
	for _, rt := range routes {
		if rt.r.Cache.Mode != "BYPASS_CACHE" {
			g.p("cache allow %s\n", rt.acl())
		}
	}
	g.p("cache deny all\n")
	minutes := func(p *int64, def int64) int64 {
		v := def
		if p != nil {
			v = *p
		}
		return v / 60
	}
	for _, rt := range routes {
		c := rt.r.Cache
		if c.Mode == "BYPASS_CACHE" || len(rt.r.Match) == 0 || rt.r.Match[0].Prefix == "" {
			continue
		}
		def, maxTTL := minutes(c.DefaultTTLSeconds, 3600), minutes(c.MaxTTLSeconds, 86400)
		re := "^[a-z]+://[^/]+" + regexpEscape(rt.r.Match[0].Prefix)
		switch c.Mode {
		case "FORCE_CACHE_ALL":
			g.p("# %s\nrefresh_pattern %s %d 0%% %d override-expire override-lastmod ignore-reload ignore-no-store ignore-private\n", rt.r.Scenario, re, def, def)
		case "USE_ORIGIN_HEADERS":
			g.p("# %s\nrefresh_pattern %s 0 0%% %d\n", rt.r.Scenario, re, maxTTL)
		default:
			g.p("# %s\nrefresh_pattern %s %d 0%% %d\n", rt.r.Scenario, re, def, max(def, maxTTL))
		}
	}
	g.p("refresh_pattern . 0 0%% 0\n")
}
