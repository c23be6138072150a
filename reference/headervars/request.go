package headervars

import (
	"crypto/tls"
	"net/http"
	"strings"
)

// requestValue is a variable that comes from the client's request.
func requestValue(v Var, r *http.Request) string {
	switch v {
	case TLSVersion:
		if r.TLS == nil {
			return ""
		}
		return strings.Replace(tls.VersionName(r.TLS.Version), "TLS ", "TLSv", 1)
	case TLSCipherSuite:
		if r.TLS == nil {
			return ""
		}
		return tls.CipherSuiteName(r.TLS.CipherSuite)
	case TLSSNIHostname:
		if r.TLS == nil {
			return ""
		}
		return r.TLS.ServerName
	case OriginRequestHeader:
		return r.Header.Get("Origin")
	case XForwardedForRequestHeader:
		return strings.Join(r.Header.Values("X-Forwarded-For"), ", ")
	case UserAgentFamily:
		return uaFamily(r.Header.Get("User-Agent"))
	case DeviceRequestType:
		return deviceType(r.Header.Get("User-Agent"))
	}
	return ""
}

// uaFamily is a coarse browser family from a User-Agent, in the order
// that tells them apart (Edge and Chrome both say "Chrome", Chrome says
// "Safari").
func uaFamily(ua string) string {
	for _, f := range []struct{ token, family string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"},
		{"Chrome/", "Chrome"}, {"Safari/", "Safari"}, {"curl/", "curl"},
	} {
		if strings.Contains(ua, f.token) {
			return f.family
		}
	}
	if ua == "" {
		return ""
	}
	return "Other"
}

// deviceType is a coarse device class from a User-Agent.
func deviceType(ua string) string {
	switch {
	case ua == "":
		return ""
	case strings.Contains(ua, "iPad") || strings.Contains(ua, "Tablet"):
		return "TABLET"
	case strings.Contains(ua, "Mobi") || strings.Contains(ua, "iPhone") || strings.Contains(ua, "Android"):
		return "MOBILE"
	}
	return "DESKTOP"
}
