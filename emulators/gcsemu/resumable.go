package gcsemu

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

// session is one resumable upload in progress.
type session struct {
	mu     sync.Mutex
	bucket *bucket
	meta   uploadMeta
	conds  preconditions
	w      *blobstore.Writer // the bytes received so far
}

// uploads holds the resumable sessions by upload_id.
type uploads struct {
	mu       sync.Mutex
	sessions map[string]*session
}

func newUploads() *uploads { return &uploads{sessions: map[string]*session{}} }

func (u *uploads) add(s *session) string {
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	u.mu.Lock()
	u.sessions[id] = s
	u.mu.Unlock()
	return id
}

func (u *uploads) get(id string) *session {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sessions[id]
}

func (u *uploads) remove(id string) {
	u.mu.Lock()
	delete(u.sessions, id)
	u.mu.Unlock()
}

// resumableStart begins a session: the body is the object's JSON metadata
// (optional), the answer's Location is where the bytes go.
func (s *Server) resumableStart(w http.ResponseWriter, r *http.Request, b *bucket, conds preconditions) {
	var meta uploadMeta
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && len(strings.TrimSpace(string(body))) > 0 {
		err = json.Unmarshal(body, &meta)
	}
	if err != nil {
		writeJSONError(w, r, errBadRequest("resumable metadata: %v", err))
		return
	}
	if n := r.URL.Query().Get("name"); n != "" {
		meta.Name = n
	}
	if meta.ContentType == nil && r.Header.Get("X-Upload-Content-Type") != "" {
		meta.ContentType = ptr(r.Header.Get("X-Upload-Content-Type"))
	}
	if err := checkObjectName(meta.Name); err != nil {
		writeJSONError(w, r, errBadRequest("%v", err))
		return
	}
	bw, err := s.store.blobs.Create("crc32c")
	if err != nil {
		writeJSONError(w, r, uploadError(err))
		return
	}
	id := s.uploads.add(&session{bucket: b, meta: meta, conds: conds, w: bw})
	loc := baseURL(r) + "/upload/storage/v1/b/" + url.PathEscape(b.name) + "/o?uploadType=resumable&upload_id=" + id
	w.Header().Set("Location", loc)
	w.Header().Set("X-GUploader-UploadID", id)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// contentRange is a parsed upload Content-Range: "bytes A-B/T",
// "bytes A-B/*", "bytes */T" or "bytes */*". first is -1 without bytes,
// total -1 when unknown.
type contentRange struct{ first, last, total int64 }

func parseContentRange(v string) (contentRange, bool) {
	cr := contentRange{first: -1, last: -1, total: -1}
	spec, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return cr, false
	}
	rng, tot, ok := strings.Cut(spec, "/")
	if !ok {
		return cr, false
	}
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || t < 0 {
			return cr, false
		}
		cr.total = t
	}
	if rng == "*" {
		return cr, true
	}
	a, z, ok := strings.Cut(rng, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(z, 10, 64)
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first || (cr.total >= 0 && last >= cr.total) {
		return cr, false
	}
	cr.first, cr.last = first, last
	return cr, true
}

// resumableChunk takes one chunk (PUT or POST to the session URI), a
// status query (no bytes), or a cancel (DELETE).
func (s *Server) resumableChunk(w http.ResponseWriter, r *http.Request, bucketName, id string) {
	sess := s.uploads.get(id)
	if sess == nil || sess.bucket.name != bucketName {
		writeJSONError(w, r, &apiError{http.StatusNotFound, "NoSuchUpload", "notFound", "No such upload session: " + id})
		return
	}
	switch r.Method {
	case http.MethodDelete:
		s.uploads.remove(id)
		sess.mu.Lock()
		sess.w.Abort()
		sess.mu.Unlock()
		w.WriteHeader(499) // what Cloud Storage answers a cancelled session
		return
	case http.MethodPut, http.MethodPost:
	default:
		writeJSONError(w, r, errMethod(r.Method))
		return
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if s.uploads.get(id) != sess {
		writeJSONError(w, r, &apiError{http.StatusNotFound, "NoSuchUpload", "notFound", "No such upload session: " + id})
		return
	}
	cr := contentRange{first: -1, last: -1, total: -1}
	if v := r.Header.Get("Content-Range"); v != "" {
		var ok bool
		if cr, ok = parseContentRange(v); !ok {
			writeJSONError(w, r, errBadRequest("invalid Content-Range %q", v))
			return
		}
	} else {
		// The whole object in one request.
		if err := sess.w.Truncate(0); err != nil {
			writeJSONError(w, r, err)
			return
		}
		cr.first = 0
	}
	body := s.bodyReader(r)
	defer body.Close()
	have := sess.w.Size()
	switch {
	case cr.first < 0:
		if n, _ := io.CopyN(io.Discard, body, 1); n > 0 {
			writeJSONError(w, r, errBadRequest("Content-Range without bytes but a body"))
			return
		}
	case cr.first > have:
		writeJSONError(w, r, errBadRequest("chunk starts at %d but only %d bytes were received", cr.first, have))
		return
	default:
		if err := s.appendChunk(sess, body, cr, have); err != nil {
			writeJSONError(w, r, err)
			return
		}
		if r.Header.Get("Content-Range") == "" {
			cr.total = sess.w.Size()
		}
	}
	got := sess.w.Size()
	if cr.total >= 0 && got > cr.total {
		s.uploads.remove(id)
		sess.w.Abort()
		writeJSONError(w, r, errBadRequest("upload larger than its declared size"))
		return
	}
	if cr.total >= 0 && got == cr.total {
		s.uploads.remove(id)
		d := sess.w.Digests()
		blob, err := sess.w.Commit()
		if err != nil {
			writeJSONError(w, r, uploadError(err))
			return
		}
		s.finishUpload(w, r, sess.bucket, sess.meta, sess.conds, newBlobObject(sess.bucket.name, sess.meta.Name, blob, d), r.Header.Values("X-Goog-Hash"))
		return
	}
	resumeIncomplete(w, r, got)
}

// appendChunk appends a chunk's bytes not received yet (a retried chunk
// overlaps) to the session. A chunk whose body is shorter or longer than
// its Content-Range, or that stalls, is taken back whole.
func (s *Server) appendChunk(sess *session, body io.Reader, cr contentRange, have int64) error {
	size := int64(-1) // unknown without Content-Range
	if cr.last >= 0 {
		size = cr.last - cr.first + 1
	}
	skip := have - cr.first
	if n, err := io.CopyN(io.Discard, body, skip); err != nil || n != skip {
		return errBadRequest("Content-Range %d-%d does not match the body", cr.first, cr.last)
	}
	src := body
	if size >= 0 {
		src = io.LimitReader(body, size-skip+1)
	}
	err := s.copyUpload(sess.w, src)
	n := skip + sess.w.Size() - have
	if err == nil && size >= 0 && n != size {
		err = errBadRequest("Content-Range %d-%d does not match a body of %d bytes", cr.first, cr.last, n)
	}
	if err != nil {
		if terr := sess.w.Truncate(have); terr != nil {
			return terr
		}
		return err
	}
	return nil
}

// resumeIncomplete says "308 Resume Incomplete", or 200 with
// X-Http-Status-Code-Override: 308 when the client asked for that
// (X-GUploader-No-308: yes, as the Go client does).
func resumeIncomplete(w http.ResponseWriter, r *http.Request, n int64) {
	h := w.Header()
	if n > 0 {
		h.Set("Range", "bytes=0-"+itoa(n-1))
	}
	h.Set("Content-Length", "0")
	if strings.EqualFold(r.Header.Get("X-GUploader-No-308"), "yes") {
		h.Set("X-Http-Status-Code-Override", "308")
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusPermanentRedirect)
}
