// Package topology is the one fixed set of origins and routes that every
// conformance spec runs on. Each scenario has its own route prefix
// (/c/<scenario>/) mapped to an origin chain with the settings it needs
// (retry conditions, maxAttempts, failover, redirects, protocol,
// hostRewrite, timeouts, cache mode); each origin is an emulator listener.
//
// Build turns the scenarios into Media CDN's resource model
// (reference/config types, the same field names as the API), so the
// in-process reference target and the generator (suites/cmd/
// conformance-topology) share one source: ReferenceYAML for the reference,
// MediaCDN for `gcloud edge-cache origins import` / `services import`.
//
// Every timeout is a multiple of the profile's Unit; specs derive their
// expectations from the same Unit.
package topology

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/reference/config"
)

// Profile is a timing profile: every timeout in the topology is a multiple
// of Unit.
type Profile struct {
	Name string        `json:"name"`
	Unit time.Duration `json:"unit"`
	// Lab means sub-second timeouts: only the reference in lab mode
	// (config.Options{Lab: true}) accepts them.
	Lab bool `json:"lab"`
}

// The timing profiles.
var (
	// Lab is for the reference in lab mode: unit 100 ms.
	Lab = Profile{Name: "lab", Unit: 100 * time.Millisecond, Lab: true}
	// Strict stays within Media CDN's bounds: unit 1 s.
	Strict = Profile{Name: "strict", Unit: time.Second}
)

// ProfileByName returns "lab" or "strict".
func ProfileByName(name string) (Profile, error) {
	switch strings.ToLower(name) {
	case "", "lab":
		return Lab, nil
	case "strict":
		return Strict, nil
	}
	return Profile{}, fmt.Errorf("unknown timing profile %q (want lab or strict)", name)
}

// U is n units of the profile.
func (p Profile) U(n float64) time.Duration { return time.Duration(n * float64(p.Unit)) }

// Emulator listener names. Specs read the journal by these names.
const (
	ListenerA         = "a"         // http: the usual primary
	ListenerB         = "b"         // http: the usual failover
	ListenerC         = "c"         // http: a third origin
	ListenerH2        = "h2"        // h2 over TLS only
	ListenerHTTPS     = "https"     // HTTP/1.1 over TLS only
	ListenerExpired   = "expired"   // TLS, expired certificate
	ListenerWrongName = "wrongname" // TLS, certificate for another name
	ListenerUntrusted = "untrusted" // TLS, certificate from an untrusted CA
	ListenerRefuse    = "refuse"    // connection refused
	ListenerBlackhole = "blackhole" // accepted, never answered
	ListenerSYNDrop   = "syndrop"   // the dial times out
	// Listener80 and Listener443 must be reachable on the default ports
	// (80, 443) at Params.DefaultPortHost (PRT-3); optional.
	Listener80  = "port80"  // http on port 80
	Listener443 = "port443" // h2 on port 443
)

// Bucket service listeners (optional): an S3-compatible service verifying
// SigV4 (emulators/s3emu) and a Cloud Storage-style service
// (emulators/gcsemu), each as an http listener's backend (BKT).
const (
	ListenerS3  = "s3"
	ListenerGCS = "gcs"
)

// BucketListeners are the optional bucket service listeners: scenarios
// that need them are available only when Params name their ports (and,
// for S3, Params.S3).
func BucketListeners() []Listener {
	return []Listener{{ListenerS3, originemu.HTTP, 0}, {ListenerGCS, originemu.HTTP, 0}}
}

// Listener is one emulator listener the topology needs.
type Listener struct {
	Name    string
	Profile originemu.Profile
	// DefaultPort is the port it must have (80 or 443), 0 for any.
	DefaultPort int
}

// Listeners returns the emulator listeners every target's emulators must
// run. The default-port ones are optional (Params.DefaultPortHost).
func Listeners() []Listener {
	return []Listener{
		{ListenerA, originemu.HTTP, 0},
		{ListenerB, originemu.HTTP, 0},
		{ListenerC, originemu.HTTP, 0},
		{ListenerH2, originemu.H2, 0},
		{ListenerHTTPS, originemu.HTTPS, 0},
		{ListenerExpired, originemu.TLSExpired, 0},
		{ListenerWrongName, originemu.TLSWrongName, 0},
		{ListenerUntrusted, originemu.TLSUntrusted, 0},
		{ListenerRefuse, originemu.Refuse, 0},
		{ListenerBlackhole, originemu.Blackhole, 0},
		{ListenerSYNDrop, originemu.SYNDrop, 0},
		{Listener80, originemu.HTTP, 80},
		{Listener443, originemu.H2, 443},
	}
}

// Params say where the origins are, as the system under test reaches
// them, and which names to use. They are written beside generated
// configurations (topology.json) so that the suites use the same ones.
type Params struct {
	Profile Profile `json:"profile"`
	// ClientHost is the Host clients send (the service's host rule).
	ClientHost string `json:"clientHost"`
	// OriginHost is the originAddress of every emulator origin: a name
	// (or IP) at which the system under test reaches the emulators.
	OriginHost string `json:"originHost"`
	// AltHost is another name for the same emulators: redirect Locations
	// point at it (RDR-4). It may equal OriginHost.
	AltHost string `json:"altHost"`
	// RouteRewriteHost and OriginRewriteHost are the route's and the
	// origin's hostRewrite values (HST-1..3). For TLS origins the
	// emulator's certificate must cover them.
	RouteRewriteHost  string `json:"routeRewriteHost"`
	OriginRewriteHost string `json:"originRewriteHost"`
	// Ports maps a listener name to its port as the system under test
	// reaches it.
	Ports map[string]int `json:"ports"`
	// DefaultPortHost is the originAddress of the PRT-3 origins (the
	// port80 and port443 listeners, no port in the configuration); ""
	// leaves them out.
	DefaultPortHost string `json:"defaultPortHost,omitempty"`
	// GCSBucket, if set, adds a gs:// origin (HST-4; reference only: the
	// reference reaches the bucket at an emulator listener).
	GCSBucket string `json:"gcsBucket,omitempty"`
	// S3, if set, is the S3-compatible bucket the bkt-s3* scenarios sign
	// their requests for (the s3 listener, BKT-1..3).
	S3 *S3Bucket `json:"s3,omitempty"`
	// GCSToken is the bearer token the reference sends to the gcs
	// listener for gs:// origins (a private bucket, BKT-4); the suites
	// use it to put objects there.
	GCSToken string `json:"gcsToken,omitempty"`
	// Project, if set, makes failoverOrigin and route origins full
	// resource names in Media CDN output.
	Project string `json:"project,omitempty"`
	// Reference says the configuration is for the reference: it includes
	// settings only the reference has (EXT: reference.redirectAllowList)
	// and, with GCSBucket, a gs:// origin reached at an emulator.
	Reference bool `json:"reference,omitempty"`
}

// S3Bucket is the private S3-compatible bucket (the s3 listener's s3emu)
// the awsV4Authentication origins read.
type S3Bucket struct {
	Bucket      string `json:"bucket"`
	Region      string `json:"region"`
	AccessKeyID string `json:"accessKeyId"`
	// SecretVersion is secretAccessKeyVersion
	// (projects/P/secrets/NAME/versions/V): the target resolves it.
	SecretVersion string `json:"secretVersion"`
	// Secret is the emulator's test secret access key: the suites sign
	// their own uploads to the bucket with it. Never a real credential.
	Secret string `json:"secret"`
}

// VirtualHost is the bucket's virtual-hosted S3 host (BKT-3).
func (b S3Bucket) VirtualHost() string { return b.Bucket + ".s3." + b.Region + ".amazonaws.com" }

// AliasHost is a second host of the main host rule: the same routes under
// another Host (CCH-6: the host is part of the cache key unless excluded).
func (p Params) AliasHost() string { return "alias." + p.ClientHost }

// Check reports missing parameters.
func (p Params) Check() error {
	var miss []string
	for _, f := range []struct{ name, val string }{
		{"clientHost", p.ClientHost}, {"originHost", p.OriginHost}, {"altHost", p.AltHost},
		{"routeRewriteHost", p.RouteRewriteHost}, {"originRewriteHost", p.OriginRewriteHost},
	} {
		if f.val == "" {
			miss = append(miss, f.name)
		}
	}
	for _, l := range Listeners() {
		if l.DefaultPort == 0 && p.Ports[l.Name] == 0 {
			miss = append(miss, "ports."+l.Name)
		}
	}
	if p.Profile.Unit <= 0 {
		miss = append(miss, "profile")
	}
	if len(miss) > 0 {
		return fmt.Errorf("topology parameters missing: %s", strings.Join(miss, ", "))
	}
	return nil
}

// Hosts of the MTH-5 host rules, under the client host.
func (p Params) MTHExactHost() string      { return "www.mth." + p.ClientHost }
func (p Params) MTHShortWildcard() string  { return "*.mth." + p.ClientHost }
func (p Params) MTHLongWildcard() string   { return "*.deep.mth." + p.ClientHost }
func (p Params) MTHPrefixWildcard() string { return "mthprefix.*" }

// MTHStarPrefix is the one route of the "*" host rule's path matcher.
const MTHStarPrefix = "/mth5/"

// Response header names the topology's routes add, so specs can tell
// which route or path matcher answered.
const (
	RouteHeader   = "X-Edgeconform-Route"
	MatcherHeader = "X-Edgeconform-Matcher"
)

// Timeouts of an origin in units; 0 leaves the field unset, Max is the
// largest value Media CDN allows (for scenarios that test no timeout and
// must never hit one, whatever the unit).
type Timeouts struct {
	Connect, MaxAttempts, Read, Response float64
}

// Max in a Timeouts field stands for the field's upper bound.
const Max = -1

// Origin is one origin of a scenario's chain.
type Origin struct {
	Listener    string
	Protocol    string // config.ProtocolHTTP2, ...; default HTTP for http listeners, HTTP2 for TLS ones
	MaxAttempts int
	Retry       []string
	Timeouts    *Timeouts // nil: DefaultTimeouts
	Redirects   []string
	// HostRewrite sets originOverrideAction.urlRewrite.hostRewrite to
	// Params.OriginRewriteHost (or to RewriteTo).
	HostRewrite bool
	// RewriteTo, with HostRewrite, names the hostRewrite symbolically:
	// "s3-host" is the S3 bucket's virtual host, "s3-other" another
	// bucket's in the same region.
	RewriteTo string
	// S3 signs the origin's requests (awsV4Authentication, Params.S3).
	S3 bool
	// Region is the origin's flexShielding region (SHD-2).
	Region  string
	Headers []config.HeaderToAdd
	// DefaultPort leaves the port out (PRT-3): the origin is reached at
	// Params.DefaultPortHost.
	DefaultPort bool
	// Bucket makes it a gs:// origin (Params.GCSBucket).
	Bucket bool
	// AllowList is the reference's redirect allow-list (RDR-6, EXT):
	// "alt" stands for Params.AltHost, "origin" for Params.OriginHost.
	AllowList []string
}

// DefaultTimeouts are an origin's timeouts when it gives none: generous
// enough never to fire in a spec that does not test them.
var DefaultTimeouts = Timeouts{Connect: 10, MaxAttempts: 20, Read: 10, Response: 30}

// Scenario is one route prefix and its origin chain: Origins[0] is the
// primary, each fails over to the next.
type Scenario struct {
	Name    string
	Origins []Origin
	// Methods is routeMethods.allowedMethods (nil: the default).
	Methods []string
	// Cache is the route's cacheMode; "" is BYPASS_CACHE, so that every
	// request reaches the origin unless a scenario tests caching.
	Cache string
	// Policy is the rest of the route's cdnPolicy (TTLs, negative
	// caching, cacheKeyPolicy); its cacheMode is Cache.
	Policy *config.CDNPolicy
	// Rewrite is routeAction.urlRewrite; "route-host" in HostRewrite
	// stands for Params.RouteRewriteHost.
	Rewrite *config.URLRewrite
	// Header is the route's headerAction (a RouteHeader response header
	// naming the scenario is always added).
	Header *config.HeaderAction
	// Match replaces the default prefixMatch /c/<name>/.
	Match []config.MatchRule
	// Priority, if set, is the route's priority (else its position).
	Priority int
	// Requires names what the scenario needs beyond the fixed listeners:
	// "default-ports", "gcs", "reference".
	Requires string
}

// Cache settings of the cch scenarios.
const (
	// CCHDefaultTTL and CCHMaxTTL are cch-static-ttl's defaultTtl and
	// maxTtl, in seconds.
	CCHDefaultTTL = 2
	CCHMaxTTL     = 3
	// KeyHeader and KeyCookie are cch-key's includedHeaderNames and
	// includedCookieNames.
	KeyHeader = "X-Edgeconform-Device"
	KeyCookie = "edgeconform-variant"
	// ShieldRegion is shd-region's flexShielding region.
	ShieldRegion = "AFRICA_SOUTH1"
)

func secs(n int) *config.Duration {
	d := config.Duration(time.Duration(n) * time.Second)
	return &d
}

// Prefix is the route prefix of a scenario.
func Prefix(name string) string { return "/c/" + name + "/" }

// Path matcher names.
const (
	MainMatcher        = "main"
	MTHExactMatcher    = "mth-exact"
	MTHShortMatcher    = "mth-short"
	MTHLongMatcher     = "mth-long"
	MTHPrefixMatcher   = "mth-prefix"
	MTHStarMatcher     = "mth-star" // hosts: ["*"], one route: /mth5/
	maxPriorityInRoute = 999
)

// Retry condition shorthands.
const (
	CF   = config.RetryConnectFailure
	H5xx = config.RetryHTTP5xx
	GW   = config.RetryGatewayError
	R4xx = config.RetryRetriable4xx
	NF   = config.RetryNotFound
	FB   = config.RetryForbidden
)

// Requirements a scenario may have.
const (
	NeedsDefaultPorts = "default-ports"
	NeedsGCS          = "gcs"
	NeedsReference    = "reference"
	NeedsS3           = "s3"
)

var allMethods = []string{"GET", "HEAD", "OPTIONS", "PUT", "POST", "DELETE", "PATCH"}

// Scenarios returns every scenario, in route order.
func Scenarios() []Scenario {
	a := func(o Origin) Origin { o.Listener = ListenerA; return o }
	b := Origin{Listener: ListenerB}
	to := func(c, mat, read, resp float64) *Timeouts { return &Timeouts{c, mat, read, resp} }
	route := func(name string) []config.HeaderToAdd {
		return []config.HeaderToAdd{{HeaderName: RouteHeader, HeaderValue: name}}
	}
	s := []Scenario{
		// MTH
		{Name: "plain", Origins: []Origin{{Listener: ListenerA}}},
		{Name: "methods-post", Origins: []Origin{{Listener: ListenerA}}, Methods: []string{"GET", "HEAD", "POST"}},
		// MTH-4: two routes on one prefix; the one with the larger
		// priority number comes first in the list.
		{Name: "prio", Origins: []Origin{{Listener: ListenerA}}, Priority: 901,
			Header: &config.HeaderAction{ResponseHeadersToAdd: route("prio-second")}},
		{Name: "prio-first", Origins: []Origin{{Listener: ListenerA}}, Priority: 900,
			Match:  []config.MatchRule{{PrefixMatch: Prefix("prio"), HeaderMatches: []config.HeaderMatch{{HeaderName: "X-Edgeconform-Prio", ExactMatch: "first"}}}},
			Header: &config.HeaderAction{ResponseHeadersToAdd: route("prio-first")}},
		{Name: "norm", Origins: []Origin{{Listener: ListenerA}}, Match: []config.MatchRule{{PrefixMatch: "/c/norm/deep/"}}},
		{Name: "icase", Origins: []Origin{{Listener: ListenerA}}, Match: []config.MatchRule{{PrefixMatch: Prefix("icase"), IgnoreCase: true}}},
		{Name: "rewrite", Origins: []Origin{{Listener: ListenerA}}, Cache: "CACHE_ALL_STATIC",
			Rewrite: &config.URLRewrite{PathPrefixRewrite: Prefix("rw-dest")}},
		{Name: "rw-dest", Origins: []Origin{{Listener: ListenerB}}, Cache: "CACHE_ALL_STATIC"},

		// ATT
		{Name: "unsafe", Origins: []Origin{a(Origin{MaxAttempts: 3, Retry: []string{CF, H5xx}}), b}, Methods: allMethods},
		{Name: "unsafe-refuse", Origins: []Origin{{Listener: ListenerRefuse, Protocol: config.ProtocolHTTP, MaxAttempts: 2}, b}, Methods: allMethods},
		{Name: "att3", Origins: []Origin{a(Origin{MaxAttempts: 2, Retry: []string{NF}}), {Listener: ListenerB, Retry: []string{H5xx}}, {Listener: ListenerC}}},
		{Name: "att-default", Origins: []Origin{a(Origin{Retry: []string{H5xx}})}},
		{Name: "att4", Origins: []Origin{a(Origin{MaxAttempts: 3, Retry: []string{H5xx}}), {Listener: ListenerB, MaxAttempts: 3, Retry: []string{H5xx}}}},
		{Name: "retry-5xx", Origins: []Origin{a(Origin{MaxAttempts: 2, Retry: []string{H5xx}})}},
		{Name: "retry-gateway", Origins: []Origin{a(Origin{MaxAttempts: 2, Retry: []string{GW}})}},
		{Name: "retry-4xx", Origins: []Origin{a(Origin{MaxAttempts: 2, Retry: []string{R4xx}})}},
		{Name: "retry-404", Origins: []Origin{a(Origin{MaxAttempts: 2, Retry: []string{NF}})}},
		{Name: "retry-403", Origins: []Origin{a(Origin{MaxAttempts: 2, Retry: []string{FB}})}},
		{Name: "cf-refuse", Origins: []Origin{{Listener: ListenerRefuse, Protocol: config.ProtocolHTTP}, b}},
		{Name: "cf-expired", Origins: []Origin{{Listener: ListenerExpired}, b}},
		{Name: "cf-wrongname", Origins: []Origin{{Listener: ListenerWrongName}, b}},
		{Name: "cf-untrusted", Origins: []Origin{{Listener: ListenerUntrusted}, b}},
		{Name: "cf-blackhole", Origins: []Origin{{Listener: ListenerBlackhole, Protocol: config.ProtocolHTTP, Timeouts: to(2, 20, 10, 30)}, b}},
		{Name: "cf-syndrop", Origins: []Origin{{Listener: ListenerSYNDrop, Protocol: config.ProtocolHTTP, Timeouts: to(2, 20, 10, 30)}, b}},
		{Name: "cf-reset", Origins: []Origin{{Listener: ListenerA}, b}},
		{Name: "cf-unlisted", Origins: []Origin{{Listener: ListenerRefuse, Protocol: config.ProtocolHTTP, Retry: []string{H5xx}}, b}},
		{Name: "att8", Origins: []Origin{{Listener: ListenerRefuse, Protocol: config.ProtocolHTTP, MaxAttempts: 2}, {Listener: ListenerExpired}}},
		{Name: "att9", Origins: []Origin{{Listener: ListenerBlackhole, Protocol: config.ProtocolHTTP, MaxAttempts: 3, Timeouts: to(3, 5, 10, 30)}}},

		// TMO
		{Name: "tmo1", Origins: []Origin{a(Origin{MaxAttempts: 2, Timeouts: to(2, 20, 10, 30)})}},
		{Name: "tmo2", Origins: []Origin{
			{Listener: ListenerBlackhole, Protocol: config.ProtocolHTTP, Timeouts: to(2, 5, 10, 30)},
			{Listener: ListenerBlackhole, Protocol: config.ProtocolHTTP, MaxAttempts: 2, Timeouts: to(2, 30, 10, 30)}}},
		{Name: "tmo3", Origins: []Origin{a(Origin{Timeouts: to(2, 3, 4, 20)})}},
		{Name: "tmo4", Origins: []Origin{{Listener: ListenerBlackhole, Protocol: config.ProtocolHTTP, Timeouts: to(1, 20, 10, 30)},
			{Listener: ListenerB, Timeouts: to(4, 20, 10, 30)}}},
		{Name: "tmo5", Origins: []Origin{a(Origin{Timeouts: to(10, 20, 2, 6)})}, Cache: "CACHE_ALL_STATIC"},
		{Name: "tmo5-cap", Origins: []Origin{a(Origin{Timeouts: &Timeouts{Connect: 10, MaxAttempts: 20, Response: 3}})}},
		{Name: "tmo7", Origins: []Origin{{Listener: ListenerBlackhole, Protocol: config.ProtocolHTTP, MaxAttempts: 2, Timeouts: to(6, 7, 10, 30)}}},
		{Name: "tmo8", Origins: []Origin{{Listener: ListenerExpired, Timeouts: to(10, 5, 10, 30)}, {Listener: ListenerB, Timeouts: to(10, 20, 10, 30)}}},
		{Name: "tmo9", Origins: []Origin{a(Origin{MaxAttempts: 3, Retry: []string{H5xx}, Timeouts: to(10, 10, 10, 30)})}},

		// RDR
		{Name: "rdr", Origins: []Origin{a(Origin{MaxAttempts: 2, Redirects: []string{"MOVED_PERMANENTLY", "FOUND"}})},
			Methods: []string{"GET", "HEAD", "OPTIONS", "POST"}},
		{Name: "rdr-all", Origins: []Origin{a(Origin{MaxAttempts: 2, Redirects: []string{"MOVED_PERMANENTLY", "FOUND", "SEE_OTHER", "TEMPORARY_REDIRECT", "PERMANENT_REDIRECT"}})}},
		{Name: "rdr-max3", Origins: []Origin{a(Origin{MaxAttempts: 3, Redirects: []string{"FOUND"}})}},
		{Name: "rdr-cap", Origins: []Origin{a(Origin{MaxAttempts: 2, Retry: []string{H5xx}}), {Listener: ListenerB, MaxAttempts: 4, Redirects: []string{"FOUND"}}}},
		{Name: "rdr-max1", Origins: []Origin{a(Origin{Redirects: []string{"FOUND"}})}},
		{Name: "rdr-tmo", Origins: []Origin{a(Origin{MaxAttempts: 2, Redirects: []string{"FOUND"}, Timeouts: to(1, 20, 10, 30)})}},
		{Name: "rdr-mat", Origins: []Origin{a(Origin{MaxAttempts: 2, Redirects: []string{"FOUND"}, Timeouts: to(10, 3, 10, 30)})}},
		{Name: "rdr-tls", Origins: []Origin{{Listener: ListenerHTTPS, Protocol: config.ProtocolHTTPS, MaxAttempts: 2, Redirects: []string{"FOUND"}}}},
		{Name: "rdr-allow", Origins: []Origin{a(Origin{MaxAttempts: 2, Redirects: []string{"FOUND"}, AllowList: []string{"alt"}})}, Requires: NeedsReference},

		// HST and PRT
		{Name: "h2", Origins: []Origin{{Listener: ListenerH2, Protocol: config.ProtocolHTTP2}}},
		{Name: "https", Origins: []Origin{{Listener: ListenerHTTPS, Protocol: config.ProtocolHTTPS}}},
		{Name: "hst-route", Origins: []Origin{{Listener: ListenerH2}}, Rewrite: &config.URLRewrite{HostRewrite: "route-host"}},
		{Name: "hst-route-https", Origins: []Origin{{Listener: ListenerHTTPS, Protocol: config.ProtocolHTTPS}}, Rewrite: &config.URLRewrite{HostRewrite: "route-host"}},
		{Name: "hst-origin", Origins: []Origin{{Listener: ListenerH2, HostRewrite: true}}},
		{Name: "hst-both", Origins: []Origin{{Listener: ListenerH2, HostRewrite: true}}, Rewrite: &config.URLRewrite{HostRewrite: "route-host"}},
		{Name: "hst-fo", Origins: []Origin{{Listener: ListenerRefuse, Protocol: config.ProtocolHTTP}, {Listener: ListenerH2}}, Rewrite: &config.URLRewrite{HostRewrite: "route-host"}},
		{Name: "hst-fo-own", Origins: []Origin{{Listener: ListenerRefuse, Protocol: config.ProtocolHTTP}, {Listener: ListenerH2, HostRewrite: true}}, Rewrite: &config.URLRewrite{HostRewrite: "route-host"}},
		{Name: "hst6", Origins: []Origin{
			a(Origin{Retry: []string{H5xx}, Headers: []config.HeaderToAdd{
				{HeaderName: "X-Edgeconform-Origin", HeaderValue: "primary"},
				{HeaderName: "X-Edgeconform-Both", HeaderValue: "origin", Replace: true}}}),
			b},
			Header: &config.HeaderAction{RequestHeadersToAdd: []config.HeaderToAdd{
				{HeaderName: "X-Edgeconform-Route-Hdr", HeaderValue: "route"},
				{HeaderName: "X-Edgeconform-Both", HeaderValue: "route", Replace: true}}}},
		{Name: "hst-gcs", Origins: []Origin{{Bucket: true, HostRewrite: true}}, Requires: NeedsGCS},
		{Name: "prt-h2-to-h1", Origins: []Origin{{Listener: ListenerHTTPS, Protocol: config.ProtocolHTTP2}}},
		{Name: "prt-https-to-h2", Origins: []Origin{{Listener: ListenerH2, Protocol: config.ProtocolHTTPS}}},
		{Name: "prt-port80", Origins: []Origin{{Listener: Listener80, Protocol: config.ProtocolHTTP, DefaultPort: true}}, Requires: NeedsDefaultPorts},
		{Name: "prt-port443", Origins: []Origin{{Listener: Listener443, Protocol: config.ProtocolHTTP2, DefaultPort: true}}, Requires: NeedsDefaultPorts},

		// COL
		// The fill waits at a barrier while the clients arrive: that must
		// never meet connectTimeout, however slow the machine.
		{Name: "col", Origins: []Origin{a(Origin{Timeouts: to(Max, Max, 3, 60)})}, Cache: "CACHE_ALL_STATIC"},

		// CCH: one route per cache mode and cdnPolicy. Cache TTLs are
		// whole seconds (Media CDN's unit, and Date's granularity), the
		// same in every profile.
		{Name: "cch-static", Origins: []Origin{{Listener: ListenerA}}, Cache: "CACHE_ALL_STATIC"},
		{Name: "cch-static-ttl", Origins: []Origin{{Listener: ListenerA}}, Cache: "CACHE_ALL_STATIC",
			Policy: &config.CDNPolicy{DefaultTTL: secs(CCHDefaultTTL), MaxTTL: secs(CCHMaxTTL)}},
		{Name: "cch-origin", Origins: []Origin{{Listener: ListenerA}}, Cache: "USE_ORIGIN_HEADERS",
			Methods: []string{"GET", "HEAD", "OPTIONS", "POST"}},
		{Name: "cch-force", Origins: []Origin{{Listener: ListenerA}}, Cache: "FORCE_CACHE_ALL",
			Methods: []string{"GET", "HEAD", "OPTIONS", "POST"}},
		{Name: "cch-bypass", Origins: []Origin{{Listener: ListenerA}}, Cache: "BYPASS_CACHE"},
		{Name: "cch-neg", Origins: []Origin{{Listener: ListenerA}}, Cache: "CACHE_ALL_STATIC",
			Policy: &config.CDNPolicy{NegativeCaching: true}},
		{Name: "cch-negpol", Origins: []Origin{{Listener: ListenerA}}, Cache: "CACHE_ALL_STATIC",
			Policy: &config.CDNPolicy{NegativeCaching: true, NegativeCachingPolicy: map[string]config.Duration{"404": *secs(60)}}},
		{Name: "cch-key", Origins: []Origin{{Listener: ListenerA}}, Cache: "CACHE_ALL_STATIC",
			Policy: &config.CDNPolicy{CacheKeyPolicy: &config.CacheKeyPolicy{ExcludedQueryParameters: []string{"session"},
				IncludedHeaderNames: []string{KeyHeader}, IncludedCookieNames: []string{KeyCookie}}}},
		{Name: "cch-key-inc", Origins: []Origin{{Listener: ListenerA}}, Cache: "CACHE_ALL_STATIC",
			Policy: &config.CDNPolicy{CacheKeyPolicy: &config.CacheKeyPolicy{IncludedQueryParameters: []string{"a"}}}},
		{Name: "cch-key-nohost", Origins: []Origin{{Listener: ListenerA}}, Cache: "CACHE_ALL_STATIC",
			Policy: &config.CDNPolicy{CacheKeyPolicy: &config.CacheKeyPolicy{ExcludeHost: true, ExcludeQueryString: true}}},

		// RNG: large objects in 2 MiB chunks; rng4 passes ranges through.
		{Name: "rng", Origins: []Origin{a(Origin{Timeouts: to(10, 20, 20, 100)})}, Cache: "CACHE_ALL_STATIC"},
		{Name: "rng4", Origins: []Origin{a(Origin{Timeouts: to(10, 20, 3, 30)})}},

		// SHD: fills held at the origin while clients arrive at every
		// edge (as col); shd-region's origin has a flexShielding region.
		{Name: "shd", Origins: []Origin{a(Origin{Timeouts: to(Max, Max, 20, 100)})}, Cache: "CACHE_ALL_STATIC"},
		{Name: "shd-region", Origins: []Origin{a(Origin{Region: ShieldRegion})}, Cache: "CACHE_ALL_STATIC", Requires: NeedsReference},

		// BKT: a private S3-compatible bucket (SigV4) and a private Cloud
		// Storage bucket (bearer token).
		{Name: "bkt-s3", Origins: []Origin{{Listener: ListenerS3, S3: true, HostRewrite: true, RewriteTo: "s3-host"}},
			Cache: "CACHE_ALL_STATIC", Methods: allMethods, Requires: NeedsS3},
		{Name: "bkt-s3-route", Origins: []Origin{{Listener: ListenerS3, S3: true}},
			Rewrite: &config.URLRewrite{HostRewrite: "s3-host"}, Requires: NeedsS3},
		{Name: "bkt-s3-nohost", Origins: []Origin{{Listener: ListenerS3, S3: true}}, Requires: NeedsS3},
		{Name: "bkt-s3-other", Origins: []Origin{{Listener: ListenerS3, S3: true, HostRewrite: true, RewriteTo: "s3-other"}}, Requires: NeedsS3},
		{Name: "bkt-gcs", Origins: []Origin{{Bucket: true}}, Cache: "CACHE_ALL_STATIC", Requires: NeedsGCS},
		{Name: "bkt-gcs-force", Origins: []Origin{{Bucket: true}}, Cache: "FORCE_CACHE_ALL", Requires: NeedsGCS},
	}
	return s
}

// Available reports whether a scenario exists with these parameters, and
// why not.
func (p Params) Available(s Scenario) (bool, string) {
	switch s.Requires {
	case NeedsDefaultPorts:
		if p.DefaultPortHost == "" {
			return false, "no emulator listeners on the default ports 80 and 443 (defaultPortHost not set): binding them needs root, " +
				"CAP_NET_BIND_SERVICE or sysctl net.ipv4.ip_unprivileged_port_start=80; a real CDN needs emulators reachable on 80 and 443 at -default-port-host"
		}
	case NeedsGCS:
		if p.GCSBucket == "" || !p.Reference || p.Ports[ListenerGCS] == 0 {
			return false, "gs:// origins are reached at an emulator only by the reference (--gcs-endpoint)"
		}
	case NeedsS3:
		if p.S3 == nil || p.Ports[ListenerS3] == 0 {
			return false, "no S3-compatible bucket emulator (the s3 listener and the topology's s3 parameters)"
		}
	case NeedsReference:
		if !p.Reference {
			return false, "uses a setting only the reference has (the reference in-process, or an external target with a topology from -format reference and EDGECONFORM_REFERENCE_IMPL=1)"
		}
	}
	return true, ""
}

// Lookup returns the named scenario.
func Lookup(name string) (Scenario, bool) {
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// OriginName is the name of a scenario's i-th origin.
func OriginName(scenario string, i int) string { return fmt.Sprintf("%s-%d", scenario, i) }

// Build returns the configuration for p (with what only the reference has
// when p.Reference is set).
func Build(p Params) (*config.Config, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	cfg := &config.Config{}
	var main []config.RouteRule
	allow := map[string][]string{}
	for i, s := range Scenarios() {
		if ok, _ := p.Available(s); !ok {
			continue
		}
		for j, o := range s.Origins {
			co, err := p.origin(s, j, o)
			if err != nil {
				return nil, err
			}
			cfg.Origins = append(cfg.Origins, co)
			for _, h := range o.AllowList {
				allow[co.Name] = append(allow[co.Name], p.symbolicHost(h))
			}
		}
		main = append(main, p.route(s, i))
	}
	// MTH-4: Scenarios lists "prio" (priority 901) before "prio-first"
	// (900), so list order and priority order differ.
	cfg.Origins = append(cfg.Origins, config.Origin{Name: "mth", OriginAddress: p.OriginHost, Protocol: config.ProtocolHTTP, Port: p.Ports[ListenerA]})
	matcher := func(name string) config.PathMatcher {
		prefix := "/"
		if name == MTHStarMatcher {
			prefix = MTHStarPrefix // any other path of an unknown host matches no route (MTH-3)
		}
		return config.PathMatcher{Name: name, RouteRules: []config.RouteRule{{
			Priority: 1, MatchRules: []config.MatchRule{{PrefixMatch: prefix}}, Origin: p.ref("mth"),
			HeaderAction: &config.HeaderAction{ResponseHeadersToAdd: []config.HeaderToAdd{{HeaderName: MatcherHeader, HeaderValue: name}}},
			RouteAction:  &config.RouteAction{CDNPolicy: &config.CDNPolicy{CacheMode: "BYPASS_CACHE"}},
		}}}
	}
	cfg.Service = config.Service{
		Name: "edgeconform",
		Routing: config.Routing{
			HostRules: []config.HostRule{
				{Hosts: []string{p.ClientHost, p.AliasHost()}, PathMatcher: MainMatcher},
				{Hosts: []string{p.MTHExactHost()}, PathMatcher: MTHExactMatcher},
				{Hosts: []string{p.MTHShortWildcard()}, PathMatcher: MTHShortMatcher},
				{Hosts: []string{p.MTHLongWildcard()}, PathMatcher: MTHLongMatcher},
				{Hosts: []string{p.MTHPrefixWildcard()}, PathMatcher: MTHPrefixMatcher},
				{Hosts: []string{"*"}, PathMatcher: MTHStarMatcher},
			},
			PathMatchers: []config.PathMatcher{
				{Name: MainMatcher, RouteRules: main},
				matcher(MTHExactMatcher), matcher(MTHShortMatcher), matcher(MTHLongMatcher), matcher(MTHPrefixMatcher),
				matcher(MTHStarMatcher),
			},
		},
	}
	if p.Reference && len(allow) > 0 {
		cfg.Reference = &config.Extensions{RedirectAllowList: allow}
	}
	return cfg, nil
}

func (p Params) symbolicHost(h string) string {
	switch h {
	case "alt":
		return p.AltHost
	case "origin":
		return p.OriginHost
	case "route-host":
		return p.RouteRewriteHost
	case "s3-host":
		if p.S3 != nil {
			return p.S3.VirtualHost()
		}
	case "s3-other":
		if p.S3 != nil {
			return "other-" + p.S3.VirtualHost()
		}
	}
	return h
}

// ref is how a route or failover names an origin.
func (p Params) ref(name string) string {
	if p.Project == "" {
		return name
	}
	return fmt.Sprintf("projects/%s/locations/global/edgeCacheOrigins/%s", p.Project, name)
}

func (p Params) origin(s Scenario, j int, o Origin) (config.Origin, error) {
	co := config.Origin{Name: OriginName(s.Name, j), MaxAttempts: o.MaxAttempts, RetryConditions: o.Retry}
	if j+1 < len(s.Origins) {
		co.FailoverOrigin = p.ref(OriginName(s.Name, j+1))
	}
	prof := listenerProfile(o.Listener)
	co.Protocol = o.Protocol
	if co.Protocol == "" {
		co.Protocol = config.ProtocolHTTP2
		if prof == "http" {
			co.Protocol = config.ProtocolHTTP
		}
	}
	switch {
	case o.Bucket:
		co.OriginAddress = "gs://" + p.GCSBucket
		co.Protocol = ""
	case o.DefaultPort:
		co.OriginAddress = p.DefaultPortHost
	default:
		port := p.Ports[o.Listener]
		if port == 0 {
			return co, fmt.Errorf("scenario %s: no port for listener %q", s.Name, o.Listener)
		}
		co.OriginAddress, co.Port = p.OriginHost, port
	}
	t := DefaultTimeouts
	if o.Timeouts != nil {
		t = *o.Timeouts
	}
	co.Timeout = &config.OriginTimeout{
		ConnectTimeout: p.dur(t.Connect, config.MaxConnectTimeout), MaxAttemptsTimeout: p.dur(t.MaxAttempts, config.MaxMaxAttemptsTimeout),
		ReadTimeout: p.dur(t.Read, config.MaxReadTimeout), ResponseTimeout: p.dur(t.Response, config.MaxResponseTimeout),
	}
	if len(o.Redirects) > 0 {
		co.OriginRedirect = &config.OriginRedirect{RedirectConditions: o.Redirects}
	}
	if o.S3 {
		if p.S3 == nil {
			return co, fmt.Errorf("scenario %s: an S3 origin without S3 parameters", s.Name)
		}
		co.AWSV4Authentication = &config.AWSV4Authentication{AccessKeyID: p.S3.AccessKeyID,
			SecretAccessKeyVersion: p.S3.SecretVersion, OriginRegion: p.S3.Region}
	}
	if o.Region != "" {
		co.FlexShielding = &config.FlexShielding{FlexShieldingRegions: []string{o.Region}}
	}
	if o.HostRewrite || len(o.Headers) > 0 {
		co.OriginOverrideAction = &config.OriginOverrideAction{}
		if o.HostRewrite {
			h := p.OriginRewriteHost
			if o.RewriteTo != "" {
				h = p.symbolicHost(o.RewriteTo)
			}
			co.OriginOverrideAction.URLRewrite = &config.OriginURLRewrite{HostRewrite: h}
		}
		if len(o.Headers) > 0 {
			co.OriginOverrideAction.HeaderAction = &config.OriginHeaderAction{RequestHeadersToAdd: o.Headers}
		}
	}
	return co, nil
}

func (p Params) dur(units float64, max time.Duration) *config.Duration {
	switch {
	case units == 0:
		return nil
	case units == Max:
		d := config.Duration(max)
		return &d
	}
	d := config.Duration(p.Profile.U(units))
	return &d
}

func (p Params) route(s Scenario, i int) config.RouteRule {
	prio := s.Priority
	if prio == 0 {
		prio = i + 1
	}
	rr := config.RouteRule{
		Priority:   config.Int64(prio),
		MatchRules: s.Match,
		Origin:     p.ref(OriginName(s.Name, 0)),
	}
	if rr.MatchRules == nil {
		rr.MatchRules = []config.MatchRule{{PrefixMatch: Prefix(s.Name)}}
	}
	ha := &config.HeaderAction{}
	if s.Header != nil {
		c := *s.Header
		ha = &c
	}
	if !slices.ContainsFunc(ha.ResponseHeadersToAdd, func(h config.HeaderToAdd) bool { return h.HeaderName == RouteHeader }) {
		ha.ResponseHeadersToAdd = append(slices.Clone(ha.ResponseHeadersToAdd), config.HeaderToAdd{HeaderName: RouteHeader, HeaderValue: s.Name})
	}
	rr.HeaderAction = ha
	cache := s.Cache
	if cache == "" {
		cache = "BYPASS_CACHE"
	}
	pol := config.CDNPolicy{}
	if s.Policy != nil {
		pol = *s.Policy
	}
	pol.CacheMode = cache
	rr.RouteAction = &config.RouteAction{CDNPolicy: &pol}
	if s.Rewrite != nil {
		u := *s.Rewrite
		u.HostRewrite = p.symbolicHost(u.HostRewrite)
		rr.RouteAction.URLRewrite = &u
	}
	if s.Methods != nil {
		rr.RouteMethods = &config.RouteMethods{AllowedMethods: s.Methods}
	}
	return rr
}

func listenerProfile(name string) originemu.Profile {
	for _, l := range append(Listeners(), BucketListeners()...) {
		if l.Name == name {
			return l.Profile
		}
	}
	return ""
}
