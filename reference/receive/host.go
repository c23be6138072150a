package receive

import (
	"net/netip"
	"strconv"
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

func validPort(p string) bool {
	if p == "" || len(p) > 5 || strings.Trim(p, "0123456789") != "" {
		return false
	}
	n, err := strconv.Atoi(p)
	return err == nil && n <= 65535
}

func validName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := range len(label) {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
