package receive

import (
	"net/netip"
	"strings"
)

// ValidHost reports whether a request's Host (h2: :authority) is
// uri-host [":" port] as an edge can route on it (RFC 9110 7.2, RFC 3986
// 3.2.2): a DNS name (letters, digits, '-', '_', labels of 1-63 bytes, at
// most 253 bytes, an optional final dot), an IPv4 address or a bracketed
// IPv6 address, and an optional decimal port up to 65535. An empty Host
// (HTTP/1.0) is valid: routing gives it the "*" host rule. Non-ASCII
// names must come as A-labels (punycode).
func ValidHost(hostport string) bool {
	if hostport == "" {
		return true
	}
	host, port := hostport, ""
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return false
		}
		host, port = hostport[1:end], hostport[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return false
		}
		port = strings.TrimPrefix(port, ":")
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return false
		}
		return port == "" && !strings.HasSuffix(hostport, ":") || validPort(port)
	}
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		host, port = hostport[:i], hostport[i+1:]
		if !validPort(port) {
			return false
		}
	}
	return validName(host)
}

// validPort: 1-5 decimal digits, at most 65535. validPort and validName
// walk their bytes once, without splitting or converting (issue #14:
// every request's Host is checked).
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for i := range len(p) {
		c := p[i]
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n <= 65535
}

func validName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	label := 0 // bytes of the label so far
	for i := range len(h) {
		c := h[i]
		switch {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_':
			if label++; label > 63 {
				return false
			}
		default:
			return false
		}
	}
	return label > 0
}
