package policy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/internal/httpdate"
)

// LargeObject is RNG-1's threshold: objects over 1 MiB need validators.
const LargeObject = 1 << 20

// LargeObjectCacheable reports whether a response for an object over 1 MiB
// may be cached (RNG-1): it needs a validator (ETag or Last-Modified), a
// valid Date, a valid Content-Length and, for a 206, Content-Range: bytes
// x-y/z (with Content-Length = y-x+1). The string says why not.
func LargeObjectCacheable(status int, h http.Header) (bool, string) {
	if strings.TrimSpace(h.Get("Etag")) == "" && strings.TrimSpace(h.Get("Last-Modified")) == "" {
		return false, "RNG-1: no validator (ETag or Last-Modified)"
	}
	if _, err := httpdate.Parse(h.Get("Date")); err != nil {
		return false, "RNG-1: missing or invalid Date"
	}
	n, ok := parseContentLength(h)
	if !ok {
		return false, "RNG-1: missing or invalid Content-Length"
	}
	if status == http.StatusPartialContent {
		first, last, _, ok := ParseContentRange(h.Get("Content-Range"))
		if !ok {
			return false, "RNG-1: 206 without a valid Content-Range: bytes x-y/z"
		}
		if last-first+1 != n {
			return false, "RNG-1: Content-Length does not match Content-Range"
		}
	}
	return true, ""
}

// parseContentLength is the single valid Content-Length (repeated equal
// values are one value, RFC 9110 8.6).
func parseContentLength(h http.Header) (int64, bool) {
	vs := h.Values("Content-Length")
	if len(vs) == 0 {
		return 0, false
	}
	var n int64 = -1
	for _, line := range vs {
		for v := range strings.SplitSeq(line, ",") {
			m, ok := digits(strings.TrimSpace(v))
			if !ok || (n >= 0 && m != n) {
				return 0, false
			}
			n = m
		}
	}
	return n, true
}

// ParseContentRange parses "bytes first-last/complete" with a known
// complete length.
func ParseContentRange(s string) (first, last, total int64, ok bool) {
	unit, rest, found := strings.Cut(strings.TrimSpace(s), " ")
	if !found || !strings.EqualFold(unit, "bytes") {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(strings.TrimSpace(rest), "/")
	if !found {
		return 0, 0, 0, false
	}
	f, l, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var ok1, ok2, ok3 bool
	first, ok1 = digits(f)
	last, ok2 = digits(l)
	total, ok3 = digits(tot)
	if !ok1 || !ok2 || !ok3 || first > last || last >= total {
		return 0, 0, 0, false
	}
	return first, last, total, true
}

// digits parses a non-empty decimal without sign.
func digits(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
