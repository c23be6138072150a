package topology

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaVersion is the version of the neutral topology (topology.json):
// additive changes keep it, anything else makes a v2.
const SchemaVersion = "edgeconform.topology/v1"

//go:embed schema/topology-v1.schema.json
var schemaV1 string

// SchemaV1 is the JSON Schema of SchemaVersion (schema/topology-v1.schema.json).
func SchemaV1() []byte { return []byte(schemaV1) }

// DefaultMethods are a route's methods when it lists none (MTH-6).
var defaultMethods = []string{"GET", "HEAD", "OPTIONS"}

// Neutral is the whole topology as data, independent of any one CDN's
// configuration language: what a generator for another implementation
// (suites/peers) reads, and what ParamsFile (topology.json) holds. It is
// derived from Scenarios() by the same Build as the reference's YAML, with
// every default made explicit (maxAttempts, retryConditions, every
// timeout, the port, the route's methods and cache mode).
//
// Durations are integer milliseconds (fields ending in Ms), cache TTLs
// whole seconds (ending in Seconds).
type Neutral struct {
	SchemaVersion string `json:"schemaVersion"`
	// Params are the parameters it was generated with (the profile, the
	// hosts, the listeners' ports); the suites read them.
	Params
	// ClientHosts are the Host values clients send to the main routes.
	ClientHosts []string `json:"clientHosts"`
	// Listeners are the emulator listeners the origins name.
	Listeners []NeutralListener `json:"listeners"`
	// Origins are every origin, chains linked by Failover.
	Origins []NeutralOrigin `json:"origins"`
	// HostRules map request hosts to path matchers; the first rule whose
	// host matches wins (exact hosts before wildcards, "*" last; MTH-5).
	HostRules []NeutralHostRule `json:"hostRules"`
	// PathMatchers hold the routes.
	PathMatchers []NeutralPathMatcher `json:"pathMatchers"`
	// Scenarios are the named scenarios available with these parameters.
	Scenarios []NeutralScenario `json:"scenarios"`
	// Omitted are scenarios left out with these parameters, and why.
	Omitted []OmittedScenario `json:"omitted,omitempty"`
}

// NeutralListener is one emulator listener.
type NeutralListener struct {
	Name string `json:"name"`
	// Profile is the originemu profile: http, https, h2, tls-expired, ...
	Profile string `json:"profile"`
	// Host and Port are where the system under test reaches it.
	Host string `json:"host"`
	Port int    `json:"port"`
}

// NeutralOrigin is one origin with every default applied.
type NeutralOrigin struct {
	Name string `json:"name"`
	// Scenario is the scenario whose chain it belongs to.
	Scenario string `json:"scenario"`
	// Listener is the emulator listener it reaches ("" for gs://).
	Listener string `json:"listener,omitempty"`
	// Protocol is HTTP (cleartext HTTP/1.1), HTTPS (HTTP/1.1 over TLS,
	// never h2) or HTTP2 (h2 over TLS, no fallback); PRT-1.
	Protocol string `json:"protocol,omitempty"`
	// Address is a host name or IP (or gs://BUCKET); Port the port to
	// connect to. DefaultPort says no port was configured: Port is the
	// protocol's default (PRT-3).
	Address     string `json:"address"`
	Port        int    `json:"port"`
	DefaultPort bool   `json:"defaultPort,omitempty"`
	// MaxAttempts and RetryConditions: ATT-2, ATT-5.
	MaxAttempts     int      `json:"maxAttempts"`
	RetryConditions []string `json:"retryConditions"`
	// Timeouts: TMO-1..5 (readTimeout already capped by responseTimeout).
	Timeouts NeutralTimeouts `json:"timeouts"`
	// RedirectConditions (MOVED_PERMANENTLY, FOUND, ...) and their status
	// codes: RDR-1.
	RedirectConditions []string `json:"redirectConditions,omitempty"`
	RedirectCodes      []int    `json:"redirectCodes,omitempty"`
	// HostRewrite is the origin's hostRewrite (HST-1): the Host and SNI
	// of its requests.
	HostRewrite string `json:"hostRewrite,omitempty"`
	// RequestHeadersToAdd are added to this origin's requests only (HST-6).
	RequestHeadersToAdd []NeutralHeader `json:"requestHeadersToAdd,omitempty"`
	// Failover is the next origin of the chain ("" at its end).
	Failover string `json:"failover,omitempty"`
	// AWSV4 signs the origin's requests (BKT-1).
	AWSV4 *NeutralAWSV4 `json:"awsV4,omitempty"`
	// FlexShieldingRegions (SHD-2).
	FlexShieldingRegions []string `json:"flexShieldingRegions,omitempty"`
	// RedirectAllowList is the reference's redirect allow-list (RDR-6,
	// EXT; only in topologies generated for the reference).
	RedirectAllowList []string `json:"redirectAllowList,omitempty"`
}

// NeutralTimeouts are an origin's timeouts in milliseconds.
type NeutralTimeouts struct {
	ConnectMs     int64 `json:"connectMs"`
	MaxAttemptsMs int64 `json:"maxAttemptsMs"`
	ReadMs        int64 `json:"readMs"`
	ResponseMs    int64 `json:"responseMs"`
}

// Connect, MaxAttempts, Read and Response are the timeouts as durations.
func (t NeutralTimeouts) Connect() time.Duration {
	return time.Duration(t.ConnectMs) * time.Millisecond
}
func (t NeutralTimeouts) MaxAttempts() time.Duration {
	return time.Duration(t.MaxAttemptsMs) * time.Millisecond
}
func (t NeutralTimeouts) Read() time.Duration { return time.Duration(t.ReadMs) * time.Millisecond }
func (t NeutralTimeouts) Response() time.Duration {
	return time.Duration(t.ResponseMs) * time.Millisecond
}

// NeutralAWSV4 is how an origin signs (SigV4, service s3). SecretVersion
// names the secret; the test key itself is Params.S3.Secret.
type NeutralAWSV4 struct {
	AccessKeyID   string `json:"accessKeyId"`
	Region        string `json:"region"`
	SecretVersion string `json:"secretVersion"`
}

// NeutralHeader is a header to add; Replace replaces any value the
// request already has instead of appending.
type NeutralHeader struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Replace bool   `json:"replace,omitempty"`
}

// NeutralHostRule sends requests for Hosts (exact names, "*.suffix",
// "prefix.*" or "*") to a path matcher.
type NeutralHostRule struct {
	Hosts       []string `json:"hosts"`
	PathMatcher string   `json:"pathMatcher"`
}

// NeutralPathMatcher is a named list of routes.
type NeutralPathMatcher struct {
	Name   string         `json:"name"`
	Routes []NeutralRoute `json:"routes"`
}

// NeutralRoute is one route: the lowest Priority among matching routes
// wins (MTH-4).
type NeutralRoute struct {
	Scenario string `json:"scenario"`
	Priority int64  `json:"priority"`
	// Match rules are OR-ed.
	Match []NeutralMatch `json:"match"`
	// Origin is the first origin of the chain.
	Origin string `json:"origin"`
	// Methods the route allows; others get 405 (MTH-6).
	Methods []string `json:"methods"`
	// URLRewrite is applied after matching (MTH-7, HST-1).
	URLRewrite *NeutralURLRewrite `json:"urlRewrite,omitempty"`
	// Headers to add and remove, toward the origin and the client.
	RequestHeadersToAdd     []NeutralHeader `json:"requestHeadersToAdd,omitempty"`
	RequestHeadersToRemove  []string        `json:"requestHeadersToRemove,omitempty"`
	ResponseHeadersToAdd    []NeutralHeader `json:"responseHeadersToAdd,omitempty"`
	ResponseHeadersToRemove []string        `json:"responseHeadersToRemove,omitempty"`
	Cache                   NeutralCache    `json:"cache"`
}

// NeutralMatch is one match rule: a path criterion (exactly one of
// Prefix, FullPath, PathTemplate) and optional header and query criteria.
type NeutralMatch struct {
	Prefix       string               `json:"prefix,omitempty"`
	FullPath     string               `json:"fullPath,omitempty"`
	PathTemplate string               `json:"pathTemplate,omitempty"`
	IgnoreCase   bool                 `json:"ignoreCase,omitempty"`
	Headers      []NeutralHeaderMatch `json:"headers,omitempty"`
	Query        []NeutralQueryMatch  `json:"query,omitempty"`
}

// NeutralHeaderMatch matches a request header by one criterion.
type NeutralHeaderMatch struct {
	Name    string `json:"name"`
	Exact   string `json:"exact,omitempty"`
	Prefix  string `json:"prefix,omitempty"`
	Suffix  string `json:"suffix,omitempty"`
	Present *bool  `json:"present,omitempty"`
	Invert  bool   `json:"invert,omitempty"`
}

// NeutralQueryMatch matches a query parameter by one criterion.
type NeutralQueryMatch struct {
	Name    string `json:"name"`
	Exact   string `json:"exact,omitempty"`
	Present *bool  `json:"present,omitempty"`
}

// NeutralURLRewrite rewrites the path prefix (or by template) and Host.
type NeutralURLRewrite struct {
	PathPrefix   string `json:"pathPrefix,omitempty"`
	PathTemplate string `json:"pathTemplate,omitempty"`
	Host         string `json:"host,omitempty"`
}

// NeutralCache is a route's cache policy (CCH). TTLs not set are Media
// CDN's defaults (defaultTtl 3600 s, maxTtl 86400 s); clientTtl unset
// passes the origin's lifetime on.
type NeutralCache struct {
	// Mode is BYPASS_CACHE, CACHE_ALL_STATIC, USE_ORIGIN_HEADERS or
	// FORCE_CACHE_ALL (CCH-2).
	Mode              string `json:"mode"`
	DefaultTTLSeconds *int64 `json:"defaultTtlSeconds,omitempty"`
	MaxTTLSeconds     *int64 `json:"maxTtlSeconds,omitempty"`
	ClientTTLSeconds  *int64 `json:"clientTtlSeconds,omitempty"`
	// NegativeCaching and its per-status TTLs (CCH-5).
	NegativeCaching       bool             `json:"negativeCaching,omitempty"`
	NegativeCachingPolicy map[string]int64 `json:"negativeCachingPolicy,omitempty"`
	// Key is the cacheKeyPolicy (CCH-6); nil: the default key.
	Key *NeutralCacheKey `json:"key,omitempty"`
}

// NeutralCacheKey is cacheKeyPolicy.
type NeutralCacheKey struct {
	IncludeProtocol         bool     `json:"includeProtocol,omitempty"`
	ExcludeHost             bool     `json:"excludeHost,omitempty"`
	ExcludeQueryString      bool     `json:"excludeQueryString,omitempty"`
	IncludedQueryParameters []string `json:"includedQueryParameters,omitempty"`
	ExcludedQueryParameters []string `json:"excludedQueryParameters,omitempty"`
	IncludedHeaderNames     []string `json:"includedHeaderNames,omitempty"`
	IncludedCookieNames     []string `json:"includedCookieNames,omitempty"`
}

// NeutralScenario is one named scenario: its route prefix, its chain and
// what it needs. Specs create the objects they use at run time, under
// Prefix, through the emulators' control API.
type NeutralScenario struct {
	Name string `json:"name"`
	// Prefix is the scenario's path prefix (/c/<name>/; "/" for mth).
	Prefix string `json:"prefix"`
	// PathMatchers hold its routes (usually ["main"]).
	PathMatchers []string `json:"pathMatchers"`
	// Chain is its origins, primary first.
	Chain []string `json:"chain"`
	// Listeners are the emulator listeners the chain reaches.
	Listeners []string `json:"listeners"`
	// Requires is what beyond the fixed listeners it needs
	// (default-ports, gcs, s3, reference), "" for nothing.
	Requires string `json:"requires,omitempty"`
}

// OmittedScenario is a scenario not in the topology, and why.
type OmittedScenario struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// MTHScenario names the routes of the MTH-5 host rules' path matchers
// (all reach one origin, "mth").
const MTHScenario = "mth"

// BuildNeutral returns the neutral topology for p.
func BuildNeutral(p Params) (*Neutral, error) {
	q := p
	q.Project = "" // plain origin names: the neutral form has no resource names
	cfg, err := Build(q)
	if err != nil {
		return nil, err
	}
	n := &Neutral{SchemaVersion: SchemaVersion, Params: p, ClientHosts: []string{p.ClientHost, p.AliasHost()}}
	for _, l := range append(Listeners(), BucketListeners()...) {
		host, port := p.OriginHost, p.Ports[l.Name]
		if l.DefaultPort != 0 {
			if p.DefaultPortHost == "" {
				continue
			}
			host, port = p.DefaultPortHost, l.DefaultPort
		}
		if port == 0 {
			continue
		}
		n.Listeners = append(n.Listeners, NeutralListener{Name: l.Name, Profile: string(l.Profile), Host: host, Port: port})
	}
	scenarioOf := map[string]string{}
	listenerOf := map[string]string{}
	for _, s := range Scenarios() {
		if ok, why := p.Available(s); !ok {
			n.Omitted = append(n.Omitted, OmittedScenario{Name: s.Name, Reason: why})
			continue
		}
		ns := NeutralScenario{Name: s.Name, Prefix: Prefix(s.Name), PathMatchers: []string{MainMatcher}, Listeners: []string{}, Requires: s.Requires}
		for j, o := range s.Origins {
			name := OriginName(s.Name, j)
			scenarioOf[name], listenerOf[name] = s.Name, o.Listener
			if o.Bucket {
				listenerOf[name] = ""
			}
			ns.Chain = append(ns.Chain, name)
			if l := listenerOf[name]; l != "" && !slices.Contains(ns.Listeners, l) {
				ns.Listeners = append(ns.Listeners, l)
			}
		}
		n.Scenarios = append(n.Scenarios, ns)
	}
	scenarioOf["mth"], listenerOf["mth"] = MTHScenario, ListenerA
	mth := NeutralScenario{Name: MTHScenario, Prefix: "/", Chain: []string{"mth"}, Listeners: []string{ListenerA}}
	for _, o := range cfg.Origins {
		n.Origins = append(n.Origins, neutralOrigin(cfg, o, scenarioOf[o.Name], listenerOf[o.Name]))
	}
	for _, hr := range cfg.Service.Routing.HostRules {
		n.HostRules = append(n.HostRules, NeutralHostRule{Hosts: slices.Clone(hr.Hosts), PathMatcher: hr.PathMatcher})
	}
	for _, pm := range cfg.Service.Routing.PathMatchers {
		npm := NeutralPathMatcher{Name: pm.Name}
		for _, rr := range pm.RouteRules {
			npm.Routes = append(npm.Routes, neutralRoute(rr, scenarioOf[rr.Origin]))
		}
		if pm.Name != MainMatcher {
			mth.PathMatchers = append(mth.PathMatchers, pm.Name)
		}
		n.PathMatchers = append(n.PathMatchers, npm)
	}
	n.Scenarios = append(n.Scenarios, mth)
	return n, n.check()
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func neutralOrigin(cfg *config.Config, o config.Origin, scenario, listener string) NeutralOrigin {
	e := cfg.Effective(o)
	no := NeutralOrigin{
		Name: o.Name, Scenario: scenario, Listener: listener, Protocol: e.Protocol,
		Address: e.Address, Port: e.Port, DefaultPort: o.Port == 0,
		MaxAttempts: e.MaxAttempts, RetryConditions: slices.Clone(e.RetryConditions),
		Timeouts: NeutralTimeouts{ConnectMs: ms(e.ConnectTimeout), MaxAttemptsMs: ms(e.MaxAttemptsTimeout),
			ReadMs: ms(e.ReadTimeout), ResponseMs: ms(e.ResponseTimeout)},
		RedirectCodes: slices.Clone(e.RedirectCodes), HostRewrite: e.HostRewrite,
		RequestHeadersToAdd: neutralHeaders(e.RequestHeaders), Failover: e.Failover,
		RedirectAllowList: slices.Clone(e.RedirectAllowList),
	}
	if strings.HasPrefix(e.Address, "gs://") {
		no.Protocol, no.Port, no.DefaultPort = "", 0, false
	}
	if o.OriginRedirect != nil {
		no.RedirectConditions = slices.Clone(o.OriginRedirect.RedirectConditions)
	}
	if a := e.AWSV4; a != nil {
		no.AWSV4 = &NeutralAWSV4{AccessKeyID: a.AccessKeyID, Region: a.OriginRegion, SecretVersion: a.SecretAccessKeyVersion}
	}
	if o.FlexShielding != nil {
		no.FlexShieldingRegions = slices.Clone(o.FlexShielding.FlexShieldingRegions)
	}
	return no
}

func neutralHeaders(hs []config.HeaderToAdd) []NeutralHeader {
	var out []NeutralHeader
	for _, h := range hs {
		out = append(out, NeutralHeader{Name: h.HeaderName, Value: h.HeaderValue, Replace: h.Replace})
	}
	return out
}

func headerNames(hs []config.HeaderToRemove) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.HeaderName)
	}
	return out
}

func secondsOf(d *config.Duration) *int64 {
	if d == nil {
		return nil
	}
	s := int64(d.D() / time.Second)
	return &s
}

func neutralRoute(rr config.RouteRule, scenario string) NeutralRoute {
	r := NeutralRoute{Scenario: scenario, Priority: int64(rr.Priority), Origin: rr.Origin, Methods: defaultMethods,
		Cache: NeutralCache{Mode: "CACHE_ALL_STATIC"}}
	for _, m := range rr.MatchRules {
		nm := NeutralMatch{Prefix: m.PrefixMatch, FullPath: m.FullPathMatch, PathTemplate: m.PathTemplateMatch, IgnoreCase: m.IgnoreCase}
		for _, h := range m.HeaderMatches {
			nm.Headers = append(nm.Headers, NeutralHeaderMatch{Name: h.HeaderName, Exact: h.ExactMatch, Prefix: h.PrefixMatch,
				Suffix: h.SuffixMatch, Present: h.PresentMatch, Invert: h.InvertMatch})
		}
		for _, q := range m.QueryParameterMatches {
			nm.Query = append(nm.Query, NeutralQueryMatch{Name: q.Name, Exact: q.ExactMatch, Present: q.PresentMatch})
		}
		r.Match = append(r.Match, nm)
	}
	if rr.RouteMethods != nil && len(rr.RouteMethods.AllowedMethods) > 0 {
		r.Methods = rr.RouteMethods.AllowedMethods
	}
	r.Methods = slices.Clone(r.Methods)
	if ha := rr.HeaderAction; ha != nil {
		r.RequestHeadersToAdd, r.ResponseHeadersToAdd = neutralHeaders(ha.RequestHeadersToAdd), neutralHeaders(ha.ResponseHeadersToAdd)
		r.RequestHeadersToRemove, r.ResponseHeadersToRemove = headerNames(ha.RequestHeadersToRemove), headerNames(ha.ResponseHeadersToRemove)
	}
	if ra := rr.RouteAction; ra != nil {
		if u := ra.URLRewrite; u != nil {
			r.URLRewrite = &NeutralURLRewrite{PathPrefix: u.PathPrefixRewrite, PathTemplate: u.PathTemplateRewrite, Host: u.HostRewrite}
		}
		if cp := ra.CDNPolicy; cp != nil {
			if cp.CacheMode != "" {
				r.Cache.Mode = cp.CacheMode
			}
			r.Cache.DefaultTTLSeconds, r.Cache.MaxTTLSeconds, r.Cache.ClientTTLSeconds = secondsOf(cp.DefaultTTL), secondsOf(cp.MaxTTL), secondsOf(cp.ClientTTL)
			r.Cache.NegativeCaching = cp.NegativeCaching
			for code, d := range cp.NegativeCachingPolicy {
				if r.Cache.NegativeCachingPolicy == nil {
					r.Cache.NegativeCachingPolicy = map[string]int64{}
				}
				r.Cache.NegativeCachingPolicy[code] = int64(d.D() / time.Second)
			}
			if k := cp.CacheKeyPolicy; k != nil {
				r.Cache.Key = &NeutralCacheKey{IncludeProtocol: k.IncludeProtocol, ExcludeHost: k.ExcludeHost, ExcludeQueryString: k.ExcludeQueryString,
					IncludedQueryParameters: k.IncludedQueryParameters, ExcludedQueryParameters: k.ExcludedQueryParameters,
					IncludedHeaderNames: k.IncludedHeaderNames, IncludedCookieNames: k.IncludedCookieNames}
			}
		}
	}
	return r
}

// Origin returns the named origin.
func (n *Neutral) Origin(name string) (NeutralOrigin, bool) {
	for _, o := range n.Origins {
		if o.Name == name {
			return o, true
		}
	}
	return NeutralOrigin{}, false
}

// Chain returns the chain starting at origin first: it, its failover,
// and so on.
func (n *Neutral) Chain(first string) []NeutralOrigin {
	var out []NeutralOrigin
	for name := first; name != "" && len(out) <= len(n.Origins); {
		o, ok := n.Origin(name)
		if !ok {
			break
		}
		out = append(out, o)
		name = o.Failover
	}
	return out
}

// Scenario returns the named scenario.
func (n *Neutral) Scenario(name string) (NeutralScenario, bool) {
	for _, s := range n.Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return NeutralScenario{}, false
}

// Listener returns the named listener.
func (n *Neutral) Listener(name string) (NeutralListener, bool) {
	for _, l := range n.Listeners {
		if l.Name == name {
			return l, true
		}
	}
	return NeutralListener{}, false
}

// check reports what a generator could not resolve: a version it does
// not know, origins or path matchers named but missing, failover cycles.
func (n *Neutral) check() error {
	if n.SchemaVersion != SchemaVersion {
		return fmt.Errorf("topology schemaVersion %q: this build reads %q", n.SchemaVersion, SchemaVersion)
	}
	if err := n.Params.Check(); err != nil {
		return err
	}
	var problems []string
	origins := map[string]NeutralOrigin{}
	for _, o := range n.Origins {
		if _, dup := origins[o.Name]; dup {
			problems = append(problems, fmt.Sprintf("origin %q listed twice", o.Name))
		}
		origins[o.Name] = o
	}
	for _, o := range n.Origins {
		if o.Failover != "" {
			if _, ok := origins[o.Failover]; !ok {
				problems = append(problems, fmt.Sprintf("origin %s: failover %q is not an origin", o.Name, o.Failover))
			}
		}
		seen := map[string]bool{}
		for name := o.Name; name != ""; name = origins[name].Failover {
			if seen[name] {
				problems = append(problems, fmt.Sprintf("origin %s: failover cycle through %s", o.Name, name))
				break
			}
			seen[name] = true
		}
		if o.Listener != "" {
			if _, ok := n.Listener(o.Listener); !ok {
				problems = append(problems, fmt.Sprintf("origin %s: listener %q is not in listeners", o.Name, o.Listener))
			}
		}
	}
	matchers := map[string]bool{}
	for _, pm := range n.PathMatchers {
		matchers[pm.Name] = true
		for i, r := range pm.Routes {
			if _, ok := origins[r.Origin]; !ok {
				problems = append(problems, fmt.Sprintf("pathMatchers[%s].routes[%d]: origin %q is not an origin", pm.Name, i, r.Origin))
			}
		}
	}
	for i, hr := range n.HostRules {
		if !matchers[hr.PathMatcher] {
			problems = append(problems, fmt.Sprintf("hostRules[%d]: path matcher %q is not a path matcher", i, hr.PathMatcher))
		}
	}
	for _, s := range n.Scenarios {
		for _, name := range s.Chain {
			if _, ok := origins[name]; !ok {
				problems = append(problems, fmt.Sprintf("scenario %s: origin %q is not an origin", s.Name, name))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("topology: %s", strings.Join(problems, "; "))
	}
	return nil
}

// NeutralJSON encodes n for ParamsFile.
func NeutralJSON(n *Neutral) ([]byte, error) {
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the neutral topology: %w", err)
	}
	return append(b, '\n'), nil
}

// ValidateSchema checks data against SchemaV1, naming every place where
// it does not conform.
func ValidateSchema(data []byte) error {
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schemaV1))
	if err != nil {
		return fmt.Errorf("reading the topology schema: %w", err)
	}
	const url = "https://github.com/edgeconform/edgeconform/suites/topology/schema/topology-v1.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("reading the topology schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("compiling the topology schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decoding the topology: %w", err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("the topology does not conform to %s: %w", SchemaVersion, err)
	}
	return nil
}

// ParseNeutral checks data against the schema, decodes it, and checks that
// it hangs together (every origin, listener and path matcher it names
// exists; no failover cycle).
func ParseNeutral(data []byte) (*Neutral, error) {
	if err := ValidateSchema(data); err != nil {
		return nil, err
	}
	var n Neutral
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("decoding the neutral topology: %w", err)
	}
	if err := n.check(); err != nil {
		return nil, err
	}
	return &n, nil
}

// LoadNeutral reads a neutral topology (topology.json).
func LoadNeutral(path string) (*Neutral, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the topology: %w", err)
	}
	n, err := ParseNeutral(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
