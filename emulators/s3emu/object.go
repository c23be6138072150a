package s3emu

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// storedHeaders are the request headers kept with an object and sent back.
var storedHeaders = []string{"Content-Type", "Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"}

func md5ETag(data []byte) string {
	sum := md5.Sum(data)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// getObject answers GET and HEAD of an object through http.ServeContent
// (ranges and conditionals), with S3's XML for InvalidRange and
// PreconditionFailed.
func (q *request) getObject() *s3Error {
	o, body, ok, err := q.s.store.open(q.target.Bucket, q.target.Key)
	switch {
	case !ok:
		return errNoSuchBucket(q.target.Bucket)
	case o == nil:
		return errNoSuchKey(q.target.Key)
	case err != nil:
		return internalError(err)
	}
	defer body.Close()
	h := q.w.Header()
	for k, v := range o.Header {
		h[k] = v
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "binary/octet-stream")
	}
	applyResponseOverrides(h, q.r.URL.Query())
	h.Set("ETag", o.ETag)
	h.Set("Last-Modified", o.Modified.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	if strings.EqualFold(q.r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") && q.r.Header.Get("Range") == "" {
		setChecksumHeaders(h, o)
	}
	if im := q.r.Header.Get("If-Match"); im != "" && !etagListMatches(im, o.ETag) {
		return errPrecondition("If-Match")
	}
	if ius := q.r.Header.Get("If-Unmodified-Since"); ius != "" && q.r.Header.Get("If-Match") == "" {
		// http.ServeContent would answer 412 with an empty body.
		if t, err := http.ParseTime(ius); err == nil && o.Modified.Truncate(time.Second).After(t) {
			return errPrecondition("If-Unmodified-Since")
		}
	}
	if e := checkRange(q.r.Header.Get("Range"), o.Size); e != nil && q.r.Header.Get("If-Range") == "" {
		return e
	}
	http.ServeContent(q.w, q.r, "", o.Modified, body)
	return nil
}

func etagListMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag || `"`+t+`"` == etag {
			return true
		}
	}
	return false
}

// checkRange returns InvalidRange for a single byte range that starts at
// or past the end of the object (http.ServeContent would answer 416 with a
// plain-text body).
func checkRange(rng string, size int64) *s3Error {
	spec, ok := strings.CutPrefix(rng, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return nil
	}
	invalid := func() *s3Error {
		return newErr(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable").
			with("RangeRequested", rng).with("ActualObjectSize", strconv.FormatInt(size, 10))
	}
	if first == "" {
		if n, err := strconv.ParseInt(last, 10, 64); err == nil && (n == 0 || size == 0) {
			return invalid()
		}
		return nil
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err == nil && start >= size {
		return invalid()
	}
	return nil
}

// maxPutSize bounds a single PUT, as S3 does (5 GiB).
const maxPutSize = 5 << 30

// putObject streams an object into the store, checks it against every
// digest the request declares, and stores it if the request's conditions
// (If-None-Match: *, If-Match) hold for the current object.
func (q *request) putObject() *s3Error {
	r := q.r
	if strings.HasPrefix(q.auth.PayloadHash, "STREAMING-") && r.Header.Get("X-Amz-Decoded-Content-Length") == "" {
		return newErr(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header (x-amz-decoded-content-length for aws-chunked uploads).")
	}
	if r.ContentLength < 0 && !strings.HasPrefix(q.auth.PayloadHash, "STREAMING-") && len(r.TransferEncoding) == 0 {
		return newErr(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header.")
	}
	check, e := writeConditions(r.Header)
	if e != nil {
		return e
	}
	rec, e := q.receive(q.s.store.blobs, maxPutSize)
	if e != nil {
		return e
	}
	o := &object{Key: q.target.Key, Size: rec.blob.Size(), ETag: `"` + rec.digests.Hex("md5") + `"`,
		Modified: q.s.now().UTC().Truncate(time.Second), Header: requestObjectHeader(r.Header), blob: rec.blob}
	if len(rec.checksums) > 0 {
		o.Checksums, o.ChecksumType = rec.checksums, "FULL_OBJECT"
	}
	if err := q.s.store.put(q.target.Bucket, o, check); err != nil {
		return asS3Error(err)
	}
	h := q.w.Header()
	h.Set("ETag", o.ETag)
	setChecksumHeaders(h, o)
	h.Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// requestObjectHeader is what a write request sets on the object: the
// stored headers (less aws-chunked in Content-Encoding) and the user
// metadata, whose names S3 keeps in lower case.
func requestObjectHeader(rh http.Header) http.Header {
	h := http.Header{}
	for _, k := range storedHeaders {
		if v := rh.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	if ce := h.Get("Content-Encoding"); ce != "" {
		var kept []string
		for _, c := range strings.Split(ce, ",") {
			if c = strings.TrimSpace(c); c != "" && c != "aws-chunked" {
				kept = append(kept, c)
			}
		}
		if h.Del("Content-Encoding"); len(kept) > 0 {
			h.Set("Content-Encoding", strings.Join(kept, ","))
		}
	}
	for k, v := range rh {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-meta-") {
			h[lk] = v
		}
	}
	return h
}

// setChecksumHeaders sets x-amz-checksum-ALG and x-amz-checksum-type.
func setChecksumHeaders(h http.Header, o *object) {
	for alg, v := range o.Checksums {
		h.Set("X-Amz-Checksum-"+strings.ToUpper(alg), v)
	}
	if o.ChecksumType != "" {
		h.Set("X-Amz-Checksum-Type", o.ChecksumType)
	}
}

// writeConditions parses a write's If-None-Match (only "*") and If-Match
// into a check of the current object, answered as S3 answers them: 412
// PreconditionFailed, or 404 NoSuchKey for If-Match on a missing key.
func writeConditions(h http.Header) (func(old *object) *s3Error, *s3Error) {
	inm, im := h.Get("If-None-Match"), h.Get("If-Match")
	if inm != "" && strings.TrimSpace(inm) != "*" {
		return nil, newErr(http.StatusNotImplemented, "NotImplemented", "A header you provided implies functionality that is not implemented: If-None-Match on a write takes only \"*\"").with("Header", "If-None-Match")
	}
	if inm == "" && im == "" {
		return nil, nil
	}
	return func(old *object) *s3Error {
		if inm != "" && old != nil {
			return errPrecondition("If-None-Match")
		}
		if im != "" {
			if old == nil {
				return errNoSuchKey("")
			}
			if !etagListMatches(im, old.ETag) {
				return errPrecondition("If-Match")
			}
		}
		return nil
	}, nil
}

func errPrecondition(cond string) *s3Error {
	return newErr(http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold").with("Condition", cond)
}

// asS3Error is err as S3's answer (an *s3Error as it is, else 500 or 507).
func asS3Error(err error) *s3Error {
	var se *s3Error
	if errors.As(err, &se) {
		return se
	}
	return storeError(err)
}

// checkMD5 verifies a Content-MD5 header against the content's ETag.
func checkMD5(header, etag string) *s3Error {
	if header == "" {
		return nil
	}
	want, err := base64.StdEncoding.DecodeString(header)
	if err != nil || len(want) != md5.Size {
		return newErr(http.StatusBadRequest, "InvalidDigest", "The Content-MD5 you specified was invalid.").with("Content-MD5", header)
	}
	got := strings.Trim(etag, `"`)
	if hex.EncodeToString(want) != got {
		raw, _ := hex.DecodeString(got)
		return newErr(http.StatusBadRequest, "BadDigest", "The Content-MD5 you specified did not match what we received.").
			with("ExpectedDigest", header).with("CalculatedDigest", base64.StdEncoding.EncodeToString(raw))
	}
	return nil
}

// responseOverrides are GetObject's response-* query parameters and the
// headers they set.
var responseOverrides = []struct{ param, header string }{
	{"response-content-type", "Content-Type"},
	{"response-content-language", "Content-Language"},
	{"response-expires", "Expires"},
	{"response-cache-control", "Cache-Control"},
	{"response-content-disposition", "Content-Disposition"},
	{"response-content-encoding", "Content-Encoding"},
}

// checkResponseOverrides refuses response-* parameters on an anonymous
// GET, as S3 does.
func (q *request) checkResponseOverrides(query map[string][]string) *s3Error {
	if !q.auth.Anonymous {
		return nil
	}
	for _, o := range responseOverrides {
		if _, ok := query[o.param]; ok {
			return newErr(http.StatusBadRequest, "InvalidRequest", "Request specific response headers cannot be used for anonymous GET requests.")
		}
	}
	return nil
}

// applyResponseOverrides sets the headers a GET's (or HEAD's)
// response-* parameters ask for.
func applyResponseOverrides(h http.Header, query map[string][]string) {
	for _, o := range responseOverrides {
		if v, ok := query[o.param]; ok && len(v) > 0 {
			h.Set(o.header, v[0])
		}
	}
}
