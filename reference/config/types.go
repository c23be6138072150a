// Package config is the reference edge cache's configuration: Media CDN's own
// resource model (EdgeCacheOrigin and EdgeCacheService, networkservices v1,
// same field names, checked against Google's schemas: apifields.go), read
// from one combined YAML or JSON file:
//
//	origins: [ EdgeCacheOrigin, ... ]
//	service: EdgeCacheService
//	reference: { ... }   # EXT: settings only the reference has
//
// or from the files gcloud exports, one resource each (LoadFiles).
//
// Load parses strictly (unknown fields are errors) and Validate enforces
// every bound of ../shared/spec/behaviour.md's resource tables, reporting
// every problem at once with its field path.
package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Config is the whole file.
type Config struct {
	Origins []Origin `json:"origins"`
	Service Service  `json:"service"`
	// Reference holds settings Media CDN does not have (EXT); a file
	// meant for Media CDN too leaves it out.
	Reference *Extensions `json:"reference,omitempty"`

	// secrets maps an origin's name to its resolved secret access key
	// (ResolveSecrets).
	secrets map[string]string
	// unimplemented lists the not-implemented fields set (Unimplemented).
	unimplemented []Unimplemented
}

// Origin is an EdgeCacheOrigin.
type Origin struct {
	Name                 string                `json:"name"`
	Description          string                `json:"description,omitempty"`
	Labels               map[string]string     `json:"labels,omitempty"`
	OriginAddress        string                `json:"originAddress"`
	Protocol             string                `json:"protocol,omitempty"` // HTTP2 (default), HTTPS, HTTP
	Port                 int                   `json:"port,omitempty"`     // 443 for HTTP2/HTTPS, 80 for HTTP
	MaxAttempts          int                   `json:"maxAttempts,omitempty"`
	FailoverOrigin       string                `json:"failoverOrigin,omitempty"`
	RetryConditions      []string              `json:"retryConditions,omitempty"`
	Timeout              *OriginTimeout        `json:"timeout,omitempty"`
	OriginRedirect       *OriginRedirect       `json:"originRedirect,omitempty"`
	OriginOverrideAction *OriginOverrideAction `json:"originOverrideAction,omitempty"`
	AWSV4Authentication  *AWSV4Authentication  `json:"awsV4Authentication,omitempty"`
	FlexShielding        *FlexShielding        `json:"flexShielding,omitempty"`
}

// OriginTimeout is EdgeCacheOrigin.timeout.
type OriginTimeout struct {
	ConnectTimeout     *Duration `json:"connectTimeout,omitempty"`
	MaxAttemptsTimeout *Duration `json:"maxAttemptsTimeout,omitempty"`
	ReadTimeout        *Duration `json:"readTimeout,omitempty"`
	ResponseTimeout    *Duration `json:"responseTimeout,omitempty"`
}

// OriginRedirect is EdgeCacheOrigin.originRedirect.
type OriginRedirect struct {
	RedirectConditions []string `json:"redirectConditions,omitempty"`
}

// OriginOverrideAction is EdgeCacheOrigin.originOverrideAction.
type OriginOverrideAction struct {
	URLRewrite   *OriginURLRewrite   `json:"urlRewrite,omitempty"`
	HeaderAction *OriginHeaderAction `json:"headerAction,omitempty"`
}

// OriginURLRewrite is originOverrideAction.urlRewrite.
type OriginURLRewrite struct {
	HostRewrite string `json:"hostRewrite,omitempty"`
}

// OriginHeaderAction is originOverrideAction.headerAction.
type OriginHeaderAction struct {
	RequestHeadersToAdd []HeaderToAdd `json:"requestHeadersToAdd,omitempty"`
}

// HeaderToAdd adds (or with Replace, replaces) a header.
type HeaderToAdd struct {
	HeaderName  string `json:"headerName"`
	HeaderValue string `json:"headerValue"`
	Replace     bool   `json:"replace,omitempty"`
}

// HeaderToRemove removes a header.
type HeaderToRemove struct {
	HeaderName string `json:"headerName"`
}

// AWSV4Authentication is EdgeCacheOrigin.awsV4Authentication (bucket issue).
type AWSV4Authentication struct {
	AccessKeyID            string `json:"accessKeyId"`
	SecretAccessKeyVersion string `json:"secretAccessKeyVersion"`
	OriginRegion           string `json:"originRegion"`
}

// FlexShielding is EdgeCacheOrigin.flexShielding (shielding issue).
type FlexShielding struct {
	FlexShieldingRegions []string `json:"flexShieldingRegions,omitempty"`
}

// Service is an EdgeCacheService: every field of the API but those the
// reference does not implement (NotImplementedFields).
type Service struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Routing     Routing           `json:"routing"`
	LogConfig   *LogConfig        `json:"logConfig,omitempty"`
	// DisableQuic is what the reference does anyway: it never speaks QUIC.
	DisableQuic bool `json:"disableQuic,omitempty"`
	// requireTls, edgeSslCertificates, disableHttp2 and edgeSecurityPolicy
	// are not implemented (unimplemented.go).
}

// LogConfig is EdgeCacheService.logConfig.
type LogConfig struct {
	Enable     bool     `json:"enable,omitempty"`
	SampleRate *float64 `json:"sampleRate,omitempty"`
}

// Routing is EdgeCacheService.routing.
type Routing struct {
	HostRules    []HostRule    `json:"hostRules"`
	PathMatchers []PathMatcher `json:"pathMatchers"`
}

// HostRule maps hosts to a path matcher.
type HostRule struct {
	Description string   `json:"description,omitempty"`
	Hosts       []string `json:"hosts"`
	PathMatcher string   `json:"pathMatcher"`
}

// PathMatcher is a named list of route rules.
type PathMatcher struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	RouteRules  []RouteRule `json:"routeRules"`
}

// RouteRule is one route: matched by its match rules, tried by priority.
type RouteRule struct {
	Priority     Int64         `json:"priority"`
	Description  string        `json:"description,omitempty"`
	MatchRules   []MatchRule   `json:"matchRules"`
	HeaderAction *HeaderAction `json:"headerAction,omitempty"`
	RouteAction  *RouteAction  `json:"routeAction,omitempty"`
	Origin       string        `json:"origin,omitempty"`
	URLRedirect  *URLRedirect  `json:"urlRedirect,omitempty"`
	RouteMethods *RouteMethods `json:"routeMethods,omitempty"`
}

// MatchRule is one way a request can match a route (match rules are OR-ed).
type MatchRule struct {
	IgnoreCase            bool                  `json:"ignoreCase,omitempty"`
	HeaderMatches         []HeaderMatch         `json:"headerMatches,omitempty"`
	QueryParameterMatches []QueryParameterMatch `json:"queryParameterMatches,omitempty"`
	PrefixMatch           string                `json:"prefixMatch,omitempty"`
	FullPathMatch         string                `json:"fullPathMatch,omitempty"`
	PathTemplateMatch     string                `json:"pathTemplateMatch,omitempty"`
}

// HeaderMatch matches a request header (exactly one criterion).
type HeaderMatch struct {
	HeaderName   string `json:"headerName"`
	PresentMatch *bool  `json:"presentMatch,omitempty"`
	ExactMatch   string `json:"exactMatch,omitempty"`
	PrefixMatch  string `json:"prefixMatch,omitempty"`
	SuffixMatch  string `json:"suffixMatch,omitempty"`
	InvertMatch  bool   `json:"invertMatch,omitempty"`
}

// QueryParameterMatch matches a query parameter (exactly one criterion).
type QueryParameterMatch struct {
	Name         string `json:"name"`
	PresentMatch *bool  `json:"presentMatch,omitempty"`
	ExactMatch   string `json:"exactMatch,omitempty"`
}

// HeaderAction adds and removes request and response headers.
type HeaderAction struct {
	RequestHeadersToAdd     []HeaderToAdd    `json:"requestHeadersToAdd,omitempty"`
	RequestHeadersToRemove  []HeaderToRemove `json:"requestHeadersToRemove,omitempty"`
	ResponseHeadersToAdd    []HeaderToAdd    `json:"responseHeadersToAdd,omitempty"`
	ResponseHeadersToRemove []HeaderToRemove `json:"responseHeadersToRemove,omitempty"`
}

// RouteAction is a route's rewrite and cache policy.
type RouteAction struct {
	URLRewrite *URLRewrite `json:"urlRewrite,omitempty"`
	CDNPolicy  *CDNPolicy  `json:"cdnPolicy,omitempty"`
	// corsPolicy, compressionMode and wasmAction are not implemented.
}

// URLRewrite rewrites the request before it goes to the origin (after
// matching; MTH-7).
type URLRewrite struct {
	PathPrefixRewrite   string `json:"pathPrefixRewrite,omitempty"`
	HostRewrite         string `json:"hostRewrite,omitempty"`
	PathTemplateRewrite string `json:"pathTemplateRewrite,omitempty"`
}

// CDNPolicy is routeAction.cdnPolicy (used by caching, part 2).
type CDNPolicy struct {
	CacheMode             string              `json:"cacheMode,omitempty"`
	ClientTTL             *Duration           `json:"clientTtl,omitempty"`
	DefaultTTL            *Duration           `json:"defaultTtl,omitempty"`
	MaxTTL                *Duration           `json:"maxTtl,omitempty"`
	CacheKeyPolicy        *CacheKeyPolicy     `json:"cacheKeyPolicy,omitempty"`
	NegativeCaching       bool                `json:"negativeCaching,omitempty"`
	NegativeCachingPolicy map[string]Duration `json:"negativeCachingPolicy,omitempty"`
	// Signed requests and tokens (signedRequestMode, signedRequestKeyset,
	// signedRequestMaximumExpirationTtl, signedTokenOptions,
	// addSignatures) are not implemented.
}

// CacheKeyPolicy is cdnPolicy.cacheKeyPolicy.
type CacheKeyPolicy struct {
	IncludeProtocol         bool     `json:"includeProtocol,omitempty"`
	ExcludeQueryString      bool     `json:"excludeQueryString,omitempty"`
	ExcludeHost             bool     `json:"excludeHost,omitempty"`
	IncludedQueryParameters []string `json:"includedQueryParameters,omitempty"`
	ExcludedQueryParameters []string `json:"excludedQueryParameters,omitempty"`
	IncludedHeaderNames     []string `json:"includedHeaderNames,omitempty"`
	IncludedCookieNames     []string `json:"includedCookieNames,omitempty"`
}

// URLRedirect answers at the edge with a redirect instead of an origin.
type URLRedirect struct {
	HostRedirect         string `json:"hostRedirect,omitempty"`
	PathRedirect         string `json:"pathRedirect,omitempty"`
	PrefixRedirect       string `json:"prefixRedirect,omitempty"`
	RedirectResponseCode string `json:"redirectResponseCode,omitempty"` // MOVED_PERMANENTLY_DEFAULT, FOUND, SEE_OTHER, TEMPORARY_REDIRECT, PERMANENT_REDIRECT
	HTTPSRedirect        bool   `json:"httpsRedirect,omitempty"`
	StripQuery           bool   `json:"stripQuery,omitempty"`
}

// RouteMethods lists the methods a route allows.
type RouteMethods struct {
	AllowedMethods []string `json:"allowedMethods,omitempty"`
}

// Extensions are the reference's own settings (EXT rules).
type Extensions struct {
	// RedirectAllowList maps an origin name to the hosts its redirects
	// may go to (RDR-6); an origin without an entry may redirect anywhere.
	RedirectAllowList map[string][]string `json:"redirectAllowList,omitempty"`
}

// Duration is a google.protobuf.Duration as Media CDN's YAML writes it
// ("5s", "0.5s"); Go duration strings ("250ms") are accepted too.
type Duration time.Duration

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes seconds with an "s" suffix, as the API does.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatFloat(time.Duration(d).Seconds(), 'f', -1, 64) + "s")
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"5s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q (want e.g. \"5s\" or \"0.5s\")", s)
	}
	*d = Duration(v)
	return nil
}

// Int64 is an int64 written as a number or, as the API's JSON does, a string.
type Int64 int64

// UnmarshalJSON reads 7 or "7".
func (n *Int64) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want an integer, got %s", b)
	}
	*n = Int64(v)
	return nil
}
