package gcsemu

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// object is one stored generation of an object. It is immutable once
// stored, except for its lazily computed hashes.
type object struct {
	bucket, name   string
	blob           *blobstore.Blob // stored content, or nil
	synthetic      *synth.Object   // synthetic content, or nil
	size           int64
	attrs          // contentType, cacheControl, metadata, ...
	generation     int64
	metageneration int64
	created        time.Time
	updated        time.Time // of the metadata (PATCH); created if zero

	hashOnce sync.Once
	md5      [md5.Size]byte
	crc      uint32
}

// newBlobObject is an object whose bytes are blob; d, if it holds md5 and
// crc32c, saves hashing the content again.
func newBlobObject(bucket, name string, blob *blobstore.Blob, d blobstore.Digests) *object {
	o := &object{bucket: bucket, name: name, blob: blob, size: blob.Size(), metageneration: 1}
	if len(d["md5"]) == md5.Size && len(d["crc32c"]) == 4 {
		o.hashOnce.Do(func() {
			copy(o.md5[:], d["md5"])
			o.crc = binary.BigEndian.Uint32(d["crc32c"])
		})
	}
	return o
}

// content returns a fresh reader over the object's bytes.
func (o *object) content() (io.ReadSeekCloser, error) {
	if o.synthetic != nil {
		return nopCloser{o.synthetic.NewReader()}, nil
	}
	return o.blob.Open()
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

func (o *object) hashes() (md5sum [md5.Size]byte, crc uint32) {
	o.hashOnce.Do(func() {
		m := md5.New()
		c := crc32.New(castagnoli)
		if r, err := o.content(); err == nil {
			io.Copy(io.MultiWriter(m, c), r)
			r.Close()
		}
		copy(o.md5[:], m.Sum(nil))
		o.crc = c.Sum32()
	})
	return o.md5, o.crc
}

// md5Base64 and crc32cBase64 are the hashes as Cloud Storage writes them:
// base64 of the MD5 digest and of the big-endian CRC32C.
func (o *object) md5Base64() string {
	m, _ := o.hashes()
	return base64.StdEncoding.EncodeToString(m[:])
}

func (o *object) crc32cBase64() string {
	_, c := o.hashes()
	return encodeCRC(c)
}

func encodeCRC(c uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	return base64.StdEncoding.EncodeToString(b[:])
}

// etag is the XML API's entity tag: the quoted hex MD5.
func (o *object) etag() string {
	m, _ := o.hashes()
	return `"` + hex.EncodeToString(m[:]) + `"`
}

// jsonETag is the JSON API's opaque etag (derived from the generations).
func (o *object) jsonETag() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(o.generation))
	binary.BigEndian.PutUint64(b[8:], uint64(o.metageneration))
	return base64.RawStdEncoding.EncodeToString(b[:])
}

func (o *object) contentTypeOr() string {
	if o.contentType != "" {
		return o.contentType
	}
	return "application/octet-stream"
}

func (o *object) updatedOr() time.Time {
	if o.updated.IsZero() {
		return o.created
	}
	return o.updated
}

// withAttrs returns a new generation-less copy of o's metadata and content
// reference with a as its attributes (for PATCH: same bytes, next
// metageneration). The blob is shared: the caller makes it the current
// object in place of o under the store's lock.
func (o *object) withAttrs(a attrs) *object {
	md5sum, crc := o.hashes()
	c := &object{bucket: o.bucket, name: o.name, blob: o.blob, synthetic: o.synthetic, size: o.size,
		attrs: a, generation: o.generation, metageneration: o.metageneration + 1, created: o.created}
	c.hashOnce.Do(func() { c.md5, c.crc = md5sum, crc })
	return c
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }
