// Package synth generates synthetic, deterministic object content for test
// origins.
//
// The content of an [Object] is a pure function of its Path, Size and
// Version: no storage is needed, any size (including multi-GiB objects) can be
// served in constant memory, and generation runs at several GB/s per core.
//
// The content is offset-dependent with no short period: the object is viewed
// as a sequence of aligned little-endian 64-bit words, and word i is a
// splitmix64 mix of (seed, i), where the seed is derived from an FNV-1a hash of
// path, size and version. Serving the wrong byte range of an object, the
// wrong version, or a truncated body is therefore detectable with [Verify].
package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// Object describes a synthetic object. The zero value is a valid, empty
// object. A negative Size is treated as zero.
type Object struct {
	Path    string
	Size    int64
	Version string
}

const (
	golden uint64 = 0x9E3779B97F4A7C15 // splitmix64 increment
	mixA          = 0xBF58476D1CE4E5B9
	mixB          = 0x94D049BB133111EB
)

// mix64 is the splitmix64 output finalizer; it is a bijection on uint64.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * mixA
	z = (z ^ (z >> 27)) * mixB
	return z ^ (z >> 31)
}

// word returns the content word with index i for the given seed.
func word(seed, i uint64) uint64 {
	return mix64(seed + (i+1)*golden)
}

func (o Object) size() int64 {
	if o.Size < 0 {
		return 0
	}
	return o.Size
}

// Seed returns the 64-bit seed from which all of the object's content and
// metadata are derived. It depends on Path, Size and Version.
func (o Object) Seed() uint64 {
	// FNV-1a (64-bit), computed inline so that Seed does not allocate.
	// Strings are length-prefixed so that ("ab","c") and ("a","bc") differ.
	h := fnvBasis
	h = fnvUint64(h, uint64(len(o.Path)))
	h = fnvString(h, o.Path)
	h = fnvUint64(h, uint64(o.size()))
	h = fnvUint64(h, uint64(len(o.Version)))
	h = fnvString(h, o.Version)
	// FNV alone has weak avalanche in the high bits; finish with a mix.
	return mix64(h)
}

const (
	fnvBasis uint64 = 14695981039346656037
	fnvPrime uint64 = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// fnvUint64 hashes v as 8 little-endian bytes.
func fnvUint64(h, v uint64) uint64 {
	for range 8 {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

// ReadAt fills p with the content starting at off, with [io.ReaderAt]
// semantics: it returns 0, io.EOF if off is at or past the end, and n,
// io.EOF if fewer than len(p) bytes remain. A negative off is an error.
func (o Object) ReadAt(p []byte, off int64) (int, error) {
	return o.readAt(o.Seed(), p, off)
}

func (o Object) readAt(seed uint64, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("synth: reading %q at offset %d: negative offset", o.Path, off)
	}
	size := o.size()
	if off >= size {
		return 0, io.EOF
	}
	n := len(p)
	if rem := size - off; int64(n) > rem {
		n = int(rem)
	}
	fill(seed, p[:n], uint64(off))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fill writes the content at offset off into p; p must lie within the object.
func fill(seed uint64, p []byte, off uint64) {
	if len(p) == 0 {
		return
	}
	wi := off / 8
	// Leading partial word.
	if skip := off % 8; skip != 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], word(seed, wi))
		c := copy(p, b[skip:])
		p = p[c:]
		wi++
	}
	// Aligned middle: whole words. The loop is written with an explicit
	// running counter so that the compiler keeps it branch-light.
	g := golden
	g2, g3, g4 := g*2, g*3, g*4 // wrap mod 2^64 (non-constant arithmetic)
	z := seed + (wi+1)*golden
	for len(p) >= 32 {
		binary.LittleEndian.PutUint64(p[0:8], mix64(z))
		binary.LittleEndian.PutUint64(p[8:16], mix64(z+golden))
		binary.LittleEndian.PutUint64(p[16:24], mix64(z+g2))
		binary.LittleEndian.PutUint64(p[24:32], mix64(z+g3))
		z += g4
		p = p[32:]
	}
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, mix64(z))
		z += golden
		p = p[8:]
	}
	// Trailing partial word.
	if len(p) > 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], mix64(z))
		copy(p, b[:])
	}
}

// Bytes returns the whole content of the object. It allocates Size bytes, so
// it is meant for small objects in tests; use [Object.NewReader] or
// [Object.ReadAt] for large ones.
func (o Object) Bytes() []byte {
	b := make([]byte, o.size())
	fill(o.Seed(), b, 0)
	return b
}

// ETag returns a strong, quoted entity tag derived from the seed, e.g.
// "\"1f2e3d4c5b6a7988\"".
func (o Object) ETag() string {
	return fmt.Sprintf("\"%016x\"", mix64(o.Seed()^0x45544147))
}

const secondsPerYear = 365 * 24 * 60 * 60

// LastModified returns a deterministic modification time: 2026-01-01T00:00:00Z
// plus an offset of less than one year derived from the seed, in whole
// seconds, in UTC.
func (o Object) LastModified() time.Time {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return base.Add(time.Duration(o.Seed()%secondsPerYear) * time.Second)
}

// NewReader returns a reader over the object's content positioned at offset
// zero. It implements io.ReadSeeker and io.ReaderAt, so it can be passed to
// http.ServeContent, and io.WriterTo for efficient io.Copy.
func (o Object) NewReader() *Reader {
	return &Reader{obj: o, seed: o.Seed()}
}

// Reader is a seekable reader over an [Object]'s content. A Reader is not safe
// for concurrent use except for ReadAt, which does not use the position.
type Reader struct {
	obj  Object
	seed uint64
	pos  int64
}

var (
	_ io.ReadSeeker = (*Reader)(nil)
	_ io.ReaderAt   = (*Reader)(nil)
	_ io.WriterTo   = (*Reader)(nil)
)

// Read reads up to len(p) bytes from the current position.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		if r.pos >= r.obj.size() {
			return 0, io.EOF
		}
		return 0, nil
	}
	n, err := r.obj.readAt(r.seed, p, r.pos)
	r.pos += int64(n)
	if n > 0 && err == io.EOF {
		// Report EOF on the next call, as most readers do.
		err = nil
	}
	return n, err
}

// ReadAt implements io.ReaderAt; it does not change the position.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	return r.obj.readAt(r.seed, p, off)
}

// Seek implements io.Seeker. Seeking past the end is allowed (reads then
// return io.EOF); seeking to a negative position is an error.
func (r *Reader) Seek(offset int64, whence int) (int64, error) {
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = r.pos
	case io.SeekEnd:
		base = r.obj.size()
	default:
		return r.pos, fmt.Errorf("synth: seeking in %q: invalid whence %d", r.obj.Path, whence)
	}
	abs := base + offset
	if (offset > 0 && abs < base) || abs < 0 {
		return r.pos, fmt.Errorf("synth: seeking in %q to %d%+d: negative position", r.obj.Path, base, offset)
	}
	r.pos = abs
	return abs, nil
}

// writeToBuf is the chunk size used by WriteTo.
const writeToBuf = 64 << 10

// WriteTo writes the remaining content to w, using a single fixed-size
// buffer regardless of the object's size.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	size := r.obj.size()
	if r.pos >= size {
		return 0, nil
	}
	bufLen := int64(writeToBuf)
	if rem := size - r.pos; rem < bufLen {
		bufLen = rem
	}
	buf := make([]byte, bufLen)
	var total int64
	for r.pos < size {
		chunk := buf
		if rem := size - r.pos; rem < int64(len(chunk)) {
			chunk = chunk[:rem]
		}
		fill(r.seed, chunk, uint64(r.pos))
		n, err := w.Write(chunk)
		r.pos += int64(n)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("synth: writing %q at offset %d: %w", r.obj.Path, r.pos, err)
		}
		if n != len(chunk) {
			return total, fmt.Errorf("synth: writing %q at offset %d: %w", r.obj.Path, r.pos, io.ErrShortWrite)
		}
	}
	return total, nil
}

// MismatchError is returned by [Verify] when data differs from the expected
// content.
type MismatchError struct {
	Path   string
	Offset int64 // absolute offset of the first differing byte
	Got    byte
	Want   byte
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("synth: content of %q differs at offset %d: got 0x%02x, want 0x%02x", e.Path, e.Offset, e.Got, e.Want)
}

// Verify reports whether p equals the object's content at offset off. It
// returns nil on a match, a *[MismatchError] naming the first differing
// absolute offset on a mismatch, and an error if the range [off, off+len(p))
// does not lie within the object. It runs in constant memory.
func Verify(o Object, off int64, p []byte) error {
	size := o.size()
	if off < 0 {
		return fmt.Errorf("synth: verifying %q at offset %d: negative offset", o.Path, off)
	}
	if off > size || int64(len(p)) > size-off {
		return fmt.Errorf("synth: verifying %q: range [%d, %d) extends past size %d", o.Path, off, off+int64(len(p)), size)
	}
	seed := o.Seed()
	var buf [4096]byte
	for done := 0; done < len(p); {
		chunk := buf[:min(len(buf), len(p)-done)]
		fill(seed, chunk, uint64(off)+uint64(done))
		got := p[done : done+len(chunk)]
		if string(got) != string(chunk) {
			for i := range chunk {
				if got[i] != chunk[i] {
					return &MismatchError{Path: o.Path, Offset: off + int64(done+i), Got: got[i], Want: chunk[i]}
				}
			}
		}
		done += len(chunk)
	}
	return nil
}
