package s3emu

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// readBody reads a request body whole, decoding aws-chunked encoding, and
// checks it against x-amz-content-sha256, x-amz-decoded-content-length,
// Content-MD5 and any x-amz-checksum-* header or trailer.
func (q *request) readBody(limit int64) ([]byte, *s3Error) {
	r := q.r
	if r.Body == nil {
		return nil, nil
	}
	var src io.Reader = r.Body
	var chunked *chunkedReader
	declared := q.auth.PayloadHash
	if strings.HasPrefix(declared, "STREAMING-") {
		chunked = newChunkedReader(r.Body, q.auth)
		src = chunked
	}
	sum := sha256.New()
	var buf bytes.Buffer
	n, err := io.Copy(io.MultiWriter(&buf, sum), io.LimitReader(src, limit+1))
	if err != nil {
		var se *s3Error
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, newErr(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header: %v", err)
	}
	if n > limit {
		return nil, newErr(http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size.")
	}
	data := buf.Bytes()
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
	if isHexSHA256(declared) {
		if got := hex.EncodeToString(sum.Sum(nil)); got != strings.ToLower(declared) {
			return nil, newErr(http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.").
				with("ClientComputedContentSHA256", declared).with("S3ComputedContentSHA256", got)
		}
	}
	if e := checkMD5(r.Header.Get("Content-MD5"), md5ETag(data)); e != nil {
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
	if e := checkChecksums(checks, data); e != nil {
		return nil, e
	}
	return data, nil
}

// checksums are the x-amz-checksum-* algorithms verified.
var checksums = map[string]func() hash.Hash{
	"crc32":  func() hash.Hash { return crc32.NewIEEE() },
	"crc32c": func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"sha1":   sha1.New,
	"sha256": sha256.New,
}

// checkChecksums verifies every x-amz-checksum-ALG value (base64 of the
// digest) in h against data; crc64nvme is accepted unverified.
func checkChecksums(h http.Header, data []byte) *s3Error {
	for alg, newHash := range checksums {
		v := h.Get("X-Amz-Checksum-" + alg)
		if v == "" {
			continue
		}
		hh := newHash()
		hh.Write(data)
		got := base64.StdEncoding.EncodeToString(hh.Sum(nil))
		if got != v {
			return newErr(http.StatusBadRequest, "BadDigest", "The %s you specified did not match the calculated checksum.", strings.ToUpper(alg)).
				with("ExpectedChecksum", v).with("CalculatedChecksum", got)
		}
	}
	return nil
}
