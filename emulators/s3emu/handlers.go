package s3emu

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
)

const s3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// request is one request being served.
type request struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	id     string
	target target
	auth   *auth
}

func (q *request) fail(e *s3Error) {
	writeError(q.w, q.r, e, q.target.resource(), q.id)
}

// ServeHTTP authenticates and answers one S3 request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := &request{s: s, w: w, r: r, id: s.newRequestID(), target: s.address(r)}
	h := w.Header()
	h.Set("X-Amz-Request-Id", q.id)
	h.Set("X-Amz-Id-2", hostID(q.id))
	h.Set("Server", "AmazonS3")
	a, err := s.verifier.verify(r)
	if err != nil {
		journal.Annotate(r.Context(), "sigv4: "+err.Code+": "+verdictDetail(err))
		q.fail(err)
		return
	}
	if a.Anonymous {
		journal.Annotate(r.Context(), "anonymous")
	} else {
		how := ""
		if a.Presigned {
			how = ", presigned"
		}
		journal.Annotate(r.Context(), "sigv4: ok ("+a.AccessKey+how+")")
	}
	q.auth = a
	if e := q.dispatch(); e != nil {
		if a.Anonymous || e.Code != "AccessDenied" {
			journal.Annotate(r.Context(), "s3: "+e.Code)
		}
		q.fail(e)
	}
}

// verdictDetail is the journal's account of why a request was rejected:
// the message, and for a signature mismatch the canonical request the
// server computed (newlines as \n).
func verdictDetail(e *s3Error) string {
	msg := e.Message
	for _, f := range e.Extra {
		if f.Name == "CanonicalRequest" {
			msg += " canonical request: " + strings.ReplaceAll(f.Value, "\n", `\n`)
		}
	}
	return msg
}

// unimplementedSubresources are the bucket and object subresources S3 has
// and this emulator does not: each is answered 501 NotImplemented naming
// it, never a listing or the object.
var unimplementedSubresources = []string{
	"accelerate", "acl", "analytics", "attributes", "cors", "delete", "encryption", "intelligent-tiering",
	"inventory", "legal-hold", "lifecycle", "logging", "metadataTable", "metrics", "notification",
	"object-lock", "ownershipControls", "partNumber", "policy", "policyStatus", "publicAccessBlock",
	"replication", "requestPayment", "restore", "retention", "select", "session", "tagging", "torrent",
	"uploadId", "uploads", "versionId", "versioning", "versions", "website",
}

// unimplementedHeader names the first write header that asks for what the
// emulator does not do (tags, object lock, website redirects, customer or
// KMS encryption keys), or "".
func unimplementedHeader(h http.Header) string {
	for _, k := range []string{"X-Amz-Tagging", "X-Amz-Object-Lock-Mode", "X-Amz-Object-Lock-Retain-Until-Date",
		"X-Amz-Object-Lock-Legal-Hold", "X-Amz-Website-Redirect-Location", "X-Amz-Server-Side-Encryption-Customer-Algorithm",
		"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"} {
		if h.Get(k) != "" {
			return strings.ToLower(k)
		}
	}
	if v := h.Get("X-Amz-Server-Side-Encryption"); v != "" && v != "AES256" {
		return "x-amz-server-side-encryption: " + v
	}
	return ""
}

// dispatch routes a request to its operation.
func (q *request) dispatch() *s3Error {
	t, r := q.target, q.r
	query := r.URL.Query()
	if t.Bucket == "" {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return q.listBuckets()
		}
		return newErr(http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.")
	}
	exists, anonRead := q.s.store.bucketInfo(t.Bucket)
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	if t.Key == "" && r.Method == http.MethodPut && len(query) == 0 {
		if q.auth.Anonymous {
			return errAccessDenied()
		}
		return q.createBucket()
	}
	if t.Key == "" && r.Method == http.MethodPost && len(query) == 0 && strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "multipart/form-data") {
		// Browser uploads are unsigned by SigV4 headers: say what is
		// missing before any AccessDenied could hide it.
		return errNotImplemented("POST Object (browser-based upload with a POST policy)")
	}
	if !exists {
		return errNoSuchBucket(t.Bucket)
	}
	if q.auth.Anonymous && !(read && anonRead) {
		return errAccessDenied()
	}
	if handled, e := q.multipart(query); handled {
		return e
	}
	if t.Key == "" && r.Method == http.MethodPost && query.Has("delete") {
		return q.deleteObjects()
	}
	if t.Key != "" && r.Method == http.MethodGet && query.Has("tagging") {
		// Tags cannot be set here (PutObjectTagging is 501), so every
		// object's tag set is empty: the aws CLI asks before a copy.
		return q.emptyTagging()
	}
	for _, sub := range unimplementedSubresources {
		if query.Has(sub) {
			return errNotImplemented(fmt.Sprintf("?%s (%s %s)", sub, r.Method, map[bool]string{true: "bucket", false: "object"}[t.Key == ""]))
		}
	}
	if r.Method == http.MethodGet && t.Key != "" {
		if e := q.checkResponseOverrides(query); e != nil {
			return e
		}
	}
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		if h := unimplementedHeader(r.Header); h != "" {
			return errNotImplemented("the "+h+" header").with("Header", h)
		}
	}
	if t.Key == "" {
		switch {
		case r.Method == http.MethodHead:
			q.w.Header().Set("X-Amz-Bucket-Region", q.s.region)
			q.w.WriteHeader(http.StatusOK)
			return nil
		case r.Method == http.MethodGet && query.Has("location"):
			return q.location()
		case r.Method == http.MethodGet:
			return q.list(query)
		case r.Method == http.MethodDelete:
			return q.deleteBucket()
		}
		return newErr(http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.")
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return q.getObject()
	case http.MethodPut:
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			return q.copyObject()
		}
		return q.putObject()
	case http.MethodDelete:
		if err := q.s.store.remove(t.Bucket, t.Key); err != nil {
			return errNoSuchBucket(t.Bucket)
		}
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return newErr(http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource.")
}

func (q *request) createBucket() *s3Error {
	if msg := checkBucketName(q.target.Bucket); msg != "" {
		return newErr(http.StatusBadRequest, "InvalidBucketName", "The specified bucket is not valid: %s", msg).with("BucketName", q.target.Bucket)
	}
	var conf struct {
		LocationConstraint string
	}
	if q.r.ContentLength != 0 && q.r.Body != nil {
		body, err := q.readBody(1 << 20)
		if err != nil {
			return err
		}
		if len(strings.TrimSpace(string(body))) > 0 {
			if xml.Unmarshal(body, &conf) != nil {
				return newErr(http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
			}
		}
	}
	want, name := conf.LocationConstraint, conf.LocationConstraint
	if want == "" {
		want, name = "us-east-1", "unspecified"
	}
	if want != q.s.region {
		return newErr(http.StatusBadRequest, "IllegalLocationConstraintException", "The %s location constraint is incompatible for the region specific endpoint this request was sent to (%s).", name, q.s.region)
	}
	created, err := q.s.store.createBucket(q.target.Bucket)
	if err != nil {
		return newErr(http.StatusInternalServerError, "InternalError", "%v", err)
	}
	if !created && q.s.region != "us-east-1" {
		return newErr(http.StatusConflict, "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.").with("BucketName", q.target.Bucket)
	}
	q.w.Header().Set("Location", "/"+q.target.Bucket)
	q.w.Header().Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (q *request) deleteBucket() *s3Error {
	switch err := q.s.store.deleteBucket(q.target.Bucket); {
	case errors.Is(err, os.ErrNotExist):
		return errNoSuchBucket(q.target.Bucket)
	case errors.Is(err, errBucketNotEmpty):
		return newErr(http.StatusConflict, "BucketNotEmpty", "The bucket you tried to delete is not empty").with("BucketName", q.target.Bucket)
	case err != nil:
		return newErr(http.StatusInternalServerError, "InternalError", "%v", err)
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (q *request) location() *s3Error {
	type loc struct {
		XMLName xml.Name `xml:"LocationConstraint"`
		XMLNS   string   `xml:"xmlns,attr"`
		Region  string   `xml:",chardata"`
	}
	region := q.s.region
	if region == "us-east-1" {
		region = ""
	}
	writeXML(q.w, q.r, loc{XMLNS: s3Namespace, Region: region})
	return nil
}

func (q *request) listBuckets() *s3Error {
	if q.auth.Anonymous {
		return errAccessDenied()
	}
	type b struct {
		Name         string
		CreationDate string
	}
	type result struct {
		XMLName xml.Name `xml:"ListAllMyBucketsResult"`
		XMLNS   string   `xml:"xmlns,attr"`
		Owner   struct{ ID, DisplayName string }
		Buckets []b `xml:"Buckets>Bucket"`
	}
	res := result{XMLNS: s3Namespace}
	res.Owner.ID, res.Owner.DisplayName = q.auth.AccessKey, q.auth.AccessKey
	for _, e := range q.s.store.listBuckets() {
		res.Buckets = append(res.Buckets, b{e.Name, xmlTime(e.Created)})
	}
	writeXML(q.w, q.r, res)
	return nil
}

func xmlTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (q *request) emptyTagging() *s3Error {
	if o, ok := q.s.store.get(q.target.Bucket, q.target.Key); !ok {
		return errNoSuchBucket(q.target.Bucket)
	} else if o == nil {
		return errNoSuchKey(q.target.Key)
	}
	type tagging struct {
		XMLName xml.Name `xml:"Tagging"`
		XMLNS   string   `xml:"xmlns,attr"`
		TagSet  struct{} `xml:"TagSet"`
	}
	writeXML(q.w, q.r, tagging{XMLNS: s3Namespace})
	return nil
}
