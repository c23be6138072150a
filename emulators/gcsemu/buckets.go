package gcsemu

import (
	"encoding/xml"
	"net/http"
	"slices"
	"strings"
)

func errBucketExists(name string) *apiError {
	return &apiError{http.StatusConflict, "BucketAlreadyOwnedByYou", "conflict", "Your previous request to create the named bucket succeeded and you already own it: " + name}
}

func errBucketNotEmpty(name string) *apiError {
	return &apiError{http.StatusConflict, "BucketNotEmpty", "conflict", "The bucket you tried to delete is not empty: " + name}
}

// authorizeBuckets decides bucket management (create, delete, list): a
// valid token, or anyone when no tokens are configured.
func (s *Server) authorizeBuckets(r *http.Request) error {
	if r.Header.Get("Authorization") == "" && len(s.tokens) > 0 {
		return &apiError{http.StatusForbidden, "AccessDenied", "forbidden", "Anonymous caller does not have storage.buckets access."}
	}
	return s.authorize(r, nil, accessWrite)
}

// createBucket adds an empty bucket; public makes it anonymously readable.
func (s *store) createBucket(name string, public bool) (*bucket, error) {
	if err := checkBucketName(name); err != nil {
		return nil, errBadRequest("%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.buckets[name]; ok {
		return nil, errBucketExists(name)
	}
	b := &bucket{name: name, public: public, created: s.now().UTC()}
	if s.persist != nil {
		if err := s.persist.saveBucket(b); err != nil {
			return nil, err
		}
	}
	s.buckets[name] = b
	s.objects[name] = map[string]*object{}
	return b, nil
}

func (s *store) deleteBucket(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.buckets[name]; !ok {
		return errNoSuchBucket(name)
	}
	if len(s.objects[name]) > 0 {
		return errBucketNotEmpty(name)
	}
	delete(s.buckets, name)
	delete(s.objects, name)
	if s.persist != nil {
		return s.persist.removeBucket(name)
	}
	return nil
}

func (s *store) bucketList() []*bucket {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*bucket, 0, len(s.buckets))
	for _, b := range s.buckets {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *bucket) int { return strings.Compare(a.name, b.name) })
	return out
}

// jsonBuckets answers POST /storage/v1/b (insert) and GET /storage/v1/b
// (list).
func (s *Server) jsonBuckets(w http.ResponseWriter, r *http.Request) {
	if err := s.authorizeBuckets(r); err != nil {
		writeJSONError(w, r, err)
		return
	}
	switch r.Method {
	case http.MethodPost:
		var body struct {
			Name string `json:"name"`
		}
		if err := readJSONBody(r, &body); err != nil {
			writeJSONError(w, r, err)
			return
		}
		b, err := s.store.createBucket(body.Name, publicACL(r.URL.Query().Get("predefinedAcl")))
		if err != nil {
			writeJSONError(w, r, err)
			return
		}
		writeJSON(w, r, http.StatusOK, newBucketResource(r, b))
	case http.MethodGet:
		type page struct {
			Kind  string           `json:"kind"`
			Items []bucketResource `json:"items,omitempty"`
		}
		p := page{Kind: "storage#buckets"}
		prefix := r.URL.Query().Get("prefix")
		for _, b := range s.store.bucketList() {
			if strings.HasPrefix(b.name, prefix) {
				p.Items = append(p.Items, newBucketResource(r, b))
			}
		}
		writeJSON(w, r, http.StatusOK, p)
	default:
		writeJSONError(w, r, errMethod(r.Method))
	}
}

func publicACL(acl string) bool {
	return strings.EqualFold(acl, "publicRead") || strings.EqualFold(acl, "public-read")
}

// xmlBucket answers PUT /BUCKET (create) and DELETE /BUCKET.
func (s *Server) xmlBucket(w http.ResponseWriter, r *http.Request, name string) {
	if err := s.authorizeBuckets(r); err != nil {
		writeXMLError(w, r, err)
		return
	}
	var err error
	switch r.Method {
	case http.MethodPut:
		_, err = s.store.createBucket(name, publicACL(r.Header.Get("X-Goog-Acl")))
	case http.MethodDelete:
		err = s.store.deleteBucket(name)
	}
	if err != nil {
		writeXMLError(w, r, err)
		return
	}
	w.Header().Set("Content-Length", "0")
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// xmlService answers GET / on the XML API: ListAllMyBucketsResult.
func (s *Server) xmlService(w http.ResponseWriter, r *http.Request) {
	if err := s.authorizeBuckets(r); err != nil {
		writeXMLError(w, r, err)
		return
	}
	type entry struct {
		Name         string
		CreationDate string
	}
	type result struct {
		XMLName xml.Name `xml:"ListAllMyBucketsResult"`
		XMLNS   string   `xml:"xmlns,attr"`
		Buckets []entry  `xml:"Buckets>Bucket"`
	}
	res := result{XMLNS: "http://doc.s3.amazonaws.com/2006-03-01"}
	for _, b := range s.store.bucketList() {
		res.Buckets = append(res.Buckets, entry{b.name, rfc3339(b.created)})
	}
	out, _ := xml.Marshal(res)
	body := append([]byte(xml.Header), out...)
	h := w.Header()
	h.Set("Content-Type", "application/xml; charset=UTF-8")
	h.Set("Cache-Control", "private, max-age=0")
	h.Set("Content-Length", itoa(int64(len(body))))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}
