// Package blobstore keeps the bucket emulators' object bytes: in memory
// (optionally bounded) or on disk under a data directory (bounded by a size
// cap), streaming in both directions so that no object is ever held whole
// in memory by the disk store.
//
// A [Blob] is immutable once committed. Object metadata is the bucket
// service's business; a blob is only bytes and a size. Uploads are written
// through a [Writer] that computes the digests the services need (MD5 and,
// on request, CRC32, CRC32C, CRC64NVME, SHA-1, SHA-256) as the bytes pass,
// and whose body source can be guarded by an idle read timeout
// ([TimeoutReader]) so that a stalled upload ends with a clear error instead
// of holding its connection.
package blobstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrFull is returned (wrapped) when a write would take the store past its
// byte bound.
var ErrFull = errors.New("blobstore: store is full")

// Config configures a store.
type Config struct {
	// Dir, if set, keeps blobs as files under it (created if needed);
	// otherwise they live in memory.
	Dir string
	// MaxBytes bounds the bytes stored (committed blobs and writes in
	// progress); 0 means no bound.
	MaxBytes int64
}

// Store holds blobs. It is safe for concurrent use.
type Store struct {
	dir string
	max int64

	mu   sync.Mutex
	used int64
	seq  atomic.Uint64
}

// New returns a store; with cfg.Dir it creates the directory.
func New(cfg Config) (*Store, error) {
	if cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("blobstore: maxBytes must not be negative, got %d", cfg.MaxBytes)
	}
	s := &Store{dir: cfg.Dir, max: cfg.MaxBytes}
	if s.dir != "" {
		if err := os.MkdirAll(filepath.Join(s.dir, "blobs"), 0o755); err != nil {
			return nil, fmt.Errorf("blobstore: creating data directory: %w", err)
		}
		// Writes interrupted by an earlier run leave temporary files.
		tmps, _ := filepath.Glob(filepath.Join(s.dir, "blobs", "*.tmp"))
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	return s, nil
}

// OnDisk reports whether blobs are files.
func (s *Store) OnDisk() bool { return s.dir != "" }

// Used is the number of bytes stored or being written.
func (s *Store) Used() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// reserve accounts for n more bytes, or fails with ErrFull.
func (s *Store) reserve(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && s.used+n > s.max {
		return fmt.Errorf("%w: %d of %d bytes used, %d more asked for", ErrFull, s.used, s.max, n)
	}
	s.used += n
	return nil
}

func (s *Store) unreserve(n int64) {
	s.mu.Lock()
	s.used -= n
	s.mu.Unlock()
}

func (s *Store) newName() string {
	return strconv.FormatUint(s.seq.Add(1), 36) + "-" + strconv.FormatInt(int64(os.Getpid()), 36) + "-" + randomSuffix()
}

// Blob is stored, immutable content.
type Blob struct {
	store *Store
	size  int64
	data  []byte // memory
	path  string // disk

	released atomic.Bool
}

// Size is the blob's length in bytes.
func (b *Blob) Size() int64 { return b.size }

// Name is the blob's file name under the data directory ("" in memory),
// what a service persists to find it again with [Store.Load].
func (b *Blob) Name() string {
	if b.path == "" {
		return ""
	}
	return filepath.Base(b.path)
}

// Open returns a reader over the blob. A disk blob stays readable through
// an open reader even after it is released.
func (b *Blob) Open() (io.ReadSeekCloser, error) {
	if b.path == "" {
		return nopCloser{bytes.NewReader(b.data)}, nil
	}
	f, err := os.Open(b.path)
	if err != nil {
		return nil, fmt.Errorf("blobstore: opening blob: %w", err)
	}
	return f, nil
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

// Release gives the blob's bytes back to the store (a disk blob's file is
// removed). Releasing twice is harmless.
func (b *Blob) Release() {
	if b == nil || b.store == nil || b.released.Swap(true) {
		return
	}
	b.store.unreserve(b.size)
	if b.path != "" {
		os.Remove(b.path)
	}
}

// Bytes stores data as a blob (for configured and small objects).
func (s *Store) Bytes(data []byte) (*Blob, error) {
	w, err := s.Create()
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		w.Abort()
		return nil, err
	}
	return w.Commit()
}

// Load finds a blob persisted by an earlier run under its [Blob.Name].
func (s *Store) Load(name string) (*Blob, error) {
	if s.dir == "" {
		return nil, errors.New("blobstore: no data directory to load from")
	}
	if name == "" || filepath.Base(name) != name {
		return nil, fmt.Errorf("blobstore: bad blob name %q", name)
	}
	p := filepath.Join(s.dir, "blobs", name)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("blobstore: loading blob: %w", err)
	}
	if err := s.reserve(fi.Size()); err != nil {
		return nil, err
	}
	return &Blob{store: s, size: fi.Size(), path: p}, nil
}

// Copy returns an independent blob with the same content (a hard link on
// disk where possible, the same immutable bytes in memory).
func (s *Store) Copy(b *Blob) (*Blob, error) {
	if err := s.reserve(b.size); err != nil {
		return nil, err
	}
	if b.path == "" {
		return &Blob{store: s, size: b.size, data: b.data}, nil
	}
	p := filepath.Join(s.dir, "blobs", s.newName())
	if err := os.Link(b.path, p); err != nil {
		s.unreserve(b.size)
		// No hard links here: stream a copy.
		w, werr := s.Create()
		if werr != nil {
			return nil, werr
		}
		r, oerr := b.Open()
		if oerr != nil {
			w.Abort()
			return nil, oerr
		}
		defer r.Close()
		if _, err := io.Copy(w, r); err != nil {
			w.Abort()
			return nil, fmt.Errorf("blobstore: copying blob: %w", err)
		}
		return w.Commit()
	}
	return &Blob{store: s, size: b.size, path: p}, nil
}

// Concat stores the content of parts, in order, as one new blob; the parts
// stay as they are. On disk, without digests, the bytes are copied file to
// file by the kernel where it can (copy_file_range) and never pass through
// the process; with digests they stream through a [Writer].
func (s *Store) Concat(parts []*Blob, digests ...string) (*Blob, Digests, error) {
	if s.dir != "" && len(digests) == 0 {
		b, err := s.concatFiles(parts)
		return b, nil, err
	}
	w, err := s.Create(digests...)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range parts {
		r, err := p.Open()
		if err != nil {
			w.Abort()
			return nil, nil, err
		}
		_, err = io.Copy(w, r)
		r.Close()
		if err != nil {
			w.Abort()
			return nil, nil, fmt.Errorf("blobstore: concatenating: %w", err)
		}
	}
	d := w.Digests()
	b, err := w.Commit()
	return b, d, err
}

func (s *Store) concatFiles(parts []*Blob) (*Blob, error) {
	var total int64
	for _, p := range parts {
		total += p.size
	}
	if err := s.reserve(total); err != nil {
		return nil, err
	}
	final := filepath.Join(s.dir, "blobs", s.newName())
	f, err := os.Create(final + ".tmp")
	if err != nil {
		s.unreserve(total)
		return nil, fmt.Errorf("blobstore: creating blob file: %w", err)
	}
	fail := func(err error) (*Blob, error) {
		f.Close()
		os.Remove(f.Name())
		s.unreserve(total)
		return nil, fmt.Errorf("blobstore: concatenating: %w", err)
	}
	for _, p := range parts {
		r, err := p.Open()
		if err != nil {
			return fail(err)
		}
		_, err = f.ReadFrom(r)
		r.Close()
		if err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return fail(err)
	}
	return &Blob{store: s, size: total, path: final}, nil
}

// Sweep removes the blob files under the data directory that keep does not
// claim: what an earlier run left unreferenced (the parts of an unfinished
// multipart upload, a resumable session). Call it at start, before any
// new blob is written.
func (s *Store) Sweep(keep func(name string) bool) error {
	if s.dir == "" {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(s.dir, "blobs"))
	if err != nil {
		return fmt.Errorf("blobstore: sweeping: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() && !keep(e.Name()) {
			os.Remove(filepath.Join(s.dir, "blobs", e.Name()))
		}
	}
	return nil
}
