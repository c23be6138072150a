package s3emu

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// chunkedReader decodes an aws-chunked body (the SDKs' streaming uploads):
//
//	hex-size[;chunk-signature=sig]\r\n data \r\n ... 0[;chunk-signature=sig]\r\n
//	[trailer-name:value\r\n ...] [x-amz-trailer-signature:sig\r\n] \r\n
//
// Empty lines among the trailers are skipped and the body is read to its
// end.
//
// With a signing key it verifies each chunk's signature, chained from the
// request's seed signature, and the trailer signature.
type chunkedReader struct {
	r       *bufio.Reader
	signed  bool
	key     []byte
	amzDate string
	scope   string
	prevSig string

	left     int64 // bytes left in the current chunk
	chunkSig string
	chunkSum hash.Hash
	done     bool
	err      error
	decoded  int64

	// Trailers are the trailing headers, once Read returned io.EOF.
	Trailers http.Header
}

const maxChunkLine = 4096

// errChunk is a malformed or badly signed aws-chunked body.
func errChunk(format string, args ...any) *s3Error {
	return newErr(http.StatusBadRequest, "IncompleteBody", "aws-chunked body: "+format, args...)
}

func newChunkedReader(body io.Reader, a *auth) *chunkedReader {
	c := &chunkedReader{r: bufio.NewReaderSize(body, 64<<10), Trailers: http.Header{}, chunkSum: sha256.New()}
	if a != nil && !a.Anonymous && (a.PayloadHash == streamingSigned || a.PayloadHash == streamingSignedTr) {
		c.signed, c.key, c.amzDate, c.scope, c.prevSig = true, a.SigningKey, a.AmzDate, a.Scope, a.Signature
	}
	return c
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.nextChunk(); err != nil {
			c.err = err
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.decoded += int64(n)
	c.chunkSum.Write(p[:n])
	if err == io.EOF {
		if c.left > 0 {
			c.err = errChunk("the body ended inside a chunk")
			return n, c.err
		}
		err = nil
	}
	if err != nil {
		c.err = err
		return n, err
	}
	if c.left == 0 {
		if err := c.endChunk(); err != nil {
			c.err = err
			return n, err
		}
	}
	return n, nil
}

func (c *chunkedReader) line() (string, error) {
	l, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(l) > maxChunkLine {
		return "", errChunk("line too long")
	}
	if err == io.EOF {
		if len(l) == 0 {
			return "", io.EOF
		}
		return "", errChunk("the body ended inside a chunk header")
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(l), "\n"), "\r"), nil
}

// nextChunk reads a chunk header; on the last (empty) chunk it reads the
// trailers.
func (c *chunkedReader) nextChunk() error {
	l, err := c.line()
	if err == io.EOF {
		return errChunk("the body ended before the final chunk")
	}
	if err != nil {
		return err
	}
	sizeHex, ext, _ := strings.Cut(l, ";")
	size, perr := strconv.ParseInt(strings.TrimSpace(sizeHex), 16, 64)
	if perr != nil || size < 0 || len(sizeHex) > 16 {
		return errChunk("bad chunk size %q", sizeHex)
	}
	c.chunkSig = ""
	if ext != "" {
		k, v, _ := strings.Cut(ext, "=")
		if k == "chunk-signature" {
			c.chunkSig = v
		}
	}
	if c.signed && c.chunkSig == "" {
		return errChunk("chunk without chunk-signature in a signed streaming upload")
	}
	c.chunkSum.Reset()
	c.left = size
	if size == 0 {
		if err := c.verifyChunk(); err != nil {
			return err
		}
		c.done = true
		return c.readTrailers()
	}
	return nil
}

// endChunk checks the CRLF after a chunk's data and its signature.
func (c *chunkedReader) endChunk() error {
	var crlf [2]byte
	if _, err := io.ReadFull(c.r, crlf[:]); err != nil || crlf != [2]byte{'\r', '\n'} {
		return errChunk("chunk data not followed by CRLF")
	}
	return c.verifyChunk()
}

func (c *chunkedReader) verifyChunk() error {
	if !c.signed {
		return nil
	}
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.amzDate + "\n" + c.scope + "\n" + c.prevSig + "\n" + emptySHA256 + "\n" + hex.EncodeToString(c.chunkSum.Sum(nil))
	want := hex.EncodeToString(hmacSHA256(c.key, sts))
	if want != c.chunkSig {
		return newErr(http.StatusForbidden, "SignatureDoesNotMatch", "The chunk signature we calculated does not match the signature you provided (chunk ending at decoded byte %d).", c.decoded).
			with("StringToSign", sts).with("SignatureProvided", c.chunkSig)
	}
	c.prevSig = want
	return nil
}

// readTrailers reads trailing headers up to the empty line (or the end of
// the body) and verifies the trailer signature if the upload is signed.
func (c *chunkedReader) readTrailers() error {
	var signed bytes.Buffer
	trailerSig := ""
	// Read to the end of the body: the SDKs end trailers with one empty
	// line, minio-go puts one between the trailers and their signature.
	for {
		l, err := c.line()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return errChunk("malformed trailer %q", l)
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if k == "x-amz-trailer-signature" {
			trailerSig = v
			continue
		}
		c.Trailers.Add(k, v)
		signed.WriteString(k + ":" + v + "\n")
	}
	if c.signed && len(c.Trailers) > 0 {
		if trailerSig == "" {
			return errChunk("trailers without x-amz-trailer-signature in a signed streaming upload")
		}
		sum := sha256.Sum256(signed.Bytes())
		sts := "AWS4-HMAC-SHA256-TRAILER\n" + c.amzDate + "\n" + c.scope + "\n" + c.prevSig + "\n" + hex.EncodeToString(sum[:])
		if want := hex.EncodeToString(hmacSHA256(c.key, sts)); want != trailerSig {
			return newErr(http.StatusForbidden, "SignatureDoesNotMatch", "The trailer signature we calculated does not match the signature you provided.").
				with("StringToSign", sts).with("SignatureProvided", trailerSig)
		}
	}
	return nil
}
