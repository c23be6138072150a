package s3emu

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

// checksumAlgs are the x-amz-checksum-* algorithms, lower case, as
// blobstore names their digests.
var checksumAlgs = []string{"crc32", "crc32c", "crc64nvme", "sha1", "sha256"}

// received is a request body stored as a blob, with its digests.
type received struct {
	blob    *blobstore.Blob
	digests blobstore.Digests
	// checksums are the x-amz-checksum-* values the client sent (header
	// or trailer), verified, by algorithm.
	checksums map[string]string
}

// receive streams a request body into st, decoding aws-chunked encoding,
// with the upload read timeout between bytes, and checks it against
// x-amz-content-sha256, x-amz-decoded-content-length, Content-MD5 and any
// x-amz-checksum-* header or trailer. Nothing is kept unless every check
// passes.
func (q *request) receive(st *blobstore.Store, limit int64) (*received, *s3Error) {
	declared := q.auth.PayloadHash
	algs := q.checksumAlgorithms()
	digests := append([]string(nil), algs...)
	if isHexSHA256(declared) && !containsStr(digests, "sha256") {
		digests = append(digests, "sha256")
	}
	w, err := st.Create(digests...)
	if err != nil {
		return nil, internalError(err)
	}
	rec, e := q.copyBody(w, limit, declared, algs)
	if e != nil {
		w.Abort()
		return nil, e
	}
	if rec.blob, err = w.Commit(); err != nil {
		return nil, storeError(err)
	}
	return rec, nil
}

func (q *request) copyBody(w *blobstore.Writer, limit int64, declared string, algs []string) (*received, *s3Error) {
	r := q.r
	var src io.Reader = http.NoBody
	if r.Body != nil {
		tr := blobstore.NewTimeoutReader(r.Body, q.s.uploadTimeout)
		defer tr.Close()
		src = tr
	}
	var chunked *chunkedReader
	if strings.HasPrefix(declared, "STREAMING-") {
		chunked = newChunkedReader(src, q.auth)
		src = chunked
	}
	n, err := io.Copy(w, io.LimitReader(src, limit+1))
	if err != nil {
		var se *s3Error
		switch {
		case errors.As(err, &se):
			return nil, se
		case errors.Is(err, blobstore.ErrReadTimeout):
			// As S3 answers an upload that stops sending; the connection
			// is closed, since the rest of the body may still come.
			q.w.Header().Set("Connection", "close")
			return nil, newErr(http.StatusBadRequest, "RequestTimeout", "Your socket connection to the server was not read from or written to within the timeout period: %v", err)
		case errors.Is(err, blobstore.ErrFull):
			blobstore.DrainRefused(src)
			return nil, storeError(err)
		}
		return nil, newErr(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header: %v", err)
	}
	if n > limit {
		return nil, newErr(http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size (%d bytes).", limit).with("MaxSizeAllowed", strconv.FormatInt(limit, 10))
	}
	if chunked != nil {
		if dl := r.Header.Get("X-Amz-Decoded-Content-Length"); dl != "" {
			want, perr := strconv.ParseInt(dl, 10, 64)
			if perr != nil || want != n {
				return nil, newErr(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the x-amz-decoded-content-length HTTP header (%s; the decoded body has %d)", dl, n)
			}
		}
	} else if r.ContentLength >= 0 && n != r.ContentLength {
		return nil, newErr(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header")
	}
	d := w.Digests()
	if isHexSHA256(declared) {
		if got := d.Hex("sha256"); got != strings.ToLower(declared) {
			return nil, newErr(http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.").
				with("ClientComputedContentSHA256", declared).with("S3ComputedContentSHA256", got)
		}
	}
	if e := checkMD5(r.Header.Get("Content-MD5"), `"`+d.Hex("md5")+`"`); e != nil {
		return nil, e
	}
	checks := http.Header{}
	for k, v := range r.Header {
		checks[k] = v
	}
	if chunked != nil {
		for k, v := range chunked.Trailers {
			checks[http.CanonicalHeaderKey(k)] = v
		}
	}
	rec := &received{digests: d, checksums: map[string]string{}}
	for _, alg := range algs {
		v := checks.Get("X-Amz-Checksum-" + alg)
		if v == "" {
			continue
		}
		if got := d.Base64(alg); got != v {
			return nil, newErr(http.StatusBadRequest, "BadDigest", "The %s you specified did not match the calculated checksum.", strings.ToUpper(alg)).
				with("ExpectedChecksum", v).with("CalculatedChecksum", got)
		}
		rec.checksums[alg] = v
	}
	return rec, nil
}

// checksumAlgorithms are the checksum algorithms a request names: in an
// x-amz-checksum-ALG header, x-amz-trailer, x-amz-checksum-algorithm or
// x-amz-sdk-checksum-algorithm.
func (q *request) checksumAlgorithms() []string {
	h := q.r.Header
	var out []string
	add := func(v string) {
		v = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(v)), "x-amz-checksum-")))
		if containsStr(checksumAlgs, v) && !containsStr(out, v) {
			out = append(out, v)
		}
	}
	for _, alg := range checksumAlgs {
		if h.Get("X-Amz-Checksum-"+alg) != "" {
			add(alg)
		}
	}
	for _, t := range strings.Split(h.Get("X-Amz-Trailer"), ",") {
		add(t)
	}
	add(h.Get("X-Amz-Checksum-Algorithm"))
	add(h.Get("X-Amz-Sdk-Checksum-Algorithm"))
	if strings.HasSuffix(q.auth.PayloadHash, "-TRAILER") && h.Get("X-Amz-Trailer") == "" {
		// A trailer may bring a checksum not named beforehand: compute
		// them all.
		return checksumAlgs
	}
	return out
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// readBody reads a small request body (XML) whole, with the same checks.
func (q *request) readBody(limit int64) ([]byte, *s3Error) {
	rec, e := q.receive(q.s.scratch, limit)
	if e != nil {
		return nil, e
	}
	defer rec.blob.Release()
	f, err := rec.blob.Open()
	if err != nil {
		return nil, internalError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, internalError(err)
	}
	return data, nil
}

func internalError(err error) *s3Error {
	return newErr(http.StatusInternalServerError, "InternalError", "We encountered an internal error: %v", err)
}

// storeError answers a failed blob write: the store's byte bound reached
// is S3's 507-like "no room" (S3 itself has no bound; the emulator says so
// plainly).
func storeError(err error) *s3Error {
	if errors.Is(err, blobstore.ErrFull) {
		return newErr(http.StatusInsufficientStorage, "InsufficientStorage", "The emulator's store has no room for this upload: %v", err)
	}
	return internalError(err)
}
