package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// exampleYAML is the small valid configuration of the package brief.
const exampleYAML = `
origins:
  - name: primary
    originAddress: primary.test
    protocol: HTTP2
    port: 8443
    maxAttempts: 2
    retryConditions: [CONNECT_FAILURE, NOT_FOUND]
    failoverOrigin: backup
    timeout: {connectTimeout: 2s, maxAttemptsTimeout: 10s}
    originRedirect: {redirectConditions: [FOUND]}
  - name: backup
    originAddress: 127.0.0.1
    protocol: HTTP
    port: 8081
service:
  name: media
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: routes}]
    pathMatchers:
      - name: routes
        routeRules:
          - priority: 1
            matchRules: [{prefixMatch: /}]
            origin: primary
`

// fullYAML is a valid configuration that uses most fields; the bad-config
// table changes one thing in it at a time.
const fullYAML = `
origins:
  - name: primary
    description: the packager
    labels: {team: video}
    originAddress: primary.test
    protocol: HTTP2
    port: 8443
    maxAttempts: 2
    retryConditions: [CONNECT_FAILURE, NOT_FOUND]
    failoverOrigin: backup
    timeout: {connectTimeout: 2s, maxAttemptsTimeout: 10s, readTimeout: 5s, responseTimeout: 20s}
    originRedirect: {redirectConditions: [FOUND]}
    originOverrideAction:
      urlRewrite: {hostRewrite: origin.example.com}
      headerAction:
        requestHeadersToAdd: [{headerName: x-edge, headerValue: "1", replace: true}]
  - name: backup
    originAddress: 127.0.0.1
    protocol: HTTP
    port: 8081
  - name: bucket
    originAddress: gs://media-bucket
  - name: s3
    originAddress: media.s3.eu-west-1.amazonaws.com
    protocol: HTTPS
    awsV4Authentication: {accessKeyId: AKIDEXAMPLE, secretAccessKeyVersion: projects/p/secrets/s/versions/1, originRegion: eu-west-1}
    flexShielding: {flexShieldingRegions: [AFRICA_SOUTH1]}
  - name: v6
    originAddress: 2001:db8::1
service:
  name: media
  disableQuic: true
  logConfig: {enable: true, sampleRate: 0.5}
  routing:
    hostRules:
      - hosts: ["media.example.com", "*.cdn.example.com"]
        pathMatcher: routes
      - hosts: ["*"]
        pathMatcher: fallback
    pathMatchers:
      - name: routes
        routeRules:
          - priority: 1
            matchRules: [{prefixMatch: /live/}]
            origin: primary
          - priority: "2"
            matchRules:
              - pathTemplateMatch: /vod/{format}/{id=**}
                headerMatches: [{headerName: x-client, presentMatch: true}]
                queryParameterMatches: [{name: live, exactMatch: "no"}]
            origin: bucket
            routeAction:
              urlRewrite: {pathTemplateRewrite: "/content/{format}/{id}", hostRewrite: vod.example.com}
              cdnPolicy:
                cacheMode: FORCE_CACHE_ALL
                defaultTtl: 3600s
                maxTtl: 86400s
                clientTtl: 60s
                negativeCaching: true
                negativeCachingPolicy: {404: 120s}
                cacheKeyPolicy: {includedQueryParameters: [v], includedHeaderNames: [x-variant]}
            headerAction:
              responseHeadersToAdd: [{headerName: x-cache-route, headerValue: vod}]
              requestHeadersToRemove: [{headerName: cookie}]
            routeMethods: {allowedMethods: [GET, HEAD, OPTIONS]}
          - priority: 3
            matchRules: [{fullPathMatch: /old}]
            urlRedirect: {pathRedirect: /new, redirectResponseCode: FOUND}
          - priority: 4
            matchRules: [{prefixMatch: /s3/}]
            origin: s3
            routeAction: {urlRewrite: {pathPrefixRewrite: /}}
          - priority: 5
            matchRules: [{prefixMatch: /v6/}]
            origin: v6
      - name: fallback
        routeRules:
          - priority: 10
            matchRules: [{prefixMatch: /}]
            origin: backup
reference:
  redirectAllowList:
    primary: [cdn.example.com]
`

// mutate returns base with old replaced by new; old must occur exactly once.
func mutate(t testing.TB, base, old, new string) string {
	t.Helper()
	if n := strings.Count(base, old); n != 1 {
		t.Fatalf("mutation target %q occurs %d times in the base, want once", old, n)
	}
	return strings.Replace(base, old, new, 1)
}

// mustLoad loads doc and fails the test on any error.
func mustLoad(t *testing.T, doc string, opts Options) *Config {
	t.Helper()
	c, err := Load([]byte(doc), opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// loadErrs loads doc, which must fail with fielderr.Errors.
func loadErrs(t *testing.T, doc string, opts Options) fielderr.Errors {
	t.Helper()
	c, err := Load([]byte(doc), opts)
	if err == nil {
		t.Fatalf("Load succeeded (%+v), want an error", c)
	}
	if c != nil {
		t.Errorf("Load returned a config along with the error %v", err)
	}
	es, ok := fielderr.As(err)
	if !ok {
		t.Fatalf("error %v (%T) is not fielderr.Errors", err, err)
	}
	return es
}

// findErr returns the error for field whose problem mentions word.
func findErr(es fielderr.Errors, field, word string) (fielderr.FieldError, bool) {
	for _, e := range es {
		if e.Field == field && strings.Contains(e.Problem, word) {
			return e, true
		}
	}
	return fielderr.FieldError{}, false
}

func TestLoadExampleAndEffectiveDefaults(t *testing.T) {
	c := mustLoad(t, exampleYAML, Options{})
	if len(c.Origins) != 2 || c.Service.Name != "media" {
		t.Fatalf("loaded %+v", c)
	}
	primary, ok := c.Origin("primary")
	if !ok {
		t.Fatal("no origin primary")
	}
	backup, _ := c.Origin("backup")

	got := c.Effective(primary)
	want := EffectiveOrigin{
		Name: "primary", Address: "primary.test", Protocol: ProtocolHTTP2, Port: 8443,
		MaxAttempts: 2, Failover: "backup",
		RetryConditions:    []string{RetryConnectFailure, RetryNotFound},
		ConnectTimeout:     2 * time.Second,
		MaxAttemptsTimeout: 10 * time.Second,
		ReadTimeout:        DefaultReadTimeout,
		ResponseTimeout:    DefaultResponseTimeout,
		RedirectCodes:      []int{302},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Effective(primary)\n got %+v\nwant %+v", got, want)
	}

	got = c.Effective(backup)
	want = EffectiveOrigin{
		Name: "backup", Address: "127.0.0.1", Protocol: ProtocolHTTP, Port: 8081,
		MaxAttempts:        1,
		RetryConditions:    []string{RetryConnectFailure},
		ConnectTimeout:     5 * time.Second,
		MaxAttemptsTimeout: 15 * time.Second,
		ReadTimeout:        15 * time.Second,
		ResponseTimeout:    30 * time.Second,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Effective(backup)\n got %+v\nwant %+v", got, want)
	}
}

func TestEffectiveDefaultPorts(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		port     int
	}{{"", 443}, {"HTTP2", 443}, {"HTTPS", 443}, {"HTTP", 80}} {
		doc := mutate(t, exampleYAML, "    protocol: HTTP\n    port: 8081\n", "")
		if tc.protocol != "" {
			doc = mutate(t, doc, "originAddress: 127.0.0.1\n", "originAddress: 127.0.0.1\n    protocol: "+tc.protocol+"\n")
		}
		c := mustLoad(t, doc, Options{})
		b, _ := c.Origin("backup")
		e := c.Effective(b)
		wantProto := tc.protocol
		if wantProto == "" {
			wantProto = ProtocolHTTP2
		}
		if e.Port != tc.port || e.Protocol != wantProto {
			t.Errorf("protocol %q: effective protocol %s port %d, want %s %d", tc.protocol, e.Protocol, e.Port, wantProto, tc.port)
		}
	}
}

func TestLoadFull(t *testing.T) {
	c := mustLoad(t, fullYAML, Options{})
	rr := c.Service.Routing.PathMatchers[0].RouteRules[1]
	if rr.Priority != 2 {
		t.Errorf("priority written as a string: got %d, want 2", rr.Priority)
	}
	if got := rr.RouteAction.CDNPolicy.NegativeCachingPolicy["404"]; got.D() != 120*time.Second {
		t.Errorf("negativeCachingPolicy[404] = %v, want 2m", got)
	}
	s3, _ := c.Origin("s3")
	e := c.Effective(s3)
	if e.AWSV4 == nil || e.AWSV4.OriginRegion != "eu-west-1" || e.Port != 443 {
		t.Errorf("Effective(s3) = %+v", e)
	}
	p, _ := c.Origin("primary")
	e = c.Effective(p)
	if e.HostRewrite != "origin.example.com" || len(e.RequestHeaders) != 1 || !slices.Equal(e.RedirectAllowList, []string{"cdn.example.com"}) {
		t.Errorf("Effective(primary) = %+v", e)
	}
	if e.ReadTimeout != 5*time.Second || e.ResponseTimeout != 20*time.Second {
		t.Errorf("Effective(primary) timeouts read %v response %v", e.ReadTimeout, e.ResponseTimeout)
	}
}

const exampleJSON = `{"origins":[{"name":"o","originAddress":"o.example.com","timeout":{"connectTimeout":"1.5s"}}],
	"service":{"name":"s","routing":{"hostRules":[{"hosts":["*"],"pathMatcher":"m"}],
	"pathMatchers":[{"name":"m","routeRules":[{"priority":"7","matchRules":[{"fullPathMatch":"/x"}],"origin":"o"}]}]}}}`

func TestLoadJSON(t *testing.T) {
	doc := exampleJSON
	c := mustLoad(t, doc, Options{})
	if got := c.Effective(c.Origins[0]).ConnectTimeout; got != 1500*time.Millisecond {
		t.Errorf("connectTimeout = %v, want 1.5s", got)
	}
	// A typo in JSON is named by its path too.
	es := loadErrs(t, strings.Replace(doc, `"fullPathMatch"`, `"fullpathMatch"`, 1), Options{})
	if _, ok := findErr(es, "service.routing.pathMatchers[0].routeRules[0].matchRules[0].fullpathMatch", `did you mean "fullPathMatch"`); !ok {
		t.Errorf("errors %v do not name the unknown field", es)
	}
}

// badCase is one change to fullYAML and the error it must cause.
type badCase struct {
	name     string
	old, new string
	field    string // the field path the error names
	word     string // a word of the broken bound, in the problem
	n        int    // how many errors in all (0: exactly 1; -1: none, the change is fine)
}

func badConfigs() []badCase {
	extraOrigin := func(name string) string {
		return "  - name: v6\n    originAddress: 2001:db8::1\n  - name: " + name + "\n    originAddress: extra.example.com\n"
	}
	v6 := "  - name: v6\n    originAddress: 2001:db8::1\n"
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+", ", n), ", ") + "]"
	}
	const o0, o1, o2, o3 = "origins[0]", "origins[1]", "origins[2]", "origins[3]"
	const r = "service.routing"
	const m0 = r + ".pathMatchers[0]"
	const rr0, rr1, rr2, rr3 = m0 + ".routeRules[0]", m0 + ".routeRules[1]", m0 + ".routeRules[2]", m0 + ".routeRules[3]"
	const fb = r + ".pathMatchers[1].routeRules[0]"
	const cdn = rr1 + ".routeAction.cdnPolicy"
	return []badCase{
		// Parsing.
		{"unknown field", "connectTimeout: 2s", "conectTimeout: 2s", o0 + ".timeout.conectTimeout", "unknown field", 0},
		{"field in the wrong case", "originAddress: primary.test", "OriginAddress: primary.test", o0 + ".OriginAddress", `did you mean "originAddress"`, 0},
		{"snake_case field", "failoverOrigin: backup", "failover_origin: backup", o0 + ".failover_origin", "unknown field", 0},
		{"string for an integer", "port: 8443", `port: "8443"`, o0 + ".port", "integer", 0},
		{"fraction for an integer", "maxAttempts: 2", "maxAttempts: 2.5", o0 + ".maxAttempts", "integer", 0},
		{"number for a duration", "connectTimeout: 2s", "connectTimeout: 2", o0 + ".timeout.connectTimeout", "duration", 0},
		{"bad duration", "connectTimeout: 2s", "connectTimeout: fast", o0 + ".timeout.connectTimeout", "duration", 0},
		{"bad priority", `priority: "2"`, `priority: second`, rr1 + ".priority", "integer", 0},
		{"object for a list", "retryConditions: [CONNECT_FAILURE, NOT_FOUND]", "retryConditions: {a: b}", o0 + ".retryConditions", "list", 0},
		{"duplicate key", "    protocol: HTTP2\n", "    protocol: HTTP2\n    protocol: HTTPS\n", "config", "already set", 0},
		{"not YAML", "service:\n", "service: [\n", "config", "YAML", 0},

		// Origin names.
		{"bad origin name", v6, extraOrigin("bad name!"), "origins[5].name", "[a-zA-Z][a-zA-Z0-9_-]*", 0},
		{"origin name starts with a digit", v6, extraOrigin("1st"), "origins[5].name", "must match", 0},
		{"origin name too long", v6, extraOrigin(strings.Repeat("a", 65)), "origins[5].name", "64", 0},
		{"duplicate origin name", v6, extraOrigin("backup"), "origins[5].name", "duplicate", 0},
		{"origin name missing", "  - name: bucket\n", "  - name: \"\"\n", o2 + ".name", "required", 2}, // and the route to it

		// originAddress.
		{"address missing", "originAddress: 127.0.0.1", `originAddress: ""`, o1 + ".originAddress", "required", 0},
		{"address with scheme", "originAddress: primary.test", "originAddress: https://primary.test", o0 + ".originAddress", "scheme", 0},
		{"address with path", "originAddress: primary.test", "originAddress: primary.test/media", o0 + ".originAddress", "path", 0},
		{"address with port", "originAddress: primary.test", "originAddress: primary.test:8443", o0 + ".originAddress", "port", 0},
		{"IPv4 with port", "originAddress: 127.0.0.1", "originAddress: 127.0.0.1:8081", o1 + ".originAddress", "port", 0},
		{"IPv6 in brackets", "originAddress: 2001:db8::1", `originAddress: "[2001:db8::1]"`, "origins[4].originAddress", "brackets", 0},
		{"bad IPv6", "originAddress: 2001:db8::1", `originAddress: "2001:db8:::1"`, "origins[4].originAddress", "IPv6", 0},
		{"not an FQDN", "originAddress: primary.test", "originAddress: primary", o0 + ".originAddress", "fully qualified", 0},
		{"bad label", "originAddress: primary.test", "originAddress: prim_ary.test", o0 + ".originAddress", "label", 0},
		{"bad IPv4", "originAddress: 127.0.0.1", "originAddress: 127.0.0.256", o1 + ".originAddress", "IPv4", 0},
		{"bad bucket", "gs://media-bucket", "gs://Media_Bucket", o2 + ".originAddress", "bucket", 0},
		{"bucket with path", "gs://media-bucket", "gs://media-bucket/vod", o2 + ".originAddress", "path", 0},
		{"short bucket", "gs://media-bucket", "gs://ab", o2 + ".originAddress", "at least 3", 0},

		// Protocol, port, attempts, failover, retries.
		{"bad protocol", "protocol: HTTP2", "protocol: h2", o0 + ".protocol", "HTTP2, HTTPS, HTTP", 0},
		{"port too big", "port: 8443", "port: 70000", o0 + ".port", "65535", 0},
		{"negative port", "port: 8443", "port: -1", o0 + ".port", "between 1 and 65535", 0},
		{"too many attempts", "maxAttempts: 2", "maxAttempts: 5", o0 + ".maxAttempts", "between 1 and 4", 0},
		{"negative attempts", "maxAttempts: 2", "maxAttempts: -1", o0 + ".maxAttempts", "between 1 and 4", 0},
		{"unknown failover", "failoverOrigin: backup", "failoverOrigin: nope", o0 + ".failoverOrigin", `no origin named "nope"`, 0},
		{"self failover", "failoverOrigin: backup", "failoverOrigin: primary", o0 + ".failoverOrigin", "itself", 0},
		{"failover cycle", "    port: 8081\n", "    port: 8081\n    failoverOrigin: primary\n", o0 + ".failoverOrigin", "primary -> backup -> primary", 0},
		{"bad retry condition", "[CONNECT_FAILURE, NOT_FOUND]", "[CONNECT_FAILURE, HTTP_404]", o0 + ".retryConditions[1]", "must be one of CONNECT_FAILURE", 0},
		{"duplicate retry condition", "[CONNECT_FAILURE, NOT_FOUND]", "[CONNECT_FAILURE, CONNECT_FAILURE]", o0 + ".retryConditions[1]", "duplicate", 0},

		// Timeouts.
		{"connectTimeout too long", "connectTimeout: 2s", "connectTimeout: 20s", o0 + ".timeout.connectTimeout", "between 1s and 15s, got 20s", 0},
		{"connectTimeout sub-second", "connectTimeout: 2s", "connectTimeout: 0.2s", o0 + ".timeout.connectTimeout", "between 1s and 15s, got 0.2s", 0},
		{"negative connectTimeout", "connectTimeout: 2s", "connectTimeout: -1s", o0 + ".timeout.connectTimeout", "between 1s and 15s", 0},
		{"maxAttemptsTimeout too long", "maxAttemptsTimeout: 10s", "maxAttemptsTimeout: 31s", o0 + ".timeout.maxAttemptsTimeout", "30s", 0},
		{"readTimeout too long", "readTimeout: 5s", "readTimeout: 31s", o0 + ".timeout.readTimeout", "between 1s and 30s", 0},
		{"responseTimeout too long", "responseTimeout: 20s", "responseTimeout: 121s", o0 + ".timeout.responseTimeout", "120s", 0},
		{"readTimeout over responseTimeout", "readTimeout: 5s", "readTimeout: 25s", o0 + ".timeout.readTimeout", "at most responseTimeout (20s)", 0},
		{"readTimeout over the default responseTimeout", "maxAttemptsTimeout: 10s, readTimeout: 5s, responseTimeout: 20s", "readTimeout: 30s", "", "", -1},

		// originRedirect.
		{"bad redirect condition", "redirectConditions: [FOUND]", "redirectConditions: [FOUND, MULTIPLE_CHOICES]", o0 + ".originRedirect.redirectConditions[1]", "MOVED_PERMANENTLY", 0},
		{"duplicate redirect condition", "redirectConditions: [FOUND]", "redirectConditions: [FOUND, FOUND]", o0 + ".originRedirect.redirectConditions[1]", "duplicate", 0},
		{"too many redirect conditions", "redirectConditions: [FOUND]", "redirectConditions: [MOVED_PERMANENTLY, FOUND, SEE_OTHER, TEMPORARY_REDIRECT, PERMANENT_REDIRECT, FOUND]", o0 + ".originRedirect.redirectConditions", "at most 5", 2},

		// originOverrideAction.
		{"hostRewrite with scheme", "hostRewrite: origin.example.com", "hostRewrite: https://origin.example.com", o0 + ".originOverrideAction.urlRewrite.hostRewrite", "scheme", 0},
		{"hostRewrite with path", "hostRewrite: origin.example.com", "hostRewrite: origin.example.com/x", o0 + ".originOverrideAction.urlRewrite.hostRewrite", "path", 0},
		{"hostRewrite too long", "hostRewrite: origin.example.com", "hostRewrite: " + strings.Repeat("a.", 128) + "com", o0 + ".originOverrideAction.urlRewrite.hostRewrite", "255", 0},
		{"hostRewrite bad port", "hostRewrite: origin.example.com", "hostRewrite: origin.example.com:0", o0 + ".originOverrideAction.urlRewrite.hostRewrite", "between 1 and 65535", 0},
		{"bad header name", "headerName: x-edge", `headerName: "x edge"`, o0 + ".originOverrideAction.headerAction.requestHeadersToAdd[0].headerName", "header name", 0},
		{"header value with CRLF", `headerValue: "1"`, `headerValue: "1\r\nx-evil: 1"`, o0 + ".originOverrideAction.headerAction.requestHeadersToAdd[0].headerValue", "CR, LF", 0},
		{"too many origin headers", `requestHeadersToAdd: [{headerName: x-edge, headerValue: "1", replace: true}]`, "requestHeadersToAdd: " + many(26, "{headerName: x-a, headerValue: b}"), o0 + ".originOverrideAction.headerAction.requestHeadersToAdd", "at most 25", 0},

		// awsV4Authentication, flexShielding.
		{"aws region missing", ", originRegion: eu-west-1}", "}", o3 + ".awsV4Authentication.originRegion", "required", 0},
		{"aws key missing", "accessKeyId: AKIDEXAMPLE, ", "", o3 + ".awsV4Authentication.accessKeyId", "required", 0},
		{"two shielding regions", "[AFRICA_SOUTH1]", "[AFRICA_SOUTH1, ME_CENTRAL1]", o3 + ".flexShielding.flexShieldingRegions", "exactly one", 0},
		{"no shielding region", "[AFRICA_SOUTH1]", "[]", o3 + ".flexShielding.flexShieldingRegions", "exactly one", 0},
		{"lower-case shielding region", "[AFRICA_SOUTH1]", "[africa-south1]", o3 + ".flexShielding.flexShieldingRegions[0]", "AFRICA_SOUTH1", 0},

		// Service, host rules, path matchers.
		{"service name missing", "  name: media\n", "  name: \"\"\n", "service.name", "required", 0},
		{"bad service name", "  name: media\n", "  name: media service\n", "service.name", "must match", 0},
		{"sample rate above 1", "sampleRate: 0.5", "sampleRate: 1.5", "service.logConfig.sampleRate", "between 0 and 1", 0},
		{"no host rules", "    hostRules:\n      - hosts: [\"media.example.com\", \"*.cdn.example.com\"]\n        pathMatcher: routes\n      - hosts: [\"*\"]\n        pathMatcher: fallback\n", "    hostRules: []\n", r + ".hostRules", "at least 1", 3},
		{"no hosts", `hosts: ["*"]`, "hosts: []", r + ".hostRules[1].hosts", "at least 1", 0},
		{"host with port", `"media.example.com"`, `"media.example.com:443"`, r + ".hostRules[0].hosts[0]", "port", 0},
		{"wildcard in the middle", `"*.cdn.example.com"`, `"cdn.*.example.com"`, r + ".hostRules[0].hosts[1]", "first or last label", 0},
		{"partial wildcard", `"*.cdn.example.com"`, `"*cdn.example.com"`, r + ".hostRules[0].hosts[1]", "whole label", 0},
		{"two wildcards", `"*.cdn.example.com"`, `"*.cdn.*"`, r + ".hostRules[0].hosts[1]", "only one wildcard", 0},
		{"host in two rules", `hosts: ["*"]`, `hosts: ["*", "MEDIA.example.com"]`, r + ".hostRules[1].hosts[1]", "hostRules[0].hosts[0]", 0},
		{"host twice in a rule", `hosts: ["*"]`, `hosts: ["*", "*"]`, r + ".hostRules[1].hosts[1]", "only one host rule", 0},
		{"unknown path matcher", "pathMatcher: fallback", "pathMatcher: nope", r + ".hostRules[1].pathMatcher", `no path matcher named "nope"`, 2}, // and fallback unused
		{"unused path matcher", "reference:\n", "      - name: spare\n        routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: backup}]\nreference:\n", r + ".pathMatchers[2].name", "not used", 0},
		{"duplicate path matcher", "reference:\n", "      - name: fallback\n        routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: backup}]\nreference:\n", r + ".pathMatchers[2].name", "duplicate", 0},
		{"empty route rules", "          - priority: 10\n            matchRules: [{prefixMatch: /}]\n            origin: backup\n", "          []\n", r + ".pathMatchers[1].routeRules", "between 1 and 200", 0},

		// Route rules.
		{"priority 0", "priority: 1\n", "priority: 0\n", rr0 + ".priority", "between 1 and 999", 0},
		{"priority 1000", "priority: 1\n", "priority: 1000\n", rr0 + ".priority", "between 1 and 999", 0},
		{"duplicate priority", `priority: "2"`, "priority: 1", rr1 + ".priority", rr0, 0},
		{"no match rules", "matchRules: [{fullPathMatch: /old}]", "matchRules: []", rr2 + ".matchRules", "between 1 and 5", 0},
		{"six match rules", "matchRules: [{fullPathMatch: /old}]", "matchRules: " + many(6, "{fullPathMatch: /old}"), rr2 + ".matchRules", "between 1 and 5", 0},
		{"two path matches", "{prefixMatch: /live/}", "{prefixMatch: /live/, fullPathMatch: /live}", rr0 + ".matchRules[0]", "exactly one", 0},
		{"no path match", "{prefixMatch: /live/}", "{ignoreCase: true}", rr0 + ".matchRules[0]", "got none", 0},
		{"prefix without slash", "{prefixMatch: /live/}", "{prefixMatch: live/}", rr0 + ".matchRules[0].prefixMatch", "start with '/'", 0},
		{"prefix too long", "{prefixMatch: /live/}", "{prefixMatch: /" + strings.Repeat("a", 1024) + "}", rr0 + ".matchRules[0].prefixMatch", "1024", 0},
		{"prefix with query", "{prefixMatch: /live/}", `{prefixMatch: "/live/?a=b"}`, rr0 + ".matchRules[0].prefixMatch", "query", 0},
		{"fullPathMatch without slash", "{fullPathMatch: /old}", "{fullPathMatch: old}", rr2 + ".matchRules[0].fullPathMatch", "start with '/'", 0},
		{"** not last", "/vod/{format}/{id=**}", "/vod/**/{id}", rr1 + ".matchRules[0].pathTemplateMatch", "last operator", 0},
		{"{x=**} not last", "/vod/{format}/{id=**}", "/vod/{format=**}/{id}", rr1 + ".matchRules[0].pathTemplateMatch", "last operator", 0},
		{"variable twice", "/vod/{format}/{id=**}", "/vod/{id}/{id=**}", rr1 + ".matchRules[0].pathTemplateMatch", "twice", 0},
		{"bad variable name", "/vod/{format}/{id=**}", "/vod/{1format}/{id=**}", rr1 + ".matchRules[0].pathTemplateMatch", "variable name", 0},
		{"bad variable pattern", "/vod/{format}/{id=**}", "/vod/{format=a*}/{id=**}", rr1 + ".matchRules[0].pathTemplateMatch", "bad literal", 0},
		{"six variables", "/vod/{format}/{id=**}", "/{a}/{b}/{c}/{d}/{format}/{id=**}", rr1 + ".matchRules[0].pathTemplateMatch", "at most 5", 0},
		{"literal with operator", "/vod/{format}/{id=**}", "/vod/a*/{format}/{id=**}", rr1 + ".matchRules[0].pathTemplateMatch", "bad literal", 0},
		{"empty template segment", "/vod/{format}/{id=**}", "/vod//{format}/{id=**}", rr1 + ".matchRules[0].pathTemplateMatch", "empty segment", 0},
		{"four header matches", "headerMatches: [{headerName: x-client, presentMatch: true}]", "headerMatches: " + many(4, "{headerName: x-a, presentMatch: true}"), rr1 + ".matchRules[0].headerMatches", "at most 3", 0},
		{"header match with two criteria", "{headerName: x-client, presentMatch: true}", "{headerName: x-client, presentMatch: true, exactMatch: a}", rr1 + ".matchRules[0].headerMatches[0]", "exactly one", 0},
		{"header match with no criterion", "{headerName: x-client, presentMatch: true}", "{headerName: x-client}", rr1 + ".matchRules[0].headerMatches[0]", "got none", 0},
		{"header match bad name", "{headerName: x-client, presentMatch: true}", "{headerName: \"x:client\", presentMatch: true}", rr1 + ".matchRules[0].headerMatches[0].headerName", "header name", 0},
		{"six query matches", `queryParameterMatches: [{name: live, exactMatch: "no"}]`, "queryParameterMatches: " + many(6, "{name: a, presentMatch: false}"), rr1 + ".matchRules[0].queryParameterMatches", "at most 5", 0},
		{"query match with two criteria", `{name: live, exactMatch: "no"}`, `{name: live, exactMatch: "no", presentMatch: true}`, rr1 + ".matchRules[0].queryParameterMatches[0]", "exactly one", 0},
		{"query match without name", `{name: live, exactMatch: "no"}`, `{exactMatch: "no"}`, rr1 + ".matchRules[0].queryParameterMatches[0].name", "required", 0},
		{"origin and redirect", "urlRedirect: {pathRedirect: /new, redirectResponseCode: FOUND}", "urlRedirect: {pathRedirect: /new, redirectResponseCode: FOUND}\n            origin: primary", rr2, "got both", 0},
		{"neither origin nor redirect", "            origin: backup\n", "", fb, "got neither", 0},
		{"unknown route origin", "            origin: backup\n", "            origin: nope\n", fb + ".origin", `no origin named "nope"`, 0},
		{"path and prefix redirect", "{pathRedirect: /new,", "{pathRedirect: /new, prefixRedirect: /n,", rr2 + ".urlRedirect", "at most one", 0},
		{"redirect path without slash", "{pathRedirect: /new,", "{pathRedirect: new,", rr2 + ".urlRedirect.pathRedirect", "start with '/'", 0},
		{"bad redirect code", "redirectResponseCode: FOUND", "redirectResponseCode: MOVED_PERMANENTLY", rr2 + ".urlRedirect.redirectResponseCode", "MOVED_PERMANENTLY_DEFAULT", 0},
		{"bad redirect host", "{pathRedirect: /new,", "{hostRedirect: \"https://x\", pathRedirect: /new,", rr2 + ".urlRedirect.hostRedirect", "scheme", 0},

		// routeAction.urlRewrite.
		{"prefix and template rewrite", "{pathPrefixRewrite: /}", "{pathPrefixRewrite: /, pathTemplateRewrite: /x}", rr3 + ".routeAction.urlRewrite", "at most one", 2}, // and the template needs template matches
		{"prefix rewrite without slash", "{pathPrefixRewrite: /}", "{pathPrefixRewrite: x}", rr3 + ".routeAction.urlRewrite.pathPrefixRewrite", "start with '/'", 0},
		{"template rewrite on a prefix route", "{pathPrefixRewrite: /}", "{pathTemplateRewrite: /x}", rr3 + ".routeAction.urlRewrite.pathTemplateRewrite", "pathTemplateMatch", 0},
		{"template rewrite with an uncaptured variable", "/content/{format}/{id}", "/content/{fmt}/{id}", rr1 + ".routeAction.urlRewrite.pathTemplateRewrite", "{fmt}", 0},
		{"template rewrite with a bad reference", "/content/{format}/{id}", "/content/{format=*}/{id}", rr1 + ".routeAction.urlRewrite.pathTemplateRewrite", "variable reference", 0},
		{"template rewrite with an operator", "/content/{format}/{id}", "/content/*/{id}", rr1 + ".routeAction.urlRewrite.pathTemplateRewrite", "unexpected", 0},
		{"template rewrite, one prefix match rule", "              - pathTemplateMatch: /vod/{format}/{id=**}\n", "              - prefixMatch: /v/\n              - pathTemplateMatch: /vod/{format}/{id=**}\n", rr1 + ".routeAction.urlRewrite.pathTemplateRewrite", "matchRules[0] does not", 0},
		{"template rewrite, variable missing from one rule", "              - pathTemplateMatch: /vod/{format}/{id=**}\n", "              - pathTemplateMatch: /v/{id=**}\n              - pathTemplateMatch: /vod/{format}/{id=**}\n", rr1 + ".routeAction.urlRewrite.pathTemplateRewrite", "matchRules[0].pathTemplateMatch does not capture", 0},
		{"route hostRewrite bad port", "hostRewrite: vod.example.com", "hostRewrite: \"vod.example.com:99999\"", rr1 + ".routeAction.urlRewrite.hostRewrite", "65535", 0},

		// routeMethods and headerAction.
		{"empty allowed methods", "{allowedMethods: [GET, HEAD, OPTIONS]}", "{allowedMethods: []}", rr1 + ".routeMethods.allowedMethods", "at least one", 0},
		{"bad method", "[GET, HEAD, OPTIONS]", "[GET, TRACE]", rr1 + ".routeMethods.allowedMethods[1]", "must be one of GET", 0},
		{"duplicate method", "[GET, HEAD, OPTIONS]", "[GET, HEAD, GET]", rr1 + ".routeMethods.allowedMethods[2]", "duplicate", 0},
		{"too many response headers", "responseHeadersToAdd: [{headerName: x-cache-route, headerValue: vod}]", "responseHeadersToAdd: " + many(26, "{headerName: x-a, headerValue: b}"), rr1 + ".headerAction.responseHeadersToAdd", "at most 25", 0},
		{"bad header to remove", "[{headerName: cookie}]", "[{headerName: \"co okie\"}]", rr1 + ".headerAction.requestHeadersToRemove[0].headerName", "header name", 0},

		// cdnPolicy.
		{"bad cache mode", "cacheMode: FORCE_CACHE_ALL", "cacheMode: CACHE_EVERYTHING", cdn + ".cacheMode", "CACHE_ALL_STATIC", 0},
		{"defaultTtl over a year", "defaultTtl: 3600s", "defaultTtl: 31536001s", cdn + ".defaultTtl", "31536000s", 0},
		{"negative clientTtl", "clientTtl: 60s", "clientTtl: -60s", cdn + ".clientTtl", "between 0s and 31536000s", 0},
		{"defaultTtl over maxTtl", "maxTtl: 86400s", "maxTtl: 60s", cdn + ".defaultTtl", "at most maxTtl (60s)", 0},
		{"negative caching of 200", "{404: 120s}", "{200: 120s}", cdn + `.negativeCachingPolicy["200"]`, "between 300 and 599", 0},
		{"negative caching of a padded code", "{404: 120s}", `{"0404": 120s}`, cdn + `.negativeCachingPolicy["0404"]`, "status code", 0},
		{"negative caching of a name", "{404: 120s}", "{notfound: 120s}", cdn + `.negativeCachingPolicy["notfound"]`, "status code", 0},
		{"included and excluded query parameters", "{includedQueryParameters: [v],", "{includedQueryParameters: [v], excludedQueryParameters: [w],", cdn + ".cacheKeyPolicy", "not set both", 0},

		// reference (EXT).
		{"allow list of an unknown origin", "    primary: [cdn.example.com]", "    nope: [cdn.example.com]", `reference.redirectAllowList["nope"]`, `no origin named "nope"`, 0},
		{"bad allow-list host", "    primary: [cdn.example.com]", "    primary: [\"https://cdn.example.com\"]", `reference.redirectAllowList["primary"][0]`, "scheme", 0},
	}
}

func TestBadConfigs(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range badConfigs() {
		t.Run(tc.name, func(t *testing.T) {
			if seen[tc.name] {
				t.Fatalf("duplicate case name")
			}
			seen[tc.name] = true
			doc := mutate(t, fullYAML, tc.old, tc.new)
			if tc.n < 0 { // a boundary change that must still load
				mustLoad(t, doc, Options{})
				return
			}
			es := loadErrs(t, doc, Options{})
			if _, ok := findErr(es, tc.field, tc.word); !ok {
				t.Errorf("no error for %s mentioning %q; got:\n%s", tc.field, tc.word, strings.ReplaceAll(es.Error(), "; ", "\n"))
			}
			want := max(tc.n, 1)
			if len(es) != want {
				t.Errorf("got %d errors, want %d:\n%s", len(es), want, strings.ReplaceAll(es.Error(), "; ", "\n"))
			}
		})
	}
}

func TestLabMode(t *testing.T) {
	lab := Options{Lab: true}
	fast := mutate(t, exampleYAML, "{connectTimeout: 2s, maxAttemptsTimeout: 10s}",
		"{connectTimeout: 0.2s, maxAttemptsTimeout: 0.5s, readTimeout: 0.1s, responseTimeout: 0.3s}")
	c := mustLoad(t, fast, lab)
	if e := c.Effective(c.Origins[0]); e.ConnectTimeout != 200*time.Millisecond || e.ResponseTimeout != 300*time.Millisecond {
		t.Errorf("lab timeouts %+v", e)
	}

	// Strict mode rejects the same file, naming each bound.
	es := loadErrs(t, fast, Options{})
	for _, f := range []string{"connectTimeout", "maxAttemptsTimeout", "readTimeout", "responseTimeout"} {
		if _, ok := findErr(es, "origins[0].timeout."+f, "must be between 1s and"); !ok {
			t.Errorf("strict: no bound error for %s in %v", f, es)
		}
	}
	if e, ok := findErr(es, "origins[0].timeout.connectTimeout", "between 1s and 15s, got 0.2s"); !ok {
		t.Errorf("strict: %v", es)
	} else if e.Error() != "origins[0].timeout.connectTimeout: must be between 1s and 15s, got 0.2s" {
		t.Errorf("strict message %q", e.Error())
	}

	for _, tc := range []struct{ name, timeouts, field, word string }{
		{"upper bound", "{connectTimeout: 20s}", "connectTimeout", "at most 15s"},
		{"zero", "{connectTimeout: 0s}", "connectTimeout", "greater than 0s"},
		{"negative", "{maxAttemptsTimeout: -0.1s}", "maxAttemptsTimeout", "greater than 0s"},
		{"read over response", "{readTimeout: 0.5s, responseTimeout: 0.3s}", "readTimeout", "at most responseTimeout (0.3s)"},
		{"response upper bound", "{responseTimeout: 121s}", "responseTimeout", "at most 120s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := mutate(t, exampleYAML, "{connectTimeout: 2s, maxAttemptsTimeout: 10s}", tc.timeouts)
			es := loadErrs(t, doc, lab)
			if _, ok := findErr(es, "origins[0].timeout."+tc.field, tc.word); !ok || len(es) != 1 {
				t.Errorf("lab: want one error for %s mentioning %q, got %v", tc.field, tc.word, es)
			}
		})
	}
}

func TestAllProblemsReported(t *testing.T) {
	doc := mutate(t, exampleYAML, "maxAttempts: 2", "maxAttempts: 9")
	doc = mutate(t, doc, "connectTimeout: 2s", "connectTimeout: 16s")
	doc = mutate(t, doc, "origin: primary", "origin: primray")
	es := loadErrs(t, doc, Options{})
	want := []struct{ field, word string }{
		{"origins[0].maxAttempts", "between 1 and 4, got 9"},
		{"origins[0].timeout.connectTimeout", "between 1s and 15s, got 16s"},
		{"service.routing.pathMatchers[0].routeRules[0].origin", `no origin named "primray" (have backup, primary)`},
	}
	if len(es) != len(want) {
		t.Errorf("got %d errors, want %d: %v", len(es), len(want), es)
	}
	for _, w := range want {
		if _, ok := findErr(es, w.field, w.word); !ok {
			t.Errorf("missing %s: ...%s... in %v", w.field, w.word, es)
		}
	}
}

func TestUnknownFieldPath(t *testing.T) {
	doc := mutate(t, exampleYAML, "connectTimeout: 2s", "conectTimeout: 2s")
	es := loadErrs(t, doc, Options{})
	want := `origins[0].timeout.conectTimeout: unknown field "conectTimeout" (did you mean "connectTimeout"?)`
	if len(es) != 1 || es[0].Error() != want {
		t.Errorf("got %v, want %s", es, want)
	}

	// Several unknown fields, in different places, are all reported.
	doc = mutate(t, doc, "    pathMatchers:", "    pathMatcher:")
	doc = mutate(t, doc, "service:\n", "servce: {}\nextras: 1\nservice:\n")
	es = loadErrs(t, doc, Options{})
	for _, f := range []string{"origins[0].timeout.conectTimeout", "service.routing.pathMatcher", "servce", "extras"} {
		if _, ok := findErr(es, f, "unknown field"); !ok {
			t.Errorf("no unknown-field error for %s in %v", f, es)
		}
	}
	if _, ok := findErr(es, "servce", `did you mean "service"`); !ok {
		t.Errorf("misspelt field without a suggestion: %v", es)
	}
	if _, ok := findErr(es, "extras", "known: origins, reference, service"); !ok {
		t.Errorf("top-level unknown field does not list the known ones: %v", es)
	}
}

func TestFailoverCycles(t *testing.T) {
	origin := func(name, failover string) string {
		s := "  - name: " + name + "\n    originAddress: " + name + ".test\n"
		if failover != "" {
			s += "    failoverOrigin: " + failover + "\n"
		}
		return s
	}
	doc := func(origins ...string) string {
		return "origins:\n" + strings.Join(origins, "") + `service:
  name: s
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers: [{name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: a}]}]
`
	}
	for _, tc := range []struct {
		name string
		doc  string
		want []string // "field: problem" substrings, one per error
	}{
		{"chain", doc(origin("a", "b"), origin("b", "c"), origin("c", "")), nil},
		{"two", doc(origin("a", "b"), origin("b", "a")),
			[]string{"origins[0].failoverOrigin: failover cycle a -> b -> a"}},
		{"three, entered late", doc(origin("x", "b"), origin("a", "b"), origin("b", "c"), origin("c", "a")),
			[]string{"origins[1].failoverOrigin: failover cycle a -> b -> c -> a"}},
		{"two cycles", doc(origin("a", "b"), origin("b", "a"), origin("c", "d"), origin("d", "c")),
			[]string{"origins[0].failoverOrigin: failover cycle a -> b -> a", "origins[2].failoverOrigin: failover cycle c -> d -> c"}},
		{"self", doc(origin("a", "a")), []string{"origins[0].failoverOrigin: must name another origin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load([]byte(tc.doc), Options{})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if e := c.Effective(c.Origins[0]); e.Failover != "b" {
					t.Errorf("failover %q", e.Failover)
				}
				return
			}
			es, _ := fielderr.As(err)
			if len(es) != len(tc.want) {
				t.Fatalf("got %v, want %d errors", err, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(es[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, es[i].Error(), w)
				}
			}
		})
	}
}

func TestDuplicatePriorityNamesBothRules(t *testing.T) {
	doc := mutate(t, fullYAML, `priority: "2"`, "priority: 4")
	es := loadErrs(t, doc, Options{})
	first := "service.routing.pathMatchers[0].routeRules[1].priority"
	second := "service.routing.pathMatchers[0].routeRules[3]"
	if len(es) != 1 || es[0].Field != first && es[0].Field != second+".priority" {
		t.Fatalf("got %v", es)
	}
	// One rule is the error's field, the other is in its message.
	msg := es[0].Error()
	if !strings.Contains(msg, "routeRules[1]") || !strings.Contains(msg, "routeRules[3]") || !strings.Contains(msg, "unique") {
		t.Errorf("error %q does not name both rules", msg)
	}
	// Priorities are per path matcher: the same priority in another
	// matcher is fine.
	mustLoad(t, mutate(t, fullYAML, "priority: 10", "priority: 1"), Options{})
}

func TestEmptyDocument(t *testing.T) {
	for _, doc := range []string{"", "{}", "null", "# nothing\n"} {
		es := loadErrs(t, doc, Options{})
		for _, f := range []string{"service.name", "service.routing.hostRules", "service.routing.pathMatchers"} {
			if _, ok := findErr(es, f, ""); !ok {
				t.Errorf("%q: no error for %s in %v", doc, f, es)
			}
		}
	}
	for _, doc := range []string{"[]", "7", "hello"} {
		es := loadErrs(t, doc, Options{})
		if _, ok := findErr(es, "config", "must be an object"); !ok || len(es) != 1 {
			t.Errorf("%q: got %v", doc, es)
		}
	}
}

func TestYAMLDocuments(t *testing.T) {
	for _, doc := range []string{
		"---\n" + exampleYAML,
		"%YAML 1.1\n---\n" + exampleYAML + "...\n",
		exampleYAML + "---\n# nothing more\n",
		"# header\n--- " + exampleJSON,
	} {
		if _, err := Load([]byte(doc), Options{}); err != nil {
			t.Errorf("Load(%q): %v", doc, err)
		}
	}
	for _, doc := range []string{
		exampleYAML + "---\nservice: {name: other}\n",
		exampleYAML + "...\n--- {}\n",
	} {
		es := loadErrs(t, doc, Options{})
		if _, ok := findErr(es, "config", "more than one YAML document"); !ok || len(es) != 1 {
			t.Errorf("Load(%q) = %v", doc, es)
		}
	}
	es := loadErrs(t, mutate(t, exampleYAML, "port: 8081", "port: .inf"), Options{})
	if _, ok := findErr(es, "config", "infinite"); !ok {
		t.Errorf(".inf: %v", es)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(exampleYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(mutate(t, exampleYAML, "port: 8081", "port: 0x10000")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(good, Options{}); err != nil {
		t.Errorf("LoadFile(good): %v", err)
	}
	_, err := LoadFile(bad, Options{})
	es, ok := fielderr.As(err)
	if !ok || len(es) != 1 || es[0].Field != "origins[1].port" || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadFile(bad) = %v", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml"), Options{}); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("LoadFile(missing) = %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestValidateBuiltConfig(t *testing.T) {
	var nilConfig *Config
	if err := nilConfig.Validate(Options{}); err == nil {
		t.Error("nil config validated")
	}
	sr := 0.1
	c := &Config{
		Origins: []Origin{{Name: "o", OriginAddress: "o.example.com", Timeout: &OriginTimeout{ReadTimeout: ptr(Duration(40 * time.Second))}}},
		Service: Service{Name: "s", LogConfig: &LogConfig{SampleRate: &sr}, Routing: Routing{
			HostRules:    []HostRule{{Hosts: []string{"*"}, PathMatcher: "m"}},
			PathMatchers: []PathMatcher{{Name: "m", RouteRules: []RouteRule{{Priority: 1, MatchRules: []MatchRule{{PrefixMatch: "/"}}, Origin: "o"}}}},
		}},
	}
	err := c.Validate(Options{})
	es, _ := fielderr.As(err)
	if len(es) != 1 || es[0].Field != "origins[0].timeout.readTimeout" {
		t.Errorf("Validate = %v", err)
	}
	c.Origins[0].Timeout = nil
	if err := c.Validate(Options{}); err != nil {
		t.Errorf("Validate = %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestOriginAddressSyntax(t *testing.T) {
	for _, s := range []string{
		"origin.example.com", "origin.example.com.", "a-b.c-d.example", "10.0.0.1", "::1", "2001:db8::1",
		"::ffff:10.0.0.1", "gs://my-bucket", "gs://my.bucket.example.com", "gs://a_b", "xn--bcher-kva.example",
	} {
		if p := checkOriginAddress(s); p != "" {
			t.Errorf("%q: %s", s, p)
		}
	}
	for _, s := range []string{
		"", "localhost", "http://o.example.com", "o.example.com/", "o.example.com:443", "[::1]", "[::1]:443",
		"fe80::1%eth0", "-o.example.com", "o..example.com", "o.example.123", "1.2.3.4.5", "o example.com",
		"gs://", "gs://ab", "gs://Bucket", "gs://-bucket", "gs://bucket/", "gs://google-stuff", "gs://goog-x",
		"gs://192.168.1.1", "gs://" + strings.Repeat("a", 64), "gs://a..b",
	} {
		if p := checkOriginAddress(s); p == "" {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestHostSyntax(t *testing.T) {
	for _, s := range []string{"*", "example.com", "*.example.com", "foo.*", "localhost", "EXAMPLE.com"} {
		if p := checkHostPattern(s); p != "" {
			t.Errorf("host rule %q: %s", s, p)
		}
	}
	for _, s := range []string{"", "*.*", "a.*.b", "*a.b", "a.b*", "a.b:80", "a..b", "-a.b", "a b"} {
		if checkHostPattern(s) == "" {
			t.Errorf("host rule %q accepted", s)
		}
	}
	for _, s := range []string{"example.com", "example.com:8443", "localhost", "10.0.0.1:80", "[::1]", "[2001:db8::1]:443"} {
		if p := checkHostPort(s); p != "" {
			t.Errorf("host %q: %s", s, p)
		}
	}
	for _, s := range []string{"", "::1", "[::1", "[::1]x", "[10.0.0.1]", "a:b", "a:0", "a:65536", "a:+1", "http://a", "a/b", "a b", strings.Repeat("a", 256)} {
		if checkHostPort(s) == "" {
			t.Errorf("host %q accepted", s)
		}
	}
}

func TestPathTemplateSyntax(t *testing.T) {
	for _, tc := range []struct {
		tmpl string
		vars []string
	}{
		{"/", nil},
		{"/a/b", nil},
		{"/*/b/**", nil},
		{"/{a}/{b=*}/{c=**}", []string{"a", "b", "c"}},
		{"/v/{x1_y}", []string{"x1_y"}},
		{"/{a}/{b}/{c}/{d}/{e}", []string{"a", "b", "c", "d", "e"}},
		// The router's grammar (Envoy's uri_template) also has these.
		{"/a/", nil},
		{"/**/a", nil},
		{"/**.m3u8", nil},
		{"/{a=**}/b", []string{"a"}},
		{"/{A}", []string{"A"}},
		{"/{a=b}", []string{"a"}},
		{"/{a}x", []string{"a"}},
	} {
		vars, p := parsePathTemplate(tc.tmpl)
		if p != "" || !slices.Equal(vars, tc.vars) {
			t.Errorf("%q: vars %v problem %q, want %v", tc.tmpl, vars, p, tc.vars)
		}
	}
	for _, s := range []string{
		"", "a", "//", "/**/*", "/{a=**}/*", "/{a}/{a}", "/{1a}", "/{a", "/a}", "/a*",
		"/{a}/{b}/{c}/{d}/{e}/{f}", "/a?b", "/a#b", "/a b",
	} {
		if _, p := parsePathTemplate(s); p == "" {
			t.Errorf("template %q accepted", s)
		}
	}
	for _, tc := range []struct {
		s    string
		refs []string
		ok   bool
	}{
		{"/x", nil, true}, {"/x/{a}/{b}.m3u8", []string{"a", "b"}, true}, {"/{a}{b}", []string{"a", "b"}, true},
		{"/{a", nil, false}, {"/a}", nil, false}, {"/*", nil, false}, {"/{A}", []string{"A"}, true}, {"x", nil, false},
	} {
		refs, p := parseTemplateRewrite(tc.s)
		if (p == "") != tc.ok || tc.ok && !slices.Equal(refs, tc.refs) {
			t.Errorf("rewrite %q: refs %v problem %q", tc.s, refs, p)
		}
	}
}
