package gcsemu

import (
	"net/http"
	"strconv"
)

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
	body, err := s.store.open(o)
	if err != nil {
		return err
	}
	defer body.Close()
	setObjectHeaders(w.Header(), b, o)
	http.ServeContent(w, r, "", o.created, body)
	return nil
}
