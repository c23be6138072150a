package s3emu

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
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
	o, ok := q.s.store.get(q.target.Bucket, q.target.Key)
	if !ok {
		return errNoSuchBucket(q.target.Bucket)
	}
	if o == nil {
		return errNoSuchKey(q.target.Key)
	}
	h := q.w.Header()
	for k, v := range o.Header {
		h[k] = v
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "binary/octet-stream")
	}
	h.Set("ETag", o.ETag)
	h.Set("Last-Modified", o.Modified.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	if im := q.r.Header.Get("If-Match"); im != "" && !etagListMatches(im, o.ETag) {
		return newErr(http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold").with("Condition", "If-Match")
	}
	if e := checkRange(q.r.Header.Get("Range"), o.Size); e != nil && q.r.Header.Get("If-Range") == "" {
		return e
	}
	body, err := o.open()
	if err != nil {
		return newErr(http.StatusInternalServerError, "InternalError", "%v", err)
	}
	defer body.Close()
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

// maxPutSize bounds a single PUT (it is held in memory).
const maxPutSize = 5 << 30

// putObject stores an object once its body has been read whole and checked
// against every digest the request declares.
func (q *request) putObject() *s3Error {
	r := q.r
	if strings.HasPrefix(q.auth.PayloadHash, "STREAMING-") && r.Header.Get("X-Amz-Decoded-Content-Length") == "" {
		return newErr(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header (x-amz-decoded-content-length for aws-chunked uploads).")
	}
	if r.ContentLength < 0 && !strings.HasPrefix(q.auth.PayloadHash, "STREAMING-") && len(r.TransferEncoding) == 0 {
		return newErr(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header.")
	}
	data, e := q.readBody(maxPutSize)
	if e != nil {
		return e
	}
	o := &object{Key: q.target.Key, Size: int64(len(data)), ETag: md5ETag(data), Modified: q.s.now().UTC().Truncate(time.Second), Header: http.Header{}}
	for _, k := range storedHeaders {
		if v := r.Header.Get(k); v != "" {
			o.Header.Set(k, v)
		}
	}
	if ce := o.Header.Get("Content-Encoding"); ce != "" {
		var kept []string
		for _, c := range strings.Split(ce, ",") {
			if c = strings.TrimSpace(c); c != "" && c != "aws-chunked" {
				kept = append(kept, c)
			}
		}
		if o.Header.Del("Content-Encoding"); len(kept) > 0 {
			o.Header.Set("Content-Encoding", strings.Join(kept, ","))
		}
	}
	for k, v := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-meta-") {
			o.Header[k] = v
		}
	}
	if err := q.s.store.put(q.target.Bucket, o, data); err != nil {
		return newErr(http.StatusInternalServerError, "InternalError", "%v", err)
	}
	q.w.Header().Set("ETag", o.ETag)
	q.w.Header().Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusOK)
	return nil
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
