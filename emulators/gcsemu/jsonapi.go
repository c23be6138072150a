package gcsemu

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// serveJSON answers the JSON API; rest is the escaped path after
// /storage/v1/ (or /download/storage/v1/ when download is set).
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, rest string, download bool) {
	parts := strings.SplitN(rest, "/", 4)
	if rest == "b" && !download {
		s.jsonBuckets(w, r)
		return
	}
	if len(parts) < 2 || parts[0] != "b" {
		writeJSONError(w, r, errNotFound(r.URL.Path))
		return
	}
	name, err := url.PathUnescape(parts[1])
	if err != nil {
		writeJSONError(w, r, errBadRequest("invalid bucket name"))
		return
	}
	var obj, op string
	switch {
	case len(parts) == 2:
	case parts[2] != "o":
		writeJSONError(w, r, errNotFound(r.URL.Path))
		return
	case len(parts) == 4:
		// An object name is escaped whole, so a "/" starts an operation:
		// OBJ/copyTo/b/B/o/O, OBJ/rewriteTo/b/B/o/O or OBJ/compose.
		escaped, rest, _ := strings.Cut(parts[3], "/")
		if obj, err = url.PathUnescape(escaped); err != nil || obj == "" {
			writeJSONError(w, r, errBadRequest("invalid object name"))
			return
		}
		op = rest
	}
	if op != "" {
		s.jsonObjectOp(w, r, name, obj, op)
		return
	}
	a := accessRead
	if !isRead(r) {
		a = accessWrite
	}
	b := s.store.bucket(name)
	if err := s.authorize(r, b, a); err != nil {
		writeJSONError(w, r, err)
		return
	}
	if b == nil {
		writeJSONError(w, r, errNoSuchBucket(name))
		return
	}
	switch {
	case len(parts) == 2 && isRead(r):
		writeJSON(w, r, http.StatusOK, newBucketResource(r, b))
	case len(parts) == 2 && r.Method == http.MethodDelete:
		if err := s.authorizeBuckets(r); err != nil {
			writeJSONError(w, r, err)
		} else if err := s.store.deleteBucket(b.name); err != nil {
			writeJSONError(w, r, err)
		} else {
			w.WriteHeader(http.StatusNoContent)
		}
	case len(parts) == 3 && isRead(r):
		s.jsonList(w, r, b)
	case len(parts) == 4 && isRead(r):
		s.jsonGet(w, r, b, obj, download)
	case len(parts) == 4 && r.Method == http.MethodDelete:
		s.jsonDelete(w, r, b, obj)
	case len(parts) == 4 && (r.Method == http.MethodPatch || r.Method == http.MethodPut):
		s.jsonPatch(w, r, b, obj)
	default:
		writeJSONError(w, r, errMethod(r.Method))
	}
}

func isRead(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, _ := json.Marshal(v)
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("Cache-Control", "private, max-age=0, must-revalidate, no-transform")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// jsonGet answers object metadata, or the bytes with alt=media.
func (s *Server) jsonGet(w http.ResponseWriter, r *http.Request, b *bucket, name string, download bool) {
	q := r.URL.Query()
	o := s.store.get(b.name, name)
	if o == nil {
		writeJSONError(w, r, errNoSuchKey(b.name, name))
		return
	}
	gen, err := generationParam(q.Get("generation"))
	if err == nil && gen != 0 && gen != o.generation {
		err = errNoSuchKey(b.name, name)
	}
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	conds, err := queryConditions(q)
	if err == nil {
		err = conds.check(o)
	}
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	if download || q.Get("alt") == "media" {
		if err := s.serveMedia(w, r, b, o); err != nil {
			writeJSONError(w, r, err)
		}
		return
	}
	writeJSON(w, r, http.StatusOK, newObjectResource(r, b, o))
}

func (s *Server) jsonDelete(w http.ResponseWriter, r *http.Request, b *bucket, name string) {
	conds, err := queryConditions(r.URL.Query())
	if err == nil {
		err = s.store.delete(b.name, name, conds)
	}
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// jsonList answers GET /storage/v1/b/BUCKET/o.
func (s *Server) jsonList(w http.ResponseWriter, r *http.Request, b *bucket) {
	q := r.URL.Query()
	max := 1000
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			writeJSONError(w, r, errBadRequest("invalid maxResults %q", v))
			return
		}
		max = min(n, 1000)
	}
	after := ""
	if t := q.Get("pageToken"); t != "" {
		raw, err := base64.RawURLEncoding.DecodeString(t)
		if err != nil {
			writeJSONError(w, r, errBadRequest("invalid pageToken"))
			return
		}
		after = string(raw)
	}
	l, err := s.store.list(b.name, q.Get("prefix"), q.Get("delimiter"), after, q.Get("startOffset"), q.Get("endOffset"), max)
	if err != nil {
		writeJSONError(w, r, err)
		return
	}
	type page struct {
		Kind          string           `json:"kind"`
		Items         []objectResource `json:"items,omitempty"`
		Prefixes      []string         `json:"prefixes,omitempty"`
		NextPageToken string           `json:"nextPageToken,omitempty"`
	}
	p := page{Kind: "storage#objects", Prefixes: l.prefixes}
	for _, o := range l.items {
		p.Items = append(p.Items, newObjectResource(r, b, o))
	}
	if l.next != "" {
		p.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(l.next))
	}
	writeJSON(w, r, http.StatusOK, p)
}
