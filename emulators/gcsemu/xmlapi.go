package gcsemu

import (
	"net/http"
	"net/url"
)

// serveXML answers the XML API for bucket name and the (still escaped)
// object path.
func (s *Server) serveXML(w http.ResponseWriter, r *http.Request, name, escaped string) {
	obj, err := url.PathUnescape(escaped)
	if err != nil {
		writeXMLError(w, r, errBadRequest("invalid object path"))
		return
	}
	if obj == "" {
		switch r.Method {
		case http.MethodPut, http.MethodDelete:
			s.xmlBucket(w, r, name)
		case http.MethodGet, http.MethodHead:
			s.xmlList(w, r, name)
		default:
			writeXMLError(w, r, errMethod(r.Method))
		}
		return
	}
	var serve func(http.ResponseWriter, *http.Request, *bucket, string) error
	a := accessRead
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		serve = s.xmlGet
	case http.MethodPut:
		serve, a = s.xmlPut, accessWrite
	case http.MethodDelete:
		serve, a = s.xmlDelete, accessWrite
	default:
		writeXMLError(w, r, errMethod(r.Method))
		return
	}
	b := s.store.bucket(name)
	if err := s.authorize(r, b, a); err != nil {
		writeXMLError(w, r, err)
		return
	}
	if b == nil {
		writeXMLError(w, r, errNoSuchBucket(name))
		return
	}
	if err := serve(w, r, b, obj); err != nil {
		writeXMLError(w, r, err)
	}
}

func (s *Server) xmlGet(w http.ResponseWriter, r *http.Request, b *bucket, name string) error {
	o := s.store.get(b.name, name)
	if o == nil {
		return errNoSuchKey(b.name, name)
	}
	gen, err := generationParam(r.URL.Query().Get("generation"))
	if err != nil {
		return err
	}
	if gen != 0 && gen != o.generation {
		return errNoSuchKey(b.name, name)
	}
	conds, err := headerConditions(r.Header)
	if err != nil {
		return err
	}
	if err := conds.check(o); err != nil {
		return err
	}
	return s.serveMedia(w, r, b, o)
}

func (s *Server) xmlPut(w http.ResponseWriter, r *http.Request, b *bucket, name string) error {
	if err := checkObjectName(name); err != nil {
		return errBadRequest("%v", err)
	}
	if r.Header.Get("X-Goog-Copy-Source") != "" {
		return s.xmlCopy(w, r, b, name)
	}
	conds, err := headerConditions(r.Header)
	if err != nil {
		return err
	}
	body := s.bodyReader(r)
	defer body.Close()
	blob, d, err := s.receive(body)
	if err != nil {
		return err
	}
	o := newBlobObject(b.name, name, blob, d)
	o.attrs = headerAttrs(r.Header)
	err = checkHashHeader(o, r.Header.Values("X-Goog-Hash"))
	if err == nil {
		err = checkHash(o, "md5", r.Header.Get("Content-MD5"))
	}
	if err != nil {
		blob.Release()
		return err
	}
	if err := s.store.put(o, conds); err != nil {
		return err
	}
	h := w.Header()
	h.Set("ETag", o.etag())
	setWrittenHeaders(h, o)
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// setWrittenHeaders are the headers of the XML API's answer to a write
// (PUT, copy): the new generation and its hashes.
func setWrittenHeaders(h http.Header, o *object) {
	h.Set("X-Goog-Generation", itoa(o.generation))
	h.Set("X-Goog-Metageneration", itoa(o.metageneration))
	h.Set("X-Goog-Hash", "crc32c="+o.crc32cBase64()+",md5="+o.md5Base64())
	h.Set("X-Goog-Stored-Content-Length", itoa(o.size))
	h.Set("X-Goog-Stored-Content-Encoding", "identity")
	h.Set("Cache-Control", "private, max-age=0")
}

func (s *Server) xmlDelete(w http.ResponseWriter, r *http.Request, b *bucket, name string) error {
	conds, err := headerConditions(r.Header)
	if err != nil {
		return err
	}
	if err := s.store.delete(b.name, name, conds); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
