package gcsemu

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

// maxComposeComponents is Cloud Storage's limit of source objects in one
// compose request.
const maxComposeComponents = 32

// readJSONBody decodes a small JSON request body into v (an empty body
// leaves v as it is).
func readJSONBody(r *http.Request, v any) error {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil {
		return errBadRequest("reading the request body: %v", err)
	}
	if len(raw) > 1<<20 {
		return errBadRequest("request body over 1 MiB")
	}
	if strings.TrimSpace(string(raw)) == "" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errBadRequest("request body: %v", err)
	}
	return nil
}

// jsonPatch answers PATCH (and PUT, update) of an object's metadata: the
// same bytes and generation, the next metageneration.
func (s *Server) jsonPatch(w http.ResponseWriter, r *http.Request, b *bucket, name string) {
	var body attrsJSON
	conds, err := queryConditions(r.URL.Query())
	if err == nil {
		err = readJSONBody(r, &body)
	}
	var o *object
	if err == nil {
		o, err = s.store.patch(b.name, name, conds, func(cur *object) *object {
			a := cur.attrs
			if r.Method == http.MethodPut {
				a = attrs{} // update replaces every writable field
			}
			a.apply(body)
			n := cur.withAttrs(a)
			n.updated = s.now().UTC()
			return n
		})
	}
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, newObjectResource(r, b, o))
}

// jsonObjectOp answers POST .../o/SRC/copyTo/b/DB/o/DO, .../rewriteTo/...
// and .../o/DST/compose.
func (s *Server) jsonObjectOp(w http.ResponseWriter, r *http.Request, bucketName, obj, op string) {
	if r.Method != http.MethodPost {
		writeJSONError(w, r, errMethod(r.Method))
		return
	}
	if op == "compose" {
		s.jsonCompose(w, r, bucketName, obj)
		return
	}
	f := strings.Split(op, "/")
	if len(f) != 5 || (f[0] != "copyTo" && f[0] != "rewriteTo") || f[1] != "b" || f[3] != "o" {
		writeJSONError(w, r, errNotFound(r.URL.Path))
		return
	}
	dstBucket, err1 := url.PathUnescape(f[2])
	dstName, err2 := url.PathUnescape(f[4])
	if err1 != nil || err2 != nil || checkObjectName(dstName) != nil {
		writeJSONError(w, r, errBadRequest("invalid destination %q", op))
		return
	}
	o, db, err := s.copyJSON(r, bucketName, obj, dstBucket, dstName)
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	res := newObjectResource(r, db, o)
	if f[0] == "copyTo" {
		writeJSON(w, r, http.StatusOK, res)
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"kind": "storage#rewriteResponse", "totalBytesRewritten": itoa(o.size),
		"objectSize": itoa(o.size), "done": true, "resource": res})
}

// copyJSON copies bucket/name to dstBucket/dstName: the bytes, and the
// source's metadata with the fields the request body sets over it.
func (s *Server) copyJSON(r *http.Request, bucketName, name, dstBucket, dstName string) (*object, *bucket, error) {
	sb, db := s.store.bucket(bucketName), s.store.bucket(dstBucket)
	if err := s.authorize(r, sb, accessRead); err != nil {
		return nil, nil, err
	}
	if err := s.authorize(r, db, accessWrite); err != nil {
		return nil, nil, err
	}
	if sb == nil {
		return nil, nil, errNoSuchBucket(bucketName)
	}
	if db == nil {
		return nil, nil, errNoSuchBucket(dstBucket)
	}
	var body attrsJSON
	if err := readJSONBody(r, &body); err != nil {
		return nil, nil, err
	}
	q := r.URL.Query()
	conds, err := queryConditions(q)
	if err != nil {
		return nil, nil, err
	}
	src := s.store.get(bucketName, name)
	if src == nil {
		return nil, nil, errNoSuchKey(bucketName, name)
	}
	if g := q.Get("ifSourceGenerationMatch"); g != "" && g != itoa(src.generation) {
		return nil, nil, errPrecondition("ifSourceGenerationMatch")
	}
	o, err := s.copyFrom(src, dstBucket, dstName)
	if err != nil {
		return nil, nil, err
	}
	o.attrs.apply(body)
	if err := s.store.put(o, conds); err != nil {
		return nil, nil, err
	}
	return o, db, nil
}

// jsonCompose answers compose: the source objects' bytes, in order, as the
// destination (at most 32 components).
func (s *Server) jsonCompose(w http.ResponseWriter, r *http.Request, bucketName, dst string) {
	b := s.store.bucket(bucketName)
	if err := s.authorize(r, b, accessWrite); err != nil {
		writeJSONError(w, r, err)
		return
	}
	if b == nil {
		writeJSONError(w, r, errNoSuchBucket(bucketName))
		return
	}
	var req struct {
		SourceObjects []struct {
			Name       string `json:"name"`
			Generation string `json:"generation"`
		} `json:"sourceObjects"`
		Destination attrsJSON `json:"destination"`
	}
	if err := readJSONBody(r, &req); err != nil {
		writeJSONError(w, r, err)
		return
	}
	switch n := len(req.SourceObjects); {
	case n == 0:
		writeJSONError(w, r, errBadRequest("compose needs at least one source object"))
		return
	case n > maxComposeComponents:
		writeJSONError(w, r, errBadRequest("The number of source components provided (%d) exceeds the maximum (%d)", n, maxComposeComponents))
		return
	}
	conds, err := queryConditions(r.URL.Query())
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	var blobs []*blobstore.Blob
	release := func() {
		for _, c := range blobs {
			c.Release()
		}
	}
	for _, so := range req.SourceObjects {
		src := s.store.get(b.name, so.Name)
		if src == nil || (so.Generation != "" && so.Generation != itoa(src.generation)) {
			release()
			writeJSONError(w, r, errNoSuchKey(b.name, so.Name))
			return
		}
		// A copy of each component's blob (a hard link on disk) keeps its
		// bytes while the composite is written.
		c, err := s.copyFrom(src, b.name, dst)
		if err == nil && c.blob == nil {
			c.blob, err = s.materialize(src)
		}
		if err != nil {
			release()
			writeJSONError(w, r, err)
			return
		}
		blobs = append(blobs, c.blob)
	}
	blob, d, err := s.store.blobs.Concat(blobs, "crc32c")
	release()
	if err != nil {
		writeJSONError(w, r, uploadError(err))
		return
	}
	o := newBlobObject(b.name, dst, blob, d)
	o.attrs.apply(req.Destination)
	if err := s.store.put(o, conds); err != nil {
		writeJSONError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, newObjectResource(r, b, o))
}

// materialize stores a synthetic object's bytes as a blob.
func (s *Server) materialize(o *object) (*blobstore.Blob, error) {
	rc, err := o.content()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	blob, _, err := s.receive(rc)
	return blob, err
}
