package routing

import (
	"strings"
)

// normalizePath applies MTH-6 to an escaped path: repeated slashes are
// merged and "." and ".." segments removed ("..", never above the root).
// Nothing is percent-decoded and case is kept. INT: a trailing slash is
// kept, and a "." or ".." last segment leaves one (RFC 3986, 5.2.4).
func normalizePath(p string) string {
	if p == "" {
		return "/"
	}
	if !needsNormalizing(p) {
		return p
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case "":
			// merged; an empty last segment is a trailing slash
			trailing = last && i > 0
			continue
		case ".":
			trailing = last
			continue
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = last
			continue
		}
		trailing = false
		out = append(out, s)
	}
	if len(out) == 0 {
		return "/"
	}
	n := strings.Join(out, "/")
	if trailing {
		return "/" + n + "/"
	}
	return "/" + n
}

// needsNormalizing is the fast path: a path that starts with "/" and has
// no empty, "." or ".." segment is already normal.
func needsNormalizing(p string) bool {
	if p[0] != '/' {
		return true
	}
	for i := 1; i <= len(p); i++ {
		// p[start:i] is the segment that ends at i
		if i < len(p) && p[i] != '/' {
			continue
		}
		start := strings.LastIndexByte(p[:i], '/') + 1
		seg := p[start:i]
		if seg == "." || seg == ".." || (seg == "" && i < len(p)) {
			return true
		}
	}
	return false
}
