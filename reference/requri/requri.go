// Package requri parses request targets as url.ParseRequestURI does, with
// a fast path for the plain origin-form paths nearly every request has
// (issue #14: the parser's general path was about 1 µs of a proxied
// request, twice: the client's target and the origin's).
package requri

import "net/url"

// Parse is url.ParseRequestURI(s): a path made only of letters, digits,
// "-", ".", "_", "~" and "/", starting with "/", is url.URL{Path: s}
// without the general parser; anything else goes to url.ParseRequestURI.
func Parse(s string) (*url.URL, error) {
	if plain(s) {
		return &url.URL{Path: s}, nil
	}
	return url.ParseRequestURI(s)
}

// plain reports whether s is a path url.ParseRequestURI returns as
// url.URL{Path: s}: "/" and then unreserved characters and "/" only (no
// query, fragment, escape, sub-delimiter, colon or "@", which the general
// parser treats specially or keeps in RawPath).
func plain(s string) bool {
	if s == "" || s[0] != '/' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '.' || c == '_' || c == '~' || c == '/':
		default:
			return false
		}
	}
	return true
}
