package s3emu

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// copySource resolves x-amz-copy-source ("BUCKET/KEY" or "/BUCKET/KEY",
// URL-encoded, optionally "?versionId=null") to the source object, checked
// against the x-amz-copy-source-if-* conditions, and opens it.
func (q *request) copySource(src string) (string, *object, io.ReadSeekCloser, *s3Error) {
	src, version, _ := strings.Cut(src, "?")
	if version != "" && version != "versionId=null" {
		return "", nil, nil, errNotImplemented("x-amz-copy-source with a versionId (versioning)")
	}
	dec, err := url.PathUnescape(strings.TrimPrefix(src, "/"))
	bkt, key, ok := strings.Cut(dec, "/")
	if err != nil || !ok || bkt == "" || key == "" {
		return "", nil, nil, newErr(http.StatusBadRequest, "InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey").with("ArgumentName", "x-amz-copy-source").with("ArgumentValue", src)
	}
	if exists, anon := q.s.store.bucketInfo(bkt); exists && q.auth.Anonymous && !anon {
		return "", nil, nil, errAccessDenied()
	}
	o, body, ok, err := q.s.store.open(bkt, key)
	switch {
	case !ok:
		return "", nil, nil, errNoSuchBucket(bkt)
	case o == nil:
		return "", nil, nil, errNoSuchKey(key)
	case err != nil:
		return "", nil, nil, internalError(err)
	}
	if e := copySourceConditions(q.r.Header, o); e != nil {
		body.Close()
		return "", nil, nil, e
	}
	return bkt, o, body, nil
}

// copySourceConditions checks x-amz-copy-source-if-match, -if-none-match,
// -if-unmodified-since and -if-modified-since as S3 does (412).
func copySourceConditions(h http.Header, o *object) *s3Error {
	im, inm := h.Get("X-Amz-Copy-Source-If-Match"), h.Get("X-Amz-Copy-Source-If-None-Match")
	if im != "" && !etagListMatches(im, o.ETag) {
		return errPrecondition("x-amz-copy-source-If-Match")
	}
	if inm != "" && etagListMatches(inm, o.ETag) {
		return errPrecondition("x-amz-copy-source-If-None-Match")
	}
	if v := h.Get("X-Amz-Copy-Source-If-Unmodified-Since"); v != "" && im == "" {
		if t, err := http.ParseTime(v); err == nil && o.Modified.Truncate(time.Second).After(t) {
			return errPrecondition("x-amz-copy-source-If-Unmodified-Since")
		}
	}
	if v := h.Get("X-Amz-Copy-Source-If-Modified-Since"); v != "" && inm == "" {
		if t, err := http.ParseTime(v); err == nil && !o.Modified.Truncate(time.Second).After(t) {
			return errPrecondition("x-amz-copy-source-If-Modified-Since")
		}
	}
	return nil
}

// copySourceBlob copies a source object, or the byte range rng of it
// ("bytes=FIRST-LAST", for UploadPartCopy), into a new blob with its MD5
// and the named checksum.
func (q *request) copySourceBlob(src, rng, alg string) (*blobstore.Blob, blobstore.Digests, *s3Error) {
	_, o, body, e := q.copySource(src)
	if e != nil {
		return nil, nil, e
	}
	defer body.Close()
	var r io.Reader = body
	if rng != "" {
		first, last, ok := parseCopyRange(rng)
		if !ok {
			return nil, nil, newErr(http.StatusBadRequest, "InvalidArgument", "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy").with("ArgumentName", "x-amz-copy-source-range").with("ArgumentValue", rng)
		}
		if last >= o.Size {
			return nil, nil, newErr(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable").with("RangeRequested", rng).with("ActualObjectSize", strconv.FormatInt(o.Size, 10))
		}
		if _, err := body.Seek(first, io.SeekStart); err != nil {
			return nil, nil, internalError(err)
		}
		r = io.LimitReader(body, last-first+1)
	}
	var digests []string
	if alg != "" {
		digests = []string{alg}
	}
	w, err := q.s.store.blobs.Create(digests...)
	if err != nil {
		return nil, nil, internalError(err)
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Abort()
		return nil, nil, storeError(err)
	}
	d := w.Digests()
	blob, err := w.Commit()
	if err != nil {
		return nil, nil, storeError(err)
	}
	return blob, d, nil
}

func parseCopyRange(rng string) (first, last int64, ok bool) {
	spec, ok := strings.CutPrefix(rng, "bytes=")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(spec, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first {
		return 0, 0, false
	}
	return first, last, true
}

// copyObject answers CopyObject: the source's bytes under the target key,
// with the source's metadata (x-amz-metadata-directive COPY, the default)
// or the request's (REPLACE).
func (q *request) copyObject() *s3Error {
	h := q.r.Header
	directive := strings.ToUpper(h.Get("X-Amz-Metadata-Directive"))
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return newErr(http.StatusBadRequest, "InvalidArgument", "Unknown metadata directive.").with("ArgumentName", "x-amz-metadata-directive").with("ArgumentValue", directive)
	}
	check, e := writeConditions(h)
	if e != nil {
		return e
	}
	srcBucket, src, body, e := q.copySource(h.Get("X-Amz-Copy-Source"))
	if e != nil {
		return e
	}
	body.Close()
	if srcBucket == q.target.Bucket && src.Key == q.target.Key && directive != "REPLACE" {
		return newErr(http.StatusBadRequest, "InvalidRequest", "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	o := &object{Key: q.target.Key, Size: src.Size, ETag: src.ETag, Modified: q.s.now().UTC().Truncate(time.Second),
		Header: src.Header, Checksums: src.Checksums, ChecksumType: src.ChecksumType}
	if directive == "REPLACE" {
		o.Header = requestObjectHeader(h)
	}
	plainETag := !strings.Contains(src.ETag, "-")
	if src.blob != nil && plainETag {
		// The same bytes: a hard link (disk) or the same immutable bytes.
		blob, err := q.s.store.blobs.Copy(src.blob)
		if err != nil {
			return storeError(err)
		}
		o.blob = blob
	} else {
		var alg string
		for a := range src.Checksums {
			alg = a
		}
		blob, d, e := q.copySourceBlob(h.Get("X-Amz-Copy-Source"), "", alg)
		if e != nil {
			return e
		}
		o.blob, o.Size, o.ETag = blob, blob.Size(), `"`+d.Hex("md5")+`"`
		if alg != "" {
			// A composite checksum describes parts the copy does not have.
			o.Checksums, o.ChecksumType = map[string]string{alg: d.Base64(alg)}, "FULL_OBJECT"
		}
	}
	if err := q.s.store.put(q.target.Bucket, o, check); err != nil {
		return asS3Error(err)
	}
	type result struct {
		XMLName      xml.Name `xml:"CopyObjectResult"`
		XMLNS        string   `xml:"xmlns,attr"`
		LastModified string
		ETag         string
	}
	setChecksumHeaders(q.w.Header(), o)
	writeXML(q.w, q.r, result{XMLNS: s3Namespace, LastModified: xmlTime(o.Modified), ETag: o.ETag})
	return nil
}
