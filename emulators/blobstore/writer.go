package blobstore

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// crc64NVMEPoly is the CRC-64/NVME polynomial in the reversed form
// hash/crc64 takes (the checksum S3 calls CRC64NVME).
const crc64NVMEPoly = 0x9a6c9329ac4bc9b5

var (
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
	nvmeTable   = crc64.MakeTable(crc64NVMEPoly)
	digestNames = map[string]func() hash.Hash{
		"md5":       md5.New,
		"crc32":     func() hash.Hash { return crc32.NewIEEE() },
		"crc32c":    func() hash.Hash { return crc32.New(castagnoli) },
		"crc64nvme": func() hash.Hash { return crc64.New(nvmeTable) },
		"sha1":      sha1.New,
		"sha256":    sha256.New,
	}
)

// NewHash returns a fresh hash for a digest name ("md5", "crc32", "crc32c",
// "crc64nvme", "sha1", "sha256"), or nil for an unknown name.
func NewHash(name string) hash.Hash {
	if f := digestNames[name]; f != nil {
		return f()
	}
	return nil
}

// Digests are a blob's digests by name (see [NewHash]), big-endian bytes.
type Digests map[string][]byte

// Base64 is the digest as S3's x-amz-checksum-* and Cloud Storage's
// x-goog-hash write it, or "" if it was not computed.
func (d Digests) Base64(name string) string {
	if v, ok := d[name]; ok {
		return base64.StdEncoding.EncodeToString(v)
	}
	return ""
}

// Hex is the digest in lowercase hex, or "".
func (d Digests) Hex(name string) string {
	if v, ok := d[name]; ok {
		return hex.EncodeToString(v)
	}
	return ""
}

// Writer writes one new blob. It is not safe for concurrent use.
type Writer struct {
	s      *Store
	file   *os.File
	buf    bytes.Buffer
	n      int64
	hashes map[string]hash.Hash
	mw     io.Writer
	err    error
	done   bool
	// truncated is set once bytes were taken back: the digests no longer
	// describe the content.
	truncated bool
}

// Create starts a blob; MD5 is always computed, and each named digest too.
func (s *Store) Create(digests ...string) (*Writer, error) {
	w := &Writer{s: s, hashes: map[string]hash.Hash{"md5": md5.New()}}
	for _, d := range digests {
		h := NewHash(d)
		if h == nil {
			return nil, fmt.Errorf("blobstore: unknown digest %q", d)
		}
		w.hashes[d] = h
	}
	ws := make([]io.Writer, 0, len(w.hashes))
	names := make([]string, 0, len(w.hashes))
	for n := range w.hashes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ws = append(ws, w.hashes[n])
	}
	w.mw = io.MultiWriter(ws...)
	if s.dir != "" {
		f, err := os.Create(filepath.Join(s.dir, "blobs", s.newName()+".tmp"))
		if err != nil {
			return nil, fmt.Errorf("blobstore: creating blob file: %w", err)
		}
		w.file = f
	}
	return w, nil
}

// Write stores p, failing with ErrFull past the store's bound.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if err := w.s.reserve(int64(len(p))); err != nil {
		w.err = err
		return 0, err
	}
	w.n += int64(len(p))
	w.mw.Write(p)
	if w.file != nil {
		if _, err := w.file.Write(p); err != nil {
			w.err = fmt.Errorf("blobstore: writing blob file: %w", err)
			return 0, w.err
		}
		return len(p), nil
	}
	return w.buf.Write(p)
}

// Size is the number of bytes written so far.
func (w *Writer) Size() int64 { return w.n }

// Digests returns the digests of the bytes written so far, or nil after
// a Truncate (they would describe bytes that were taken back).
func (w *Writer) Digests() Digests {
	if w.truncated {
		return nil
	}
	d := make(Digests, len(w.hashes))
	for n, h := range w.hashes {
		d[n] = h.Sum(nil)
	}
	return d
}

// Truncate takes back the bytes written after the first n (a resumable
// upload's chunk that ended short); the digests are no longer computed.
func (w *Writer) Truncate(n int64) error {
	if n < 0 || n > w.n {
		return fmt.Errorf("blobstore: truncate to %d of %d bytes", n, w.n)
	}
	if n == w.n {
		return nil
	}
	if w.file != nil {
		if err := w.file.Truncate(n); err != nil {
			return fmt.Errorf("blobstore: truncating blob file: %w", err)
		}
		if _, err := w.file.Seek(n, io.SeekStart); err != nil {
			return fmt.Errorf("blobstore: truncating blob file: %w", err)
		}
	} else {
		w.buf.Truncate(int(n))
	}
	w.s.unreserve(w.n - n)
	w.n = n
	w.truncated = true
	w.err = nil
	return nil
}

// Abort drops what was written.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.s.unreserve(w.n)
	if w.file != nil {
		w.file.Close()
		os.Remove(w.file.Name())
	}
	w.buf = bytes.Buffer{}
}

// Commit makes the written bytes a blob.
func (w *Writer) Commit() (*Blob, error) {
	if w.done {
		return nil, errors.New("blobstore: writer already finished")
	}
	if w.err != nil {
		w.Abort()
		return nil, w.err
	}
	w.done = true
	if w.file == nil {
		return &Blob{store: w.s, size: w.n, data: w.buf.Bytes()}, nil
	}
	tmp := w.file.Name()
	if err := w.file.Close(); err != nil {
		w.s.unreserve(w.n)
		os.Remove(tmp)
		return nil, fmt.Errorf("blobstore: closing blob file: %w", err)
	}
	final := tmp[:len(tmp)-len(".tmp")]
	if err := os.Rename(tmp, final); err != nil {
		w.s.unreserve(w.n)
		os.Remove(tmp)
		return nil, fmt.Errorf("blobstore: committing blob file: %w", err)
	}
	return &Blob{store: w.s, size: w.n, path: final}, nil
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
