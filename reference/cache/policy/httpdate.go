package policy

import (
	"fmt"
	"strings"
	"time"
)

// The three HTTP-date formats (RFC 9110 5.6.7) as Go layouts.
const (
	imfFixdate = "Mon, 02 Jan 2006 15:04:05 GMT"
	rfc850Date = "Monday, 02-Jan-06 15:04:05 GMT"
	asctime    = "Mon Jan _2 15:04:05 2006"
)

// shapes are the formats' byte shapes: 'a' a letter, '9' a digit, '_' a
// digit or a space, anything else itself; rfc850 day names vary in
// length, so its shape starts after the comma.
var shapes = []struct{ shape, layout string }{
	{"aaa, 99 aaa 9999 99:99:99 GMT", imfFixdate},
	{"aaa aaa _9 99:99:99 9999", asctime},
}

const rfc850Shape = ", 99-aaa-99 99:99:99 GMT"

// ParseHTTPDate parses an HTTP-date strictly (RFC 9110 5.6.7): exactly one
// of IMF-fixdate, rfc850-date or asctime-date, byte for byte (two-digit
// hours and days, single spaces, "GMT"), after trimming surrounding
// whitespace. time.Parse alone is lenient (one-digit hours, runs of
// spaces), which RFC 9111 5.3 makes an invalid date.
func ParseHTTPDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, f := range shapes {
		if matchShape(s, f.shape) {
			return parseDate(f.layout, s)
		}
	}
	if day, rest, ok := strings.Cut(s, ","); ok && matchShape(","+rest, rfc850Shape) && isLetters(day) {
		return parseDate(rfc850Date, s)
	}
	return time.Time{}, fmt.Errorf("not an HTTP-date: %q", prefix(s))
}

func parseDate(layout, s string) (time.Time, error) {
	t, err := time.Parse(layout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not an HTTP-date: %q: %w", prefix(s), err)
	}
	return t, nil
}

func matchShape(s, shape string) bool {
	if len(s) != len(shape) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch shape[i] {
		case 'a':
			if !isLetter(c) {
				return false
			}
		case '9':
			if c < '0' || c > '9' {
				return false
			}
		case '_':
			if c != ' ' && (c < '0' || c > '9') {
				return false
			}
		default:
			if c != shape[i] {
				return false
			}
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isLetters(s string) bool {
	for i := range len(s) {
		if !isLetter(s[i]) {
			return false
		}
	}
	return s != ""
}

// prefix is at most the first 40 bytes of s, for error messages.
func prefix(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
