package gcsemu

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
)

// copyFrom copies the source object's bytes and metadata into a new,
// unstored object named dst in bucket dstBucket (a hard link on disk, the
// same immutable bytes in memory). The caller authorizes the source read.
func (s *Server) copyFrom(src *object, dstBucket, dst string) (*object, error) {
	o := &object{bucket: dstBucket, name: dst, size: src.size, metageneration: 1,
		attrs: src.attrs, synthetic: src.synthetic}
	if src.blob != nil {
		s.store.mu.RLock()
		current := s.store.objects[src.bucket][src.name] == src
		var err error
		if current {
			o.blob, err = s.store.blobs.Copy(src.blob)
		}
		s.store.mu.RUnlock()
		if !current {
			return nil, errNoSuchKey(src.bucket, src.name)
		}
		if err != nil {
			return nil, uploadError(err)
		}
	}
	md5sum, crc := src.hashes()
	o.hashOnce.Do(func() { o.md5, o.crc = md5sum, crc })
	return o, nil
}

// xmlCopy answers an XML API PUT with x-goog-copy-source ("/BUCKET/OBJECT"
// or "BUCKET/OBJECT", URL-encoded): the source's bytes under the new name,
// with its metadata (x-goog-metadata-directive COPY, the default) or the
// request's (REPLACE).
func (s *Server) xmlCopy(w http.ResponseWriter, r *http.Request, b *bucket, name string) error {
	srcSpec := r.Header.Get("X-Goog-Copy-Source")
	dec, err := url.PathUnescape(strings.TrimPrefix(srcSpec, "/"))
	srcBucket, srcName, ok := strings.Cut(dec, "/")
	if err != nil || !ok || srcBucket == "" || srcName == "" {
		return errBadRequest("x-goog-copy-source %q must be /BUCKET/OBJECT", srcSpec)
	}
	directive := strings.ToUpper(r.Header.Get("X-Goog-Metadata-Directive"))
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return errBadRequest("x-goog-metadata-directive %q must be COPY or REPLACE", directive)
	}
	sb := s.store.bucket(srcBucket)
	if err := s.authorize(r, sb, accessRead); err != nil {
		return err
	}
	if sb == nil {
		return errNoSuchBucket(srcBucket)
	}
	src := s.store.get(srcBucket, srcName)
	if src == nil {
		return errNoSuchKey(srcBucket, srcName)
	}
	conds, err := headerConditions(r.Header)
	if err != nil {
		return err
	}
	o, err := s.copyFrom(src, b.name, name)
	if err != nil {
		return err
	}
	if directive == "REPLACE" {
		o.attrs = headerAttrs(r.Header)
	}
	if err := s.store.put(o, conds); err != nil {
		return err
	}
	type result struct {
		XMLName      xml.Name `xml:"CopyObjectResult"`
		LastModified string
		ETag         string
	}
	out, _ := xml.Marshal(result{LastModified: o.created.UTC().Format("2006-01-02T15:04:05.000Z"), ETag: o.etag()})
	h := w.Header()
	setWrittenHeaders(h, o)
	h.Set("Content-Type", "application/xml; charset=UTF-8")
	body := append([]byte(xml.Header), out...)
	h.Set("Content-Length", itoa(int64(len(body))))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return nil
}
