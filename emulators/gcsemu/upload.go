package gcsemu

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

// uploadMeta is the object metadata a client sends with an upload.
type uploadMeta struct {
	Name    string `json:"name"`
	CRC32C  string `json:"crc32c"`
	MD5Hash string `json:"md5Hash"`
	attrsJSON
}

// serveUpload answers /upload/storage/v1/b/BUCKET/o: uploadType=media,
// multipart and resumable (start, chunks, status, cancel).
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] != "b" || parts[2] != "o" {
		writeJSONError(w, r, errNotFound(r.URL.Path))
		return
	}
	name, err := url.PathUnescape(parts[1])
	if err != nil {
		writeJSONError(w, r, errBadRequest("invalid bucket name"))
		return
	}
	q := r.URL.Query()
	if id := q.Get("upload_id"); id != "" {
		s.resumableChunk(w, r, name, id)
		return
	}
	if r.Method != http.MethodPost {
		writeJSONError(w, r, errMethod(r.Method))
		return
	}
	b := s.store.bucket(name)
	if err := s.authorize(r, b, accessWrite); err != nil {
		writeJSONError(w, r, err)
		return
	}
	if b == nil {
		writeJSONError(w, r, errNoSuchBucket(name))
		return
	}
	conds, err := queryConditions(q)
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	switch t := q.Get("uploadType"); t {
	case "media":
		meta := uploadMeta{Name: q.Get("name")}
		meta.ContentType = ptr(r.Header.Get("Content-Type"))
		if err := checkObjectName(meta.Name); err != nil {
			writeJSONError(w, r, errBadRequest("%v", err))
			return
		}
		body := s.bodyReader(r)
		defer body.Close()
		blob, d, err := s.receive(body)
		if err != nil {
			writeJSONError(w, r, err)
			return
		}
		s.finishUpload(w, r, b, meta, conds, newBlobObject(b.name, meta.Name, blob, d), r.Header.Values("X-Goog-Hash"))
	case "multipart":
		meta, blob, d, err := s.readMultipart(r)
		if err != nil {
			writeJSONError(w, r, err)
			return
		}
		if q.Get("name") != "" {
			meta.Name = q.Get("name")
		}
		s.finishUpload(w, r, b, meta, conds, newBlobObject(b.name, meta.Name, blob, d), r.Header.Values("X-Goog-Hash"))
	case "resumable":
		s.resumableStart(w, r, b, conds)
	default:
		writeJSONError(w, r, errBadRequest("unsupported uploadType %q", t))
	}
}

// readMultipart splits a multipart/related upload into its JSON metadata
// part and its media part, streamed into a blob.
func (s *Server) readMultipart(r *http.Request) (uploadMeta, *blobstore.Blob, blobstore.Digests, error) {
	var meta uploadMeta
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return meta, nil, nil, errBadRequest("multipart upload needs a multipart/related Content-Type with a boundary")
	}
	body := s.bodyReader(r)
	defer body.Close()
	mr := multipart.NewReader(body, params["boundary"])
	p, err := mr.NextPart()
	if err != nil {
		return meta, nil, nil, uploadError(fmt.Errorf("multipart metadata part: %w", err))
	}
	if err := json.NewDecoder(io.LimitReader(p, 1<<20)).Decode(&meta); err != nil {
		return meta, nil, nil, uploadError(fmt.Errorf("multipart metadata: %w", err))
	}
	if err := checkObjectName(meta.Name); err != nil && r.URL.Query().Get("name") == "" {
		return meta, nil, nil, errBadRequest("%v", err)
	}
	p, err = mr.NextPart()
	if err != nil {
		return meta, nil, nil, uploadError(fmt.Errorf("multipart media part: %w", err))
	}
	blob, d, err := s.receive(p)
	if err != nil {
		return meta, nil, nil, err
	}
	if meta.ContentType == nil {
		meta.ContentType = ptr(p.Header.Get("Content-Type"))
	}
	return meta, blob, d, nil
}

// finishUpload checks and stores an uploaded object (o, whose blob it
// owns) and answers with its metadata.
func (s *Server) finishUpload(w http.ResponseWriter, r *http.Request, b *bucket, meta uploadMeta, conds preconditions, o *object, hashHeaders []string) {
	o.name = meta.Name
	if err := checkObjectName(meta.Name); err != nil {
		o.blob.Release()
		writeJSONError(w, r, errBadRequest("%v", err))
		return
	}
	o.attrs.apply(meta.attrsJSON)
	err := checkHash(o, "crc32c", meta.CRC32C)
	if err == nil {
		err = checkHash(o, "md5", meta.MD5Hash)
	}
	if err == nil {
		err = checkHashHeader(o, hashHeaders)
	}
	if err == nil {
		err = checkHash(o, "md5", r.Header.Get("Content-MD5"))
	}
	if err == nil {
		err = s.store.put(o, conds)
	} else {
		o.blob.Release()
	}
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, newObjectResource(r, b, o))
}

func ptr(s string) *string { return &s }
