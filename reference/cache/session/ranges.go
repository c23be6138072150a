package session

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/reference/cache/entry"
)

// evaluatesLocally reports whether r has a Range or a conditional header
// that the cache answers (RNG-3, RFC 9110 13).
func evaluatesLocally(r *http.Request) bool {
	for _, k := range []string{"Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since"} {
		if _, ok := r.Header[k]; ok {
			return true
		}
	}
	return false
}

// firstChunk is the chunk holding the first byte of a Range field's first
// range ("bytes=N-..."), 0 when it has none or is a suffix range (INT:
// a fill asks for the chunk the client needs first; RNG-2).
func firstChunk(rng string) int64 {
	spec, ok := strings.CutPrefix(strings.TrimSpace(rng), "bytes=")
	if !ok {
		return 0
	}
	spec, _, _ = strings.Cut(spec, ",")
	first, _, _ := strings.Cut(strings.TrimSpace(spec), "-")
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n / entry.ChunkSize
}

// firstOffset is the first byte of the object a Range field's first range
// needs, 0 when it has none.
func firstOffset(rng string, size int64) int64 {
	spec, ok := strings.CutPrefix(strings.TrimSpace(rng), "bytes=")
	if !ok {
		return 0
	}
	spec, _, _ = strings.Cut(spec, ",")
	first, last, _ := strings.Cut(strings.TrimSpace(spec), "-")
	if first == "" { // suffix range: the last N bytes
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n <= 0 {
			return 0
		}
		return max(size-n, 0)
	}
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil || n < 0 || n >= size {
		return 0
	}
	return n
}
