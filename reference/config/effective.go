package config

import (
	"net/http"
	"strings"
	"time"
)

// Protocols (EdgeCacheOrigin.protocol).
const (
	ProtocolHTTP2 = "HTTP2"
	ProtocolHTTPS = "HTTPS"
	ProtocolHTTP  = "HTTP"
)

// Retry conditions (EdgeCacheOrigin.retryConditions, ATT-5).
const (
	RetryConnectFailure = "CONNECT_FAILURE"
	RetryHTTP5xx        = "HTTP_5XX"
	RetryGatewayError   = "GATEWAY_ERROR"
	RetryRetriable4xx   = "RETRIABLE_4XX"
	RetryNotFound       = "NOT_FOUND"
	RetryForbidden      = "FORBIDDEN"
)

// Redirect conditions (originRedirect.redirectConditions) and their codes.
var RedirectCodes = map[string]int{
	"MOVED_PERMANENTLY":  http.StatusMovedPermanently,
	"FOUND":              http.StatusFound,
	"SEE_OTHER":          http.StatusSeeOther,
	"TEMPORARY_REDIRECT": http.StatusTemporaryRedirect,
	"PERMANENT_REDIRECT": http.StatusPermanentRedirect,
}

// Defaults from the spec's resource table.
const (
	DefaultMaxAttempts        = 1
	DefaultConnectTimeout     = 5 * time.Second
	DefaultMaxAttemptsTimeout = 15 * time.Second
	DefaultReadTimeout        = 15 * time.Second
	DefaultResponseTimeout    = 30 * time.Second
)

// EffectiveOrigin is an origin's settings with every default applied: what
// the fetch engine uses.
type EffectiveOrigin struct {
	Name               string
	Address            string // FQDN, IP, or gs://bucket
	Protocol           string
	Port               int
	MaxAttempts        int
	Failover           string // "" when none
	RetryConditions    []string
	ConnectTimeout     time.Duration
	MaxAttemptsTimeout time.Duration
	ReadTimeout        time.Duration
	ResponseTimeout    time.Duration
	RedirectCodes      []int  // statuses to follow
	HostRewrite        string // originOverrideAction.urlRewrite.hostRewrite
	RequestHeaders     []HeaderToAdd
	RedirectAllowList  []string // EXT (RDR-6); nil = any host
	AWSV4              *AWSV4Authentication
	// AWSV4Secret is the secret access key secretAccessKeyVersion names,
	// once Config.ResolveSecrets has found it; "" otherwise.
	AWSV4Secret string
}

// Effective returns o's settings with defaults applied.
func (c *Config) Effective(o Origin) EffectiveOrigin {
	e := EffectiveOrigin{
		Name: o.Name, Address: o.OriginAddress, Protocol: o.Protocol, Port: o.Port,
		MaxAttempts: o.MaxAttempts, Failover: o.FailoverOrigin,
		RetryConditions:    upperAll(o.RetryConditions),
		ConnectTimeout:     DefaultConnectTimeout,
		MaxAttemptsTimeout: DefaultMaxAttemptsTimeout,
		ReadTimeout:        DefaultReadTimeout,
		ResponseTimeout:    DefaultResponseTimeout,
		AWSV4:              o.AWSV4Authentication,
	}
	if e.AWSV4 != nil {
		e.AWSV4Secret = c.secrets[o.Name]
	}
	if e.Protocol == "" {
		e.Protocol = ProtocolHTTP2
	}
	if e.Port == 0 {
		e.Port = 443 // PRT-3
		if e.Protocol == ProtocolHTTP {
			e.Port = 80
		}
	}
	if e.MaxAttempts == 0 {
		e.MaxAttempts = DefaultMaxAttempts
	}
	if len(e.RetryConditions) == 0 {
		e.RetryConditions = []string{RetryConnectFailure}
	}
	if t := o.Timeout; t != nil {
		set := func(dst *time.Duration, src *Duration) {
			if src != nil {
				*dst = src.D()
			}
		}
		set(&e.ConnectTimeout, t.ConnectTimeout)
		set(&e.MaxAttemptsTimeout, t.MaxAttemptsTimeout)
		set(&e.ReadTimeout, t.ReadTimeout)
		set(&e.ResponseTimeout, t.ResponseTimeout)
	}
	// TMO-5: readTimeout is capped by responseTimeout (the default 15s
	// read timeout under a responseTimeout of 10s is 10s).
	e.ReadTimeout = min(e.ReadTimeout, e.ResponseTimeout)
	if r := o.OriginRedirect; r != nil {
		for _, name := range r.RedirectConditions {
			if code, ok := RedirectCodes[strings.ToUpper(name)]; ok { // once, at load
				e.RedirectCodes = append(e.RedirectCodes, code)
			}
		}
	}
	if a := o.OriginOverrideAction; a != nil {
		if a.URLRewrite != nil {
			e.HostRewrite = a.URLRewrite.HostRewrite
		}
		if a.HeaderAction != nil {
			e.RequestHeaders = a.HeaderAction.RequestHeadersToAdd
		}
	}
	if c.Reference != nil {
		e.RedirectAllowList = c.Reference.RedirectAllowList[o.Name]
	}
	return e
}

// upperAll is ss upper-cased: enumerations are normalized once, when the
// configuration is loaded, so that the request path folds no case
// (validation itself is exact-case).
func upperAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(s)
	}
	return out
}

// Origin returns the named origin.
func (c *Config) Origin(name string) (Origin, bool) {
	for _, o := range c.Origins {
		if o.Name == name {
			return o, true
		}
	}
	return Origin{}, false
}
