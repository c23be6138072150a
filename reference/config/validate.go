package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edgeconform/edgeconform/internal/fielderr"
	"github.com/edgeconform/edgeconform/reference/headervars"
)

// Bounds from the spec's resource tables and Media CDN's API reference.
const (
	maxNameLen            = 64
	maxHostLen            = 255 // hostRewrite, hostRedirect
	maxPathLen            = 1024
	maxHeadersPerList     = 25
	maxRouteRules         = 200
	maxMatchRules         = 5
	maxHeaderMatches      = 3
	maxQueryMatches       = 5
	maxTemplateVars       = 5
	maxRedirectConditions = 5
	maxMaxAttempts        = 4
	minPriority           = 1
	maxPriority           = 999

	MinTimeout            = time.Second // every origin timeout, strict mode
	MaxConnectTimeout     = 15 * time.Second
	MaxMaxAttemptsTimeout = 30 * time.Second
	MaxReadTimeout        = 30 * time.Second
	MaxResponseTimeout    = 120 * time.Second
	MaxTTL                = 365 * 24 * time.Hour // defaultTtl, maxTtl, clientTtl: 31536000s
)

// Enumerations, in the order error messages list them.
var (
	protocolValues          = []string{ProtocolHTTP2, ProtocolHTTPS, ProtocolHTTP}
	retryConditionValues    = []string{RetryConnectFailure, RetryHTTP5xx, RetryGatewayError, RetryRetriable4xx, RetryNotFound, RetryForbidden}
	redirectConditionValues = []string{"MOVED_PERMANENTLY", "FOUND", "SEE_OTHER", "TEMPORARY_REDIRECT", "PERMANENT_REDIRECT"}
	redirectResponseCodes   = []string{"MOVED_PERMANENTLY_DEFAULT", "FOUND", "SEE_OTHER", "TEMPORARY_REDIRECT", "PERMANENT_REDIRECT"}
	methodValues            = []string{"GET", "HEAD", "OPTIONS", "PUT", "POST", "DELETE", "PATCH"}
	cacheModeValues         = []string{"CACHE_ALL_STATIC", "USE_ORIGIN_HEADERS", "FORCE_CACHE_ALL", "BYPASS_CACHE"}
)

// Validate checks c against every bound of the spec's resource model and
// returns all problems at once as fielderr.Errors (nil when c is valid).
func (c *Config) Validate(opts Options) error {
	if c == nil {
		return fielderr.Errors{{Field: docField, Problem: "is missing"}}
	}
	v := &validator{c: c, opts: opts, origins: map[string]int{}}
	v.checkOrigins()
	v.checkService()
	v.checkReference()
	return v.l.Err()
}

type validator struct {
	c       *Config
	opts    Options
	l       fielderr.List
	origins map[string]int // origin name -> index of its first definition
}

func (v *validator) add(field, format string, args ...any) {
	v.l.Add(field, "%s", clipQuoted(fmt.Sprintf(format, args...)))
}

// problem records p at field unless it is "" and says whether it was "".
func (v *validator) problem(field, p string) bool {
	if p != "" {
		v.l.Add(field, "%s", clipQuoted(p))
		return false
	}
	return true
}

// maxQuoted is how much of a value a message quotes.
const maxQuoted = 64

// quotedRE finds the quoted values (%q) in a message.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// clipQuoted shortens every quoted value in msg longer than maxQuoted
// bytes to its first maxQuoted bytes and its length, so that a huge value
// does not make a huge message: "xxxx..."... (100000 bytes).
func clipQuoted(msg string) string {
	if len(msg) < 2*maxQuoted {
		return msg
	}
	return quotedRE.ReplaceAllStringFunc(msg, func(q string) string {
		s, err := strconv.Unquote(q)
		if err != nil || len(s) <= maxQuoted {
			return q
		}
		cut := maxQuoted
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q... (%d bytes)", s[:cut], len(s))
	})
}

// originNames lists the defined origins for "no origin named" messages.
func (v *validator) originNames() string {
	names := slices.Sorted(maps.Keys(v.origins))
	if len(names) == 0 {
		return "no origins are defined"
	}
	return "have " + strings.Join(names, ", ")
}

// ---- origins ----

func (v *validator) checkOrigins() {
	for i := range v.c.Origins {
		name := v.c.Origins[i].Name
		p := fmt.Sprintf("origins[%d].name", i)
		// A badly spelt name still resolves references to it, so that
		// one mistake is reported once.
		if !v.problem(p, checkName(name)) && name == "" {
			continue
		}
		if j, dup := v.origins[name]; dup {
			v.add(p, "duplicate origin name %q (also origins[%d].name): names must be unique", name, j)
			continue
		}
		v.origins[name] = i
	}
	for i := range v.c.Origins {
		v.checkOrigin(fmt.Sprintf("origins[%d]", i), &v.c.Origins[i])
	}
	v.checkFailoverCycles()
	v.checkFailoverChains()
}

// checkFailoverChains reports, at its first origin, a failover chain of
// more origins than Options.MaxFailoverChain (ATT-2: Media CDN makes at
// most 4 attempts across all origins, so with the default of 4 every
// origin of a chain can be tried at least once). Chains that end in a
// cycle were reported by checkFailoverCycles.
func (v *validator) checkFailoverChains() {
	max := bound(v.opts.MaxFailoverChain, DefaultMaxFailoverChain)
	origins := v.c.Origins
	next := func(i int) int {
		j, ok := v.origins[origins[i].FailoverOrigin]
		if !ok || j == i {
			return -1
		}
		return j
	}
	isFailover := make([]bool, len(origins))
	for i := range origins {
		if j := next(i); j >= 0 {
			isFailover[j] = true
		}
	}
	for head := range origins {
		if isFailover[head] {
			continue
		}
		var chain []int
		seen := map[int]bool{}
		for j := head; j >= 0 && !seen[j]; j = next(j) {
			seen[j] = true
			chain = append(chain, j)
		}
		if len(chain) <= max || next(chain[len(chain)-1]) >= 0 { // too short, or a cycle
			continue
		}
		var names []string
		for k, j := range chain {
			if len(chain) > 6 && k == 5 {
				names = append(names, "...")
				names = append(names, origins[chain[len(chain)-1]].Name)
				break
			}
			names = append(names, origins[j].Name)
		}
		v.add(fmt.Sprintf("origins[%d].failoverOrigin", head),
			"failover chain %s has %d origins, more than %d: Media CDN makes at most %d attempts across all origins (ATT-2), so the last could never be tried",
			strings.Join(names, " -> "), len(chain), max, maxMaxAttempts)
	}
}

func (v *validator) checkOrigin(p string, o *Origin) {
	v.problem(p+".originAddress", checkOriginAddress(o.OriginAddress))
	if o.Protocol != "" && !slices.Contains(protocolValues, o.Protocol) {
		v.add(p+".protocol", "must be one of %s, got %q", strings.Join(protocolValues, ", "), o.Protocol)
	}
	if o.Port != 0 && (o.Port < 1 || o.Port > 65535) {
		v.add(p+".port", "must be between 1 and 65535, got %d", o.Port)
	}
	if o.MaxAttempts != 0 && (o.MaxAttempts < 1 || o.MaxAttempts > maxMaxAttempts) {
		v.add(p+".maxAttempts", "must be between 1 and %d, got %d", maxMaxAttempts, o.MaxAttempts)
	}
	if f := o.FailoverOrigin; f != "" {
		if _, ok := v.origins[f]; !ok {
			v.add(p+".failoverOrigin", "no origin named %q (%s)", f, v.originNames())
		} else if f == o.Name {
			v.add(p+".failoverOrigin", "must name another origin, not the origin itself (%q)", f)
		}
	}
	v.enumList(p+".retryConditions", o.RetryConditions, retryConditionValues, 0)
	if t := o.Timeout; t != nil {
		v.checkTimeouts(p+".timeout", t)
	}
	if r := o.OriginRedirect; r != nil {
		v.enumList(p+".originRedirect.redirectConditions", r.RedirectConditions, redirectConditionValues, maxRedirectConditions)
	}
	if a := o.OriginOverrideAction; a != nil {
		ap := p + ".originOverrideAction"
		if a.URLRewrite != nil && a.URLRewrite.HostRewrite != "" {
			v.problem(ap+".urlRewrite.hostRewrite", checkHostPort(a.URLRewrite.HostRewrite))
		}
		if h := a.HeaderAction; h != nil {
			v.headersToAdd(ap+".headerAction.requestHeadersToAdd", h.RequestHeadersToAdd, false)
		}
	}
	if a := o.AWSV4Authentication; a != nil {
		ap := p + ".awsV4Authentication"
		for _, f := range []struct{ name, val string }{
			{"accessKeyId", a.AccessKeyID},
			{"secretAccessKeyVersion", a.SecretAccessKeyVersion},
			{"originRegion", a.OriginRegion},
		} {
			if strings.TrimSpace(f.val) == "" {
				v.add(ap+"."+f.name, "is required (awsV4Authentication needs accessKeyId, secretAccessKeyVersion and originRegion)")
			}
		}
	}
	if s := o.FlexShielding; s != nil {
		sp := p + ".flexShielding.flexShieldingRegions"
		if n := len(s.FlexShieldingRegions); n != 1 {
			v.add(sp, "must list exactly one region, got %d", n)
		}
		for i, r := range s.FlexShieldingRegions {
			if !regionRE.MatchString(r) {
				v.add(fmt.Sprintf("%s[%d]", sp, i), "must be a region name in capitals like AFRICA_SOUTH1 or ME_CENTRAL1, got %q", r)
			}
		}
	}
}

// checkTimeouts checks timeout's four durations and readTimeout <=
// responseTimeout (the effective one, default 30s).
func (v *validator) checkTimeouts(p string, t *OriginTimeout) {
	v.timeout(p+".connectTimeout", t.ConnectTimeout, MaxConnectTimeout)
	v.timeout(p+".maxAttemptsTimeout", t.MaxAttemptsTimeout, MaxMaxAttemptsTimeout)
	readOK := v.timeout(p+".readTimeout", t.ReadTimeout, MaxReadTimeout)
	respOK := v.timeout(p+".responseTimeout", t.ResponseTimeout, MaxResponseTimeout)
	if t.ReadTimeout == nil || !readOK || !respOK {
		return
	}
	resp, which := DefaultResponseTimeout, "the default responseTimeout"
	if t.ResponseTimeout != nil {
		resp, which = t.ResponseTimeout.D(), "responseTimeout"
	}
	if read := t.ReadTimeout.D(); read > resp {
		v.add(p+".readTimeout", "must be at most %s (%s), got %s", which, fmtDur(resp), fmtDur(read))
	}
}

// timeout checks an origin timeout against [1s, max] (lab: (0, max]) and
// says whether it is fine (or unset).
func (v *validator) timeout(field string, d *Duration, max time.Duration) bool {
	if d == nil {
		return true
	}
	got := d.D()
	if v.opts.Lab {
		if got <= 0 || got > max {
			v.add(field, "must be greater than 0s and at most %s (lab mode), got %s", fmtDur(max), fmtDur(got))
			return false
		}
		return true
	}
	if got < MinTimeout || got > max {
		v.add(field, "must be between %s and %s, got %s", fmtDur(MinTimeout), fmtDur(max), fmtDur(got))
		return false
	}
	return true
}

// checkFailoverCycles reports each failover cycle once, at the origin of
// the cycle that comes first in the file, as "a -> b -> a". Self
// references and unknown names were reported by checkOrigin.
func (v *validator) checkFailoverCycles() {
	origins := v.c.Origins
	next := func(i int) int {
		f := origins[i].FailoverOrigin
		j, ok := v.origins[f]
		if f == "" || !ok || f == origins[i].Name {
			return -1
		}
		return j
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(origins))
	for start := range origins {
		var path []int
		j := start
		for j >= 0 && state[j] == unseen {
			state[j] = onPath
			path = append(path, j)
			j = next(j)
		}
		if j >= 0 && state[j] == onPath {
			cycle := path[slices.Index(path, j):]
			first := slices.Index(cycle, slices.Min(cycle))
			cycle = append(cycle[first:len(cycle):len(cycle)], cycle[:first]...)
			names := make([]string, 0, len(cycle)+1)
			for _, k := range cycle {
				names = append(names, origins[k].Name)
			}
			names = append(names, origins[cycle[0]].Name)
			v.add(fmt.Sprintf("origins[%d].failoverOrigin", cycle[0]),
				"failover cycle %s: a failover chain must end", strings.Join(names, " -> "))
		}
		for _, k := range path {
			state[k] = done
		}
	}
}

// enumList checks that each value is one of allowed, none repeats, and
// (max > 0) there are at most max.
func (v *validator) enumList(p string, vals, allowed []string, max int) {
	if max > 0 && len(vals) > max {
		v.add(p, "must have at most %d entries, got %d", max, len(vals))
	}
	for i, s := range vals {
		ip := fmt.Sprintf("%s[%d]", p, i)
		if !slices.Contains(allowed, s) {
			v.add(ip, "must be one of %s, got %q", strings.Join(allowed, ", "), s)
			continue
		}
		if j := slices.Index(vals, s); j < i {
			v.add(ip, "duplicate %q (also %s[%d]): entries must be unique", s, p, j)
		}
	}
}

// headersToAdd checks a list of headers to add. Response header values
// may hold Media CDN's dynamic variables ({cdn_cache_status}); request
// header values are static only, as Media CDN's "Define custom headers"
// says.
func (v *validator) headersToAdd(p string, hs []HeaderToAdd, response bool) {
	if len(hs) > maxHeadersPerList {
		v.add(p, "must have at most %d entries, got %d", maxHeadersPerList, len(hs))
	}
	for i, h := range hs {
		ip := fmt.Sprintf("%s[%d]", p, i)
		v.problem(ip+".headerName", checkToken(h.HeaderName))
		if !v.problem(ip+".headerValue", checkHeaderValue(h.HeaderValue)) {
			continue
		}
		if !response {
			if x := headervars.Static(h.HeaderValue); x != "" {
				v.add(ip+".headerValue", "must be a static value: request headers take no variables, got %s in %q (variables work in responseHeadersToAdd only)", x, h.HeaderValue)
			}
			continue
		}
		if _, err := headervars.Parse(h.HeaderValue); err != nil {
			v.add(ip+".headerValue", "%v", err)
		}
	}
}

func (v *validator) headersToRemove(p string, hs []HeaderToRemove) {
	if len(hs) > maxHeadersPerList {
		v.add(p, "must have at most %d entries, got %d", maxHeadersPerList, len(hs))
	}
	for i, h := range hs {
		v.problem(fmt.Sprintf("%s[%d].headerName", p, i), checkToken(h.HeaderName))
	}
}

// ---- service ----

func (v *validator) checkService() {
	s := &v.c.Service
	v.problem("service.name", checkName(s.Name))
	v.checkRouting("service.routing", &s.Routing)
	if lc := s.LogConfig; lc != nil && lc.SampleRate != nil {
		if r := *lc.SampleRate; !(r >= 0 && r <= 1) {
			v.add("service.logConfig.sampleRate", "must be between 0 and 1, got %v", r)
		}
	}
}

func (v *validator) checkRouting(p string, r *Routing) {
	matchers := map[string]int{}
	for i, m := range r.PathMatchers {
		np := fmt.Sprintf("%s.pathMatchers[%d].name", p, i)
		switch j, dup := matchers[m.Name]; {
		case m.Name == "":
			v.add(np, "is required")
		case dup:
			v.add(np, "duplicate path matcher name %q (also %s.pathMatchers[%d].name): names must be unique", m.Name, p, j)
		default:
			matchers[m.Name] = i
		}
	}
	if len(r.HostRules) == 0 {
		v.add(p+".hostRules", "must have at least 1 host rule, got 0")
	}
	if len(r.PathMatchers) == 0 {
		v.add(p+".pathMatchers", "must have at least 1 path matcher, got 0")
	}
	nHosts, nRoutes := 0, 0
	for _, hr := range r.HostRules {
		nHosts += len(hr.Hosts)
	}
	for _, m := range r.PathMatchers {
		nRoutes += len(m.RouteRules)
	}
	if max := bound(v.opts.MaxHosts, DefaultMaxHosts); nHosts > max {
		v.add(p+".hostRules", "%d hosts, more than %d in one service (the reference's bound: config.Options.MaxHosts)", nHosts, max)
	}
	if max := bound(v.opts.MaxRouteRules, DefaultMaxRouteRules); nRoutes > max {
		v.add(p+".pathMatchers", "%d route rules, more than %d in one service (the reference's bound: config.Options.MaxRouteRules)", nRoutes, max)
	}
	used := map[string]bool{}
	hosts := map[string]string{} // lower-case host -> path of its first appearance
	for i, hr := range r.HostRules {
		hp := fmt.Sprintf("%s.hostRules[%d]", p, i)
		if len(hr.Hosts) == 0 {
			v.add(hp+".hosts", "must have at least 1 host, got 0")
		}
		for k, h := range hr.Hosts {
			kp := fmt.Sprintf("%s.hosts[%d]", hp, k)
			if !v.problem(kp, checkHostPattern(h)) {
				continue
			}
			key := strings.ToLower(h)
			if first, dup := hosts[key]; dup {
				v.add(kp, "host %q is already in %s: a host may appear in only one host rule, once", h, first)
				continue
			}
			hosts[key] = kp
		}
		switch _, ok := matchers[hr.PathMatcher]; {
		case hr.PathMatcher == "":
			v.add(hp+".pathMatcher", "is required")
		case !ok:
			v.add(hp+".pathMatcher", "no path matcher named %q (have %s)", hr.PathMatcher, strings.Join(slices.Sorted(maps.Keys(matchers)), ", "))
		default:
			used[hr.PathMatcher] = true
		}
	}
	for i, m := range r.PathMatchers {
		mp := fmt.Sprintf("%s.pathMatchers[%d]", p, i)
		if m.Name != "" && matchers[m.Name] == i && !used[m.Name] {
			v.add(mp+".name", "path matcher %q is not used by any host rule", m.Name)
		}
		v.checkPathMatcher(mp, &m)
	}
}

func (v *validator) checkPathMatcher(p string, m *PathMatcher) {
	if n := len(m.RouteRules); n < 1 || n > maxRouteRules {
		v.add(p+".routeRules", "must have between 1 and %d route rules, got %d", maxRouteRules, n)
	}
	priorities := map[Int64]int{}
	for i := range m.RouteRules {
		rp := fmt.Sprintf("%s.routeRules[%d]", p, i)
		rr := &m.RouteRules[i]
		if rr.Priority < minPriority || rr.Priority > maxPriority {
			v.add(rp+".priority", "must be between %d and %d, got %d", minPriority, maxPriority, rr.Priority)
		} else if j, dup := priorities[rr.Priority]; dup {
			v.add(rp+".priority", "must be unique within the path matcher: %d is also the priority of %s.routeRules[%d]", rr.Priority, p, j)
		} else {
			priorities[rr.Priority] = i
		}
		v.checkRouteRule(rp, rr)
	}
}

func (v *validator) checkRouteRule(p string, rr *RouteRule) {
	if n := len(rr.MatchRules); n < 1 || n > maxMatchRules {
		v.add(p+".matchRules", "must have between 1 and %d match rules, got %d", maxMatchRules, n)
	}
	// templates[i] holds match rule i's template variables; ok[i] says
	// whether it is a valid pathTemplateMatch.
	templates := make([][]string, len(rr.MatchRules))
	isTemplate := make([]bool, len(rr.MatchRules))
	for i := range rr.MatchRules {
		templates[i], isTemplate[i] = v.checkMatchRule(fmt.Sprintf("%s.matchRules[%d]", p, i), &rr.MatchRules[i])
	}

	switch {
	case rr.Origin != "" && rr.URLRedirect != nil:
		v.add(p, "must set exactly one of origin and urlRedirect, got both")
	case rr.Origin == "" && rr.URLRedirect == nil:
		v.add(p, "must set exactly one of origin and urlRedirect, got neither")
	}
	if rr.Origin != "" {
		if _, ok := v.origins[rr.Origin]; !ok {
			v.add(p+".origin", "no origin named %q (%s)", rr.Origin, v.originNames())
		}
	}
	if rd := rr.URLRedirect; rd != nil {
		v.checkURLRedirect(p+".urlRedirect", rd)
	}
	if ra := rr.RouteAction; ra != nil {
		if u := ra.URLRewrite; u != nil {
			v.checkURLRewrite(p, u, rr.MatchRules, templates, isTemplate)
		}
		if cp := ra.CDNPolicy; cp != nil {
			v.checkCDNPolicy(p+".routeAction.cdnPolicy", cp)
		}
	}
	if h := rr.HeaderAction; h != nil {
		hp := p + ".headerAction"
		v.headersToAdd(hp+".requestHeadersToAdd", h.RequestHeadersToAdd, false)
		v.headersToRemove(hp+".requestHeadersToRemove", h.RequestHeadersToRemove)
		v.headersToAdd(hp+".responseHeadersToAdd", h.ResponseHeadersToAdd, true)
		v.headersToRemove(hp+".responseHeadersToRemove", h.ResponseHeadersToRemove)
	}
	if rm := rr.RouteMethods; rm != nil {
		mp := p + ".routeMethods.allowedMethods"
		if len(rm.AllowedMethods) == 0 {
			v.add(mp, "must list at least one method when routeMethods is set (%s)", strings.Join(methodValues, ", "))
		}
		v.enumList(mp, rm.AllowedMethods, methodValues, 0)
	}
}

// checkMatchRule checks one match rule and returns its template variables
// and whether it is a valid pathTemplateMatch.
func (v *validator) checkMatchRule(p string, mr *MatchRule) (vars []string, isTemplate bool) {
	var set []string
	for _, f := range []struct{ name, val string }{
		{"prefixMatch", mr.PrefixMatch},
		{"fullPathMatch", mr.FullPathMatch},
		{"pathTemplateMatch", mr.PathTemplateMatch},
	} {
		if f.val == "" {
			continue
		}
		set = append(set, f.name)
		if f.name == "pathTemplateMatch" {
			var problem string
			vars, problem = parsePathTemplate(f.val)
			isTemplate = v.problem(p+"."+f.name, problem)
		} else {
			v.problem(p+"."+f.name, checkPath(f.val))
		}
	}
	if len(set) != 1 {
		v.add(p, "must set exactly one of prefixMatch, fullPathMatch and pathTemplateMatch, got %s", listOrNone(set))
	}
	if n := len(mr.HeaderMatches); n > maxHeaderMatches {
		v.add(p+".headerMatches", "must have at most %d entries, got %d", maxHeaderMatches, n)
	}
	for i, hm := range mr.HeaderMatches {
		hp := fmt.Sprintf("%s.headerMatches[%d]", p, i)
		v.problem(hp+".headerName", checkToken(hm.HeaderName))
		var crit []string
		if hm.PresentMatch != nil {
			crit = append(crit, "presentMatch")
		}
		for _, f := range []struct{ name, val string }{
			{"exactMatch", hm.ExactMatch}, {"prefixMatch", hm.PrefixMatch}, {"suffixMatch", hm.SuffixMatch},
		} {
			if f.val != "" {
				crit = append(crit, f.name)
			}
		}
		if len(crit) != 1 {
			v.add(hp, "must set exactly one of presentMatch, exactMatch, prefixMatch and suffixMatch, got %s", listOrNone(crit))
		}
	}
	if n := len(mr.QueryParameterMatches); n > maxQueryMatches {
		v.add(p+".queryParameterMatches", "must have at most %d entries, got %d", maxQueryMatches, n)
	}
	for i, qm := range mr.QueryParameterMatches {
		qp := fmt.Sprintf("%s.queryParameterMatches[%d]", p, i)
		if qm.Name == "" {
			v.add(qp+".name", "is required")
		}
		var crit []string
		if qm.PresentMatch != nil {
			crit = append(crit, "presentMatch")
		}
		if qm.ExactMatch != "" {
			crit = append(crit, "exactMatch")
		}
		if len(crit) != 1 {
			v.add(qp, "must set exactly one of presentMatch and exactMatch, got %s", listOrNone(crit))
		}
	}
	return vars, isTemplate
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, " and ")
}

func (v *validator) checkURLRewrite(rp string, u *URLRewrite, mrs []MatchRule, templates [][]string, isTemplate []bool) {
	p := rp + ".routeAction.urlRewrite"
	if u.PathPrefixRewrite != "" && u.PathTemplateRewrite != "" {
		v.add(p, "must set at most one of pathPrefixRewrite and pathTemplateRewrite, got both")
	}
	if u.PathPrefixRewrite != "" {
		v.problem(p+".pathPrefixRewrite", checkPath(u.PathPrefixRewrite))
	}
	if u.HostRewrite != "" {
		v.problem(p+".hostRewrite", checkHostPort(u.HostRewrite))
	}
	if u.PathTemplateRewrite == "" {
		return
	}
	tp := p + ".pathTemplateRewrite"
	refs, problem := parseTemplateRewrite(u.PathTemplateRewrite)
	if !v.problem(tp, problem) {
		return
	}
	for i, mr := range mrs {
		if mr.PathTemplateMatch == "" {
			v.add(tp, "needs every match rule of the route to use pathTemplateMatch, but %s.matchRules[%d] does not", rp, i)
			return
		}
	}
	for _, ref := range refs {
		for i := range mrs {
			if isTemplate[i] && !slices.Contains(templates[i], ref) {
				v.add(tp, "references {%s}, which %s.matchRules[%d].pathTemplateMatch does not capture", ref, rp, i)
				break
			}
		}
	}
}

func (v *validator) checkURLRedirect(p string, rd *URLRedirect) {
	if rd.PathRedirect != "" && rd.PrefixRedirect != "" {
		v.add(p, "must set at most one of pathRedirect and prefixRedirect, got both")
	}
	if rd.PathRedirect != "" {
		v.problem(p+".pathRedirect", checkRedirectPath(rd.PathRedirect))
	}
	if rd.PrefixRedirect != "" {
		v.problem(p+".prefixRedirect", checkRedirectPath(rd.PrefixRedirect))
	}
	if rd.HostRedirect != "" {
		v.problem(p+".hostRedirect", checkHostPort(rd.HostRedirect))
	}
	if c := rd.RedirectResponseCode; c != "" && !slices.Contains(redirectResponseCodes, c) {
		v.add(p+".redirectResponseCode", "must be one of %s, got %q", strings.Join(redirectResponseCodes, ", "), c)
	}
}

// checkRedirectPath checks pathRedirect / prefixRedirect: like a match
// path, but a pathRedirect may carry a query.
func checkRedirectPath(s string) string {
	path, _, _ := strings.Cut(s, "?")
	if p := checkPath(path); p != "" {
		return p
	}
	if len(s) > maxPathLen {
		return fmt.Sprintf("must be at most %d characters long, got %d", maxPathLen, len(s))
	}
	return ""
}

func (v *validator) checkCDNPolicy(p string, cp *CDNPolicy) {
	if m := cp.CacheMode; m != "" && !slices.Contains(cacheModeValues, m) {
		v.add(p+".cacheMode", "must be one of %s, got %q", strings.Join(cacheModeValues, ", "), m)
	}
	defOK := v.ttl(p+".defaultTtl", cp.DefaultTTL)
	maxOK := v.ttl(p+".maxTtl", cp.MaxTTL)
	v.ttl(p+".clientTtl", cp.ClientTTL)
	if cp.DefaultTTL != nil && cp.MaxTTL != nil && defOK && maxOK && *cp.DefaultTTL > *cp.MaxTTL {
		v.add(p+".defaultTtl", "must be at most maxTtl (%s), got %s", fmtDur(cp.MaxTTL.D()), fmtDur(cp.DefaultTTL.D()))
	}
	for _, code := range slices.Sorted(maps.Keys(cp.NegativeCachingPolicy)) {
		kp := fielderr.MapKey(p+".negativeCachingPolicy", code)
		n, err := strconv.Atoi(code)
		if err != nil || strconv.Itoa(n) != code || n < 300 || n > 599 {
			v.add(kp, "must be keyed by an HTTP status code between 300 and 599, got %q", code)
			continue
		}
		d := cp.NegativeCachingPolicy[code]
		v.ttl(kp, &d)
	}
	if k := cp.CacheKeyPolicy; k != nil {
		kp := p + ".cacheKeyPolicy"
		if len(k.IncludedQueryParameters) > 0 && len(k.ExcludedQueryParameters) > 0 {
			v.add(kp, "must not set both includedQueryParameters and excludedQueryParameters")
		}
		if k.ExcludeQueryString && (len(k.IncludedQueryParameters) > 0 || len(k.ExcludedQueryParameters) > 0) {
			v.add(kp+".excludeQueryString", "must not be set together with includedQueryParameters or excludedQueryParameters")
		}
		for i, h := range k.IncludedHeaderNames {
			v.problem(fmt.Sprintf("%s.includedHeaderNames[%d]", kp, i), checkToken(h))
		}
	}
}

// ttl checks a cache TTL against [0s, 1 year].
func (v *validator) ttl(field string, d *Duration) bool {
	if d == nil {
		return true
	}
	if got := d.D(); got < 0 || got > MaxTTL {
		v.add(field, "must be between 0s and %s (1 year), got %s", fmtDur(MaxTTL), fmtDur(got))
		return false
	}
	return true
}

// ---- reference (EXT) ----

func (v *validator) checkReference() {
	ext := v.c.Reference
	if ext == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(ext.RedirectAllowList)) {
		kp := fielderr.MapKey("reference.redirectAllowList", name)
		if _, ok := v.origins[name]; !ok {
			v.add(kp, "no origin named %q (%s)", name, v.originNames())
		}
		for i, h := range ext.RedirectAllowList[name] {
			if checkHostPattern(h) != "" {
				v.problem(fmt.Sprintf("%s[%d]", kp, i), checkHostPort(h))
			}
		}
	}
}

// ValidShieldingRegion reports whether r has the form of a flexShielding
// region name (AFRICA_SOUTH1, ME_CENTRAL1, ...).
func ValidShieldingRegion(r string) bool { return regionRE.MatchString(r) }
