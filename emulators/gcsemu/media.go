package gcsemu

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

func etagMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag || `"`+t+`"` == etag {
			return true
		}
	}
	return false
}

// unsatisfiable reports a Range whose every range starts at or past the
// end (or a suffix range of an empty object).
func unsatisfiable(rng string, size int64) bool {
	spec, ok := strings.CutPrefix(rng, "bytes=")
	if !ok {
		return false
	}
	for _, part := range strings.Split(spec, ",") {
		first, last, ok := strings.Cut(strings.TrimSpace(part), "-")
		if !ok {
			return false
		}
		if first == "" {
			if n, err := strconv.ParseInt(last, 10, 64); err != nil || (n > 0 && size > 0) {
				return false
			}
			continue
		}
		if n, err := strconv.ParseInt(first, 10, 64); err != nil || n < size {
			return false
		}
	}
	return true
}

// setObjectHeaders sets the headers Cloud Storage sends with an object.
func setObjectHeaders(h http.Header, b *bucket, o *object) {
	h.Set("X-Goog-Generation", strconv.FormatInt(o.generation, 10))
	h.Set("X-Goog-Metageneration", strconv.FormatInt(o.metageneration, 10))
	h.Set("X-Goog-Hash", "crc32c="+o.crc32cBase64()+",md5="+o.md5Base64())
	h.Set("X-Goog-Stored-Content-Length", strconv.FormatInt(o.size, 10))
	h.Set("X-Goog-Stored-Content-Encoding", "identity")
	h.Set("X-Goog-Storage-Class", "STANDARD")
	h.Set("ETag", o.etag())
	h.Set("Last-Modified", o.created.UTC().Format(http.TimeFormat))
	h.Set("Cache-Control", cacheControl(b, o))
	h.Set("Content-Type", o.contentTypeOr())
	h.Set("Accept-Ranges", "bytes")
	o.attrs.setHeaders(h)
}

// serveMedia answers GET or HEAD with the object's bytes: Range (206),
// If-None-Match / If-Modified-Since (304) and If-Match /
// If-Unmodified-Since (412) as http.ServeContent does them.
func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request, b *bucket, o *object) error {
	// The answers http.ServeContent would give as plain text (412, 416)
	// are Cloud Storage's errors instead.
	if im := r.Header.Get("If-Match"); im != "" && !etagMatches(im, o.etag()) {
		return errPrecondition("If-Match")
	}
	if ius := r.Header.Get("If-Unmodified-Since"); ius != "" && r.Header.Get("If-Match") == "" {
		if t, err := http.ParseTime(ius); err == nil && o.created.Truncate(time.Second).After(t) {
			return errPrecondition("If-Unmodified-Since")
		}
	}
	if unsatisfiable(r.Header.Get("Range"), o.size) && r.Header.Get("If-Range") == "" {
		w.Header().Set("Content-Range", "bytes */"+itoa(o.size))
		return &apiError{http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "requestedRangeNotSatisfiable", "The requested range cannot be satisfied: " + r.Header.Get("Range")}
	}
	body, err := s.store.open(o)
	if err != nil {
		return err
	}
	defer body.Close()
	setObjectHeaders(w.Header(), b, o)
	http.ServeContent(w, r, "", o.created, body)
	return nil
}
