// Package trafficserver generates an Apache Traffic Server 9
// configuration (Debian package trafficserver, traffic_server 9.2) from
// the neutral topology (suites/topology.Neutral): a runroot in the run's
// directory (runroot.yaml, TS_RUNROOT) with records.config,
// remap.config, parent.config, storage.config, ip_allow.yaml,
// logging.yaml and one header_rewrite file per route.
//
// The mapping (rule IDs from behaviour.md):
//   - MTH: a remap rule per host and route (exact hosts as map, wildcard
//     hosts as regex_map, "*" as a hostless map), in priority order within
//     a host (MTH-4); methods not in routeMethods get 405 from
//     header_rewrite (MTH-1); no rule matches: 404 (remap_required).
//   - ATT/TMO: per route with conf_remap: connect_attempts_timeout is
//     connectTimeout (ATS's time to first byte, TMO-1),
//     connect_attempts_max_retries the primary's maxAttempts-1 for
//     connect failures (ATT-4), transaction_no_activity_timeout_out the
//     readTimeout (TMO-3) and transaction_active_timeout_out the
//     responseTimeout. A chain with failovers is a parent.config rule for
//     the route's path: the chain's origins as parents (origin servers,
//     parent_is_proxy=false) in strict order, with the primary's retryable
//     statuses as simple (4xx) and unavailable-server (5xx) retry
//     responses (ATT-5).
//   - HST/PRT: pristine Host headers (the client's), a hostRewrite as
//     header_rewrite's set-header Host; SNI from the Host sent
//     (sni_policy host) and the certificate verified against it
//     (verify.server.policy ENFORCED, the emulators' CA).
//   - CCH: per route with conf_remap: BYPASS_CACHE turns the cache off,
//     CACHE_ALL_STATIC and FORCE_CACHE_ALL cache without required headers
//     with defaultTtl as the heuristic lifetime (FORCE also ignoring
//     no-cache), USE_ORIGIN_HEADERS requires an explicit lifetime;
//     negative caching; the cache key policy through the cachekey plugin.
//   - COL: read-while-writer with open-read retries (followers wait for
//     the fill's headers, then stream from it).
//
// What ATS cannot express is declared as Limits (limits.go).
package trafficserver

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/suites/peers/genutil"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Options are what the configuration needs besides the topology.
type Options struct {
	// Dir is the runroot: every configuration, cache, log and runtime
	// file is inside it.
	Dir string
	// Listen is the client-facing address, 127.0.0.1:PORT.
	Listen string
	// CAFile is the PEM file of the emulators' CA (origin TLS).
	CAFile string
	// Resolve maps origin host names to IPs (written to a hosts file).
	Resolve map[string]string
}

// Files is the generated configuration: file name (relative to Dir) to
// content.
type Files map[string]string

// Config returns the runroot's files for n.
func Config(n *topology.Neutral, o Options) (Files, error) {
	host, port, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("trafficserver: listen address %q: %w", o.Listen, err)
	}
	g := &gen{n: n, o: o, files: Files{}, hosts: map[string]string{}}
	g.files["runroot.yaml"] = runroot(o.Dir)
	g.files["etc/records.config"] = records(o, host, port)
	g.files["etc/storage.config"] = o.Dir + "/cache 256M\n"
	g.files["etc/ip_allow.yaml"] = "ip_allow:\n  - apply: in\n    ip_addrs: 0/0\n    action: allow\n    methods: ALL\n  - apply: in\n    ip_addrs: ::/0\n    action: allow\n    methods: ALL\n"
	g.files["etc/logging.yaml"] = logging
	for _, f := range []string{"plugin.config", "cache.config", "hosting.config", "volume.config", "ssl_multicert.config",
		"sni.yaml", "strategies.yaml", "splitdns.config", "socks.config"} {
		g.files["etc/"+f] = ""
	}
	if err := g.remap(); err != nil {
		return nil, err
	}
	g.files["etc/remap.config"] = g.remapCfg.String()
	g.files["etc/parent.config"] = g.parentCfg.String()
	var hosts strings.Builder
	for _, name := range slices.Sorted(maps.Keys(g.hosts)) {
		fmt.Fprintf(&hosts, "%s %s\n", g.hosts[name], name)
	}
	g.files["etc/hosts"] = hosts.String()
	return g.files, nil
}

type gen struct {
	n                   *topology.Neutral
	o                   Options
	files               Files
	remapCfg, parentCfg strings.Builder
	routes              int
	// hosts are the names origins are reached by (the hosts file).
	hosts map[string]string
}

func runroot(dir string) string {
	return fmt.Sprintf(`prefix: /usr
exec_prefix: /usr
bindir: /usr/bin
sbindir: /usr/sbin
sysconfdir: %[1]s/etc
datadir: %[1]s/share
includedir: /usr/include
libdir: /usr/lib/trafficserver
libexecdir: /usr/lib/trafficserver/modules
localstatedir: %[1]s/run
runtimedir: %[1]s/run
logdir: %[1]s/log
cachedir: %[1]s/cache
plugindir: /usr/lib/trafficserver/modules
`, dir)
}

func records(o Options, host, port string) string {
	var b strings.Builder
	c := func(name, typ string, v any) { fmt.Fprintf(&b, "CONFIG %s %s %v\n", name, typ, v) }
	c("proxy.config.http.server_ports", "STRING", port+":ip-in="+host)
	c("proxy.config.admin.user_id", "STRING", "#-1") // stay the user that started it
	c("proxy.config.url_remap.remap_required", "INT", 1)
	c("proxy.config.url_remap.pristine_host_hdr", "INT", 1) // HST-1: the client's Host
	c("proxy.config.http.insert_request_via_str", "INT", 0)
	c("proxy.config.http.insert_response_via_str", "INT", 0)
	c("proxy.config.http.response_server_enabled", "INT", 0)
	c("proxy.config.log.logfile_dir", "STRING", o.Dir+"/log")
	c("proxy.config.log.max_secs_per_buffer", "INT", 1) // LOG records within a second
	c("proxy.config.body_factory.template_sets_dir", "STRING", o.Dir+"/etc/body_factory")
	c("proxy.config.hostdb.host_file.path", "STRING", o.Dir+"/etc/hosts")
	c("proxy.config.hostdb.host_file.interval", "INT", 1)
	c("proxy.config.hostdb.fail.timeout", "INT", 1) // a lookup before the hosts file is loaded is not remembered
	c("proxy.config.diags.debug.enabled", "INT", 0)
	c("proxy.config.diags.output.diag", "STRING", "E")
	// The shared 2-core machine: few threads.
	c("proxy.config.exec_thread.autoconfig", "INT", 0)
	c("proxy.config.exec_thread.limit", "INT", 2)
	c("proxy.config.accept_threads", "INT", 1)
	c("proxy.config.task_threads", "INT", 1)
	c("proxy.config.cache.threads_per_disk", "INT", 2)
	c("proxy.config.cache.ram_cache.size", "INT", 33554432)
	// Origin TLS: SNI from the Host sent, certificate verified (HST-3, PRT-4).
	c("proxy.config.ssl.client.sni_policy", "STRING", "host")
	c("proxy.config.ssl.client.verify.server.policy", "STRING", "ENFORCED")
	c("proxy.config.ssl.client.verify.server.properties", "STRING", "ALL")
	if o.CAFile != "" {
		c("proxy.config.ssl.client.CA.cert.path", "STRING", pathDir(o.CAFile))
		c("proxy.config.ssl.client.CA.cert.filename", "STRING", pathBase(o.CAFile))
	}
	// Attempts: retries are immediate (ATT-11); a failed origin is not
	// skipped by later requests.
	c("proxy.config.http.connect.dead.policy", "INT", 0)
	c("proxy.config.http.down_server.cache_time", "INT", 1)
	c("proxy.config.http.parent_proxy.retry_time", "INT", 1)
	c("proxy.config.http.parent_proxy.fail_threshold", "INT", 100)
	c("proxy.config.http.parent_proxy.total_connect_attempts", "INT", 4) // ATT-3
	// COL: followers wait for the fill's headers, then read while it writes.
	c("proxy.config.cache.enable_read_while_writer", "INT", 1)
	c("proxy.config.http.cache.max_open_read_retries", "INT", 100)
	c("proxy.config.http.cache.open_read_retry_time", "INT", 100)
	c("proxy.config.http.cache.open_write_fail_action", "INT", 0)
	c("proxy.config.cache.read_while_writer.max_retries", "INT", 100)
	c("proxy.config.http.cache.range.write", "INT", 1)
	c("proxy.config.http.cache.when_to_revalidate", "INT", 0)
	return b.String()
}

func pathDir(p string) string {
	if i := strings.LastIndex(p, "/"); i > 0 {
		return p[:i]
	}
	return "."
}

func pathBase(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// logging is the per-request log: one JSON object per client request
// (LOG-1), under the reference's field names where ATS has the field.
const logging = `logging:
  formats:
    - name: edgeconform
      format: '{"msg":"client request","uri":"/%<cqup>","method":"%<cqhm>","status":%<pssc>,"origin_status":"%<sssc>","origin_ip":"%<shi>","cache_status":"%<crc>","latency_ms":%<ttms>,"backend_latency_ms":%<stms>,"range":"%<{Range}cqh>","bytes":%<psql>}'
  logs:
    - filename: access
      format: edgeconform
      mode: ascii
`

func (g *gen) remap() error {
	for _, hr := range genutil.OrderHostRules(g.n.HostRules) {
		pm, ok := genutil.PathMatcher(g.n, hr.PathMatcher)
		if !ok {
			return fmt.Errorf("trafficserver: host rule %v: no path matcher %q", hr.Hosts, hr.PathMatcher)
		}
		rs := genutil.ByPriority(pm.Routes) // MTH-4
		fmt.Fprintf(&g.remapCfg, "# host rule %v -> %s\n", hr.Hosts, hr.PathMatcher)
		for _, r := range rs {
			if err := g.route(hr.Hosts, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// route writes the remap rules of r for every host of its host rule, the
// header_rewrite file, and the parent.config rule of its chain.
func (g *gen) route(hosts []string, r topology.NeutralRoute) error {
	g.routes++
	id := fmt.Sprintf("r%d", g.routes)
	chain := g.n.Chain(r.Origin)
	if len(chain) == 0 {
		return fmt.Errorf("trafficserver: route %s: origin %q not in the topology", r.Scenario, r.Origin)
	}
	primary := chain[0]
	scheme := "http"
	if primary.Protocol == "HTTPS" || primary.Protocol == "HTTP2" {
		scheme = "https" // ATS 9 speaks HTTP/1.1 to origins
	}
	// A route with a failover chain names its origins (parent selection
	// is bypassed for a loopback address); one without reaches the
	// primary's IP, so that it needs no name resolution (the hosts file
	// is loaded about a second after traffic_server starts serving).
	parents := g.parents(chain)
	target := fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(g.ip(primary.Address), strconv.Itoa(primary.Port)))
	if len(parents) >= 2 {
		target = fmt.Sprintf("%s://%s", scheme, g.hostPort(primary))
	}
	hdrFile := "etc/hdr-" + id + ".conf"
	g.files[hdrFile] = headerRewrite(r, primary)
	plugins := []string{"@plugin=header_rewrite.so @pparam=" + g.o.Dir + "/" + hdrFile}
	plugins = append(plugins, confRemap(r, primary)...)
	if k := cacheKey(r); k != "" {
		plugins = append(plugins, k)
	}
	for _, m := range r.Match {
		from, to := "", ""
		switch {
		case m.Prefix != "":
			from = m.Prefix
			to = m.Prefix
			if u := r.URLRewrite; u != nil && u.PathPrefix != "" {
				to = u.PathPrefix // MTH-7
			}
		case m.FullPath != "":
			from, to = m.FullPath, m.FullPath
		default:
			return fmt.Errorf("trafficserver: route %s: pathTemplateMatch %q is not supported by this generator", r.Scenario, m.PathTemplate)
		}
		if len(m.Headers) > 0 || len(m.Query) > 0 {
			// remap matches host and path only: left out, so that the
			// routes without criteria on the same path still answer.
			fmt.Fprintf(&g.remapCfg, "# %s (priority %d): header and query criteria cannot be matched by remap (see Limits)\n", r.Scenario, r.Priority)
			continue
		}
		for _, h := range hosts {
			kind, src := "map", "http://"+h+from
			switch {
			case h == "*":
				src = from // a hostless rule: any host
			case strings.Contains(h, "*"):
				kind, src = "regex_map", "http://"+wildcardRegex(h)+from
			}
			fmt.Fprintf(&g.remapCfg, "%s %s %s%s %s\n", kind, src, target, to, strings.Join(plugins, " "))
		}
	}
	g.parent(r, chain, parents)
	return nil
}

// ip is the address to connect to for an origin address.
func (g *gen) ip(addr string) string {
	if r, ok := g.o.Resolve[addr]; ok {
		return r
	}
	return addr
}

// hostPort is how remap and parent rules name o: a name of its own in
// the hosts file, since ATS sends requests for a loopback address
// straight to it, bypassing parent selection (the failover chain).
func (g *gen) hostPort(o topology.NeutralOrigin) string {
	ip := g.ip(o.Address)
	label := o.Listener
	if label == "" {
		label = "origin"
	}
	name := label + ".origins.edgeconform.test"
	if prev, ok := g.hosts[name]; ok && prev != ip {
		name = o.Name + ".origins.edgeconform.test"
	}
	g.hosts[name] = ip
	return net.JoinHostPort(name, strconv.Itoa(o.Port))
}

func wildcardRegex(h string) string {
	parts := strings.Split(h, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return strings.Join(parts, ".*") // ATS parses the host part up to a '/': no [^/]
}

// headerRewrite is the route's header_rewrite file: 405 for a method
// not allowed (MTH-1), the Host rewrite (HST-1), request headers (route
// level, then the primary's, HST-6), response headers.
func headerRewrite(r topology.NeutralRoute, primary topology.NeutralOrigin) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("cond %%{REMAP_PSEUDO_HOOK} [AND]")
	w("cond %%{METHOD} /^(%s)$/ [NOT]", strings.Join(r.Methods, "|"))
	w("set-status 405")
	var ops []string
	host := primary.HostRewrite
	if host == "" && r.URLRewrite != nil {
		host = r.URLRewrite.Host
	}
	if host != "" {
		ops = append(ops, fmt.Sprintf("set-header Host %q", host))
	}
	for _, h := range r.RequestHeadersToRemove {
		ops = append(ops, "rm-header "+h)
	}
	for _, hs := range [][]topology.NeutralHeader{r.RequestHeadersToAdd, primary.RequestHeadersToAdd} {
		for _, h := range hs {
			ops = append(ops, fmt.Sprintf("%s %s %q", headerVerb(h.Replace), h.Name, h.Value))
		}
	}
	if len(ops) > 0 {
		w("")
		w("cond %%{REMAP_PSEUDO_HOOK}")
		for _, op := range ops {
			w("%s", op)
		}
	}
	w("")
	w("cond %%{SEND_RESPONSE_HDR_HOOK}")
	w("set-header Allow %q", strings.Join(r.Methods, ", "))
	for _, h := range r.ResponseHeadersToRemove {
		w("rm-header %s", h)
	}
	for _, h := range r.ResponseHeadersToAdd {
		w("%s %s %q", headerVerb(h.Replace), h.Name, h.Value)
	}
	return b.String()
}

func headerVerb(replace bool) string {
	if replace {
		return "set-header"
	}
	return "add-header"
}

func seconds(ms int64) int64 { return max(1, (ms+999)/1000) }

// confRemap are the route's per-remap overrides: timeouts, connect
// retries, the cache mode.
func confRemap(r topology.NeutralRoute, o topology.NeutralOrigin) []string {
	var ps []string
	set := func(name string, v any) {
		ps = append(ps, fmt.Sprintf("@plugin=conf_remap.so @pparam=%s=%v", name, v))
	}
	t := o.Timeouts
	set("proxy.config.http.connect_attempts_timeout", seconds(t.ConnectMs))
	retries := 0
	if slices.Contains(o.RetryConditions, "CONNECT_FAILURE") {
		retries = max(o.MaxAttempts, 1) - 1
	}
	set("proxy.config.http.connect_attempts_max_retries", retries)
	set("proxy.config.http.connect_attempts_max_retries_dead_server", retries)
	set("proxy.config.http.parent_proxy.per_parent_connect_attempts", retries+1)
	set("proxy.config.http.transaction_no_activity_timeout_out", seconds(t.ReadMs))
	set("proxy.config.http.transaction_active_timeout_out", seconds(t.ResponseMs))
	c := r.Cache
	switch c.Mode {
	case "", "BYPASS_CACHE":
		set("proxy.config.http.cache.http", 0)
		return ps
	case "USE_ORIGIN_HEADERS":
		set("proxy.config.http.cache.required_headers", 2)
	case "FORCE_CACHE_ALL":
		set("proxy.config.http.cache.required_headers", 0)
		set("proxy.config.http.cache.ignore_server_no_cache", 1)
		set("proxy.config.http.cache.cache_responses_to_cookies", 1)
	default: // CACHE_ALL_STATIC
		set("proxy.config.http.cache.required_headers", 0)
	}
	set("proxy.config.http.cache.http", 1)
	def, maxTTL := int64(3600), int64(86400)
	if c.DefaultTTLSeconds != nil {
		def = *c.DefaultTTLSeconds
	}
	if c.MaxTTLSeconds != nil {
		maxTTL = *c.MaxTTLSeconds
	}
	set("proxy.config.http.cache.heuristic_min_lifetime", def)
	set("proxy.config.http.cache.heuristic_max_lifetime", def)
	set("proxy.config.http.cache.guaranteed_max_lifetime", maxTTL)
	if c.NegativeCaching {
		set("proxy.config.http.negative_caching_enabled", 1)
		lifetime := int64(120) // CCH-5: 404/410/451
		for _, v := range c.NegativeCachingPolicy {
			lifetime = v
		}
		set("proxy.config.http.negative_caching_lifetime", lifetime)
	}
	return ps
}

// cacheKey is the cachekey plugin for a caching route: the query sorted,
// and the route's cacheKeyPolicy (CCH-6); "" when the route bypasses the
// cache.
func cacheKey(r topology.NeutralRoute) string {
	if r.Cache.Mode == "" || r.Cache.Mode == "BYPASS_CACHE" {
		return ""
	}
	// The default key: the client's host and path (pristine URL: not the
	// origin's, MTH-7), the query string sorted (CCH-6).
	ps := []string{"@plugin=cachekey.so", "@pparam=--uri-type=pristine", "@pparam=--sort-params=true"}
	k := r.Cache.Key
	if k == nil {
		return strings.Join(ps, " ")
	}
	if len(k.ExcludedQueryParameters) > 0 {
		ps = append(ps, "@pparam=--exclude-params="+strings.Join(k.ExcludedQueryParameters, ","))
	}
	if len(k.IncludedQueryParameters) > 0 {
		ps = append(ps, "@pparam=--include-params="+strings.Join(k.IncludedQueryParameters, ","))
	}
	if k.ExcludeQueryString {
		ps = append(ps, "@pparam=--remove-all-params=true")
	}
	if k.ExcludeHost {
		ps = append(ps, "@pparam=--remove-prefix=true")
	}
	if len(k.IncludedHeaderNames) > 0 {
		ps = append(ps, "@pparam=--include-headers="+strings.Join(k.IncludedHeaderNames, ","))
	}
	if len(k.IncludedCookieNames) > 0 {
		ps = append(ps, "@pparam=--include-cookies="+strings.Join(k.IncludedCookieNames, ","))
	}
	return strings.Join(ps, " ")
}

// parents are the parent.config entries of a chain: its origins while
// they share the primary's scheme and each moves on to its failover; fewer
// than two means no parent rule.
func (g *gen) parents(chain []topology.NeutralOrigin) []string {
	tls := func(o topology.NeutralOrigin) bool { return o.Protocol != "HTTP" }
	var parents []string
	for i, o := range chain {
		if tls(o) != tls(chain[0]) || (i > 0 && !continues(chain[i-1])) {
			break
		}
		parents = append(parents, g.hostPort(o)+"|1.0")
	}
	if len(parents) < 2 {
		return nil
	}
	return parents
}

// parent writes the route's failover chain as a parent.config rule: the
// chain's origins as origin-server parents, tried in order. Only origins
// of the primary's scheme can be parents.
func (g *gen) parent(r topology.NeutralRoute, chain []topology.NeutralOrigin, parents []string) {
	if len(parents) < 2 || len(r.Match) == 0 {
		return
	}
	simple, unavailable := retryResponses(chain[0].RetryConditions)
	retry := []string{}
	line := fmt.Sprintf(`url_regex=%s parent="%s" round_robin=false go_direct=false parent_is_proxy=false`,
		regexp.QuoteMeta(r.Match[0].Prefix+r.Match[0].FullPath), strings.Join(parents, ";"))
	if len(simple) > 0 {
		retry = append(retry, "simple_retry")
		line += fmt.Sprintf(` simple_server_retry_responses="%s" max_simple_retries=%d`, strings.Join(simple, ","), len(parents)-1)
	}
	if len(unavailable) > 0 {
		retry = append(retry, "unavailable_server_retry")
		line += fmt.Sprintf(` unavailable_server_retry_responses="%s" max_unavailable_server_retries=%d`, strings.Join(unavailable, ","), len(parents)-1)
	}
	switch len(retry) {
	case 1:
		line += " parent_retry=" + retry[0]
	case 2:
		line += " parent_retry=both"
	}
	fmt.Fprintf(&g.parentCfg, "# %s\n%s\n", r.Scenario, line)
}

// continues reports whether o moves on to its failover at all: a parent
// rule fails over on connect failures and the retry responses alike, so
// an origin with any retry condition is followed by its failover.
func continues(o topology.NeutralOrigin) bool { return len(o.RetryConditions) > 0 }

// retryResponses splits the statuses ATT-5 retries under conds into
// ATS's simple (4xx) and unavailable-server (5xx) retry lists.
func retryResponses(conds []string) (simple, unavailable []string) {
	add := func(list *[]string, codes ...int) {
		for _, c := range codes {
			if s := strconv.Itoa(c); !slices.Contains(*list, s) {
				*list = append(*list, s)
			}
		}
	}
	for _, c := range conds {
		switch c {
		case "HTTP_5XX": // the registered 5xx codes: the list must be explicit
			add(&unavailable, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511)
		case "GATEWAY_ERROR":
			add(&unavailable, 502, 503, 504)
		case "RETRIABLE_4XX":
			add(&simple, 409, 429)
		case "NOT_FOUND":
			add(&simple, 404)
		case "FORBIDDEN":
			add(&simple, 403)
		}
	}
	return simple, unavailable
}
