package policy

import (
	"errors"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/internal/httpdate"
)

// CurrentAge is a stored response's current age (RFC 9111 4.2.3, CCH-7):
// requestTime is when the request that fetched it was sent, responseTime
// when the response arrived, now the time of use.
//
//	apparent_age    = max(0, response_time - date_value)
//	corrected_age   = age_value + (response_time - request_time)
//	initial_age     = max(apparent_age, corrected_age)
//	current_age     = initial_age + (now - response_time)
func CurrentAge(h http.Header, requestTime, responseTime, now time.Time) time.Duration {
	date, err := httpdate.Parse(h.Get("Date"))
	return CurrentAgeDated(date, err == nil, h, requestTime, responseTime, now)
}

// CurrentAgeDated is CurrentAge with h's Date field already parsed into
// date (dated false: absent or invalid), for a caller that keeps stored
// responses' dates parsed (issue #14).
func CurrentAgeDated(date time.Time, dated bool, h http.Header, requestTime, responseTime, now time.Time) time.Duration {
	var apparent time.Duration
	if dated {
		apparent = max(0, responseTime.Sub(date))
	}
	var ageValue time.Duration
	if v, ok := h["Age"]; ok {
		n, err := parseAge(v)
		if err != nil {
			n = maxDelta // RFC 9111 5.1, INT: an invalid Age makes the response stale
		}
		ageValue = time.Duration(n) * time.Second
	}
	corrected := ageValue + max(0, responseTime.Sub(requestTime))
	return max(apparent, corrected) + max(0, now.Sub(responseTime))
}

// errAgeInvalid is an Age field that is not one non-negative integer.
var errAgeInvalid = errors.New("age is not one non-negative integer")

// parseAge is the Age field's delta-seconds (RFC 9111 5.1): exactly one
// field line holding one non-negative integer, capped at 2^31 (RFC 9111
// 1.2.2). A list ("old, 0", "0, 0"), two field lines, a sign or a word is
// errAgeInvalid.
func parseAge(lines []string) (uint64, error) {
	if len(lines) != 1 {
		return 0, errAgeInvalid
	}
	s := strings.TrimSpace(lines[0])
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, errAgeInvalid
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return maxDelta, nil // all digits: an overflow
	}
	return min(n, maxDelta), nil
}

// Fresh reports whether a stored response with decision d and current age
// may be served without revalidation (RFC 9111 4.2, CCH-4): never when
// no-cache, otherwise while age < TTL.
func Fresh(d Decision, age time.Duration) bool {
	return d.Store && !d.NoCache && age < d.TTL
}

// Conditional are the request headers that revalidate a stored response
// (CCH-4, RFC 9111 4.3.1): If-None-Match from ETag and If-Modified-Since
// from Last-Modified. It is empty when the response has no validator.
func Conditional(stored http.Header) http.Header {
	c := http.Header{}
	if etag := strings.TrimSpace(stored.Get("Etag")); etag != "" {
		c.Set("If-None-Match", etag)
	}
	if lm := strings.TrimSpace(stored.Get("Last-Modified")); lm != "" {
		c.Set("If-Modified-Since", lm)
	}
	return c
}

// notMerged are the fields a 304 never updates in a stored response (RFC
// 9111 3.2 and 4.3.4; Set-Cookie by choice, so that a cookie never lands
// in a shared object).
var notMerged = map[string]bool{
	"Content-Length":      true,
	"Content-Range":       true,
	"Content-Encoding":    true,
	"Transfer-Encoding":   true,
	"Set-Cookie":          true,
	"Connection":          true,
	"Keep-Alive":          true,
	"Proxy-Connection":    true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Upgrade":             true,
}

// Merge304 is the stored header updated from a 304 (Not Modified) response
// (RFC 9111 4.3.4, 3.2): each field of fresh replaces the stored one,
// except the representation's framing (Content-Length, Content-Range,
// Content-Encoding, Transfer-Encoding), Set-Cookie and hop-by-hop fields
// (including those fresh's Connection names). A stored Age that fresh does
// not carry is dropped. Neither input is modified.
func Merge304(stored, fresh http.Header) http.Header {
	out := stored.Clone()
	if out == nil {
		out = http.Header{}
	}
	skip := map[string]bool{}
	for _, line := range fresh.Values("Connection") {
		for n := range strings.SplitSeq(line, ",") {
			if n = strings.TrimSpace(n); n != "" {
				skip[textproto.CanonicalMIMEHeaderKey(n)] = true
			}
		}
	}
	if _, ok := fresh["Age"]; !ok {
		out.Del("Age")
	}
	for k, v := range fresh {
		ck := textproto.CanonicalMIMEHeaderKey(k)
		if notMerged[ck] || skip[ck] {
			continue
		}
		out.Del(ck)
		out[ck] = append([]string(nil), v...)
	}
	return out
}

// Invalidates reports whether a response to method with status invalidates
// the stored responses for the target URI (RFC 9111 4.4, CCH-7): unsafe
// methods (anything but GET, HEAD, OPTIONS, TRACE) with a non-error
// status (2xx or 3xx).
func Invalidates(method string, status int) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return status >= 200 && status < 400
}
