package store

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/maypok86/otter/v2"
)

// An entry's file is its body, then its key, its metadata and a footer:
//
//	magic "ECSTORE1" | body length u64 | seq u64 | key length u32 |
//	meta length u32 | CRC-32C of key, meta and the footer's first 32 bytes u32 |
//	reserved u32
//
// all big-endian. The footer lets a restart re-index the entry (key and
// metadata) without a sidecar, and detect torn or foreign files. seq orders
// the commits of a key across restarts. The body itself is not checksummed.
const (
	footerSize  = 40
	footerMagic = "ECSTORE1"
	// blockSize is the unit of a Disk entry's otter weight: files occupy
	// whole blocks, and it lets an entry weigh up to 16 TiB in a uint32.
	blockSize = 4096
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Disk is a Store keeping one file per entry under a directory, bounded by
// bytes. An entry weighs its file, rounded up to 4 KiB blocks; Stats.Bytes
// is the sum of the file sizes.
//
// Layout: dir/tmp holds fills in progress, dir/data committed entries. On
// NewDisk, dir/tmp is emptied and dir/data re-indexed: every valid entry
// file is indexed again (the newest commit of a key wins; evictions bring the
// store back under its bound), anything else there is removed. One Disk at a
// time may use a directory.
//
// Evicted, deleted and replaced entries' files are unlinked by otter's
// deletion handler; a Reader that has the file open keeps reading it (on
// POSIX systems an unlinked file lives until its last descriptor closes).
// An Open that races with an eviction is a miss.
type Disk struct {
	tmpDir, dataDir string
	max             int64
	sync            bool
	cache           *otter.Cache[string, *diskEntry]
	seq             atomic.Uint64

	counters
}

// DiskOption configures NewDisk.
type DiskOption func(*Disk)

// WithSync makes Commit fsync the entry's file and directory, so that a
// committed entry survives a power loss, not only a process crash. Without
// it (the default) a commit costs no disk flush.
func WithSync() DiskOption { return func(d *Disk) { d.sync = true } }

type diskEntry struct {
	path     string
	meta     []byte
	size     int64 // body
	fileSize int64
	seq      uint64
	note     note
}

// NewDisk opens (creating it if needed) a Disk store in dir holding at most
// about maxBytes; see Disk for what happens to the directory's contents.
func NewDisk(dir string, maxBytes int64, opts ...DiskOption) (*Disk, error) {
	d := &Disk{
		tmpDir:  filepath.Join(dir, "tmp"),
		dataDir: filepath.Join(dir, "data"),
		max:     maxBytes,
	}
	for _, o := range opts {
		o(d)
	}
	if err := os.RemoveAll(d.tmpDir); err != nil {
		return nil, fmt.Errorf("store: removing leftover fills in %s: %w", d.tmpDir, err)
	}
	for _, p := range []string{d.tmpDir, d.dataDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("store: creating disk store directory: %w", err)
		}
	}
	c, err := otter.New(&otter.Options[string, *diskEntry]{
		MaximumWeight: uint64(max(maxBytes/blockSize, 1)),
		Weigher: func(_ string, e *diskEntry) uint32 {
			w, _ := weightOf(e.fileSize, blockSize) // checked at Commit
			return w
		},
		OnAtomicDeletion: func(ev otter.DeletionEvent[string, *diskEntry]) {
			d.bytes.Add(-ev.Value.fileSize)
			if ev.WasEvicted() {
				d.evictions.Add(1)
			}
		},
		OnDeletion: func(ev otter.DeletionEvent[string, *diskEntry]) {
			_ = os.Remove(ev.Value.path) // already gone is fine
		},
	})
	if err != nil {
		return nil, fmt.Errorf("store: creating disk store index: %w", err)
	}
	d.cache = c
	if err := d.reindex(); err != nil {
		c.StopAllGoroutines()
		return nil, err
	}
	return d, nil
}

// reindex indexes the valid entry files of dataDir and removes the others.
func (d *Disk) reindex() error {
	des, err := os.ReadDir(d.dataDir)
	if err != nil {
		return fmt.Errorf("store: re-indexing %s: %w", d.dataDir, err)
	}
	newest := map[string]*diskEntry{}
	var stale []string
	for _, de := range des {
		p := filepath.Join(d.dataDir, de.Name())
		if !de.Type().IsRegular() {
			continue
		}
		key, e, err := readFooter(p)
		if err != nil {
			stale = append(stale, p)
			continue
		}
		if old, ok := newest[key]; ok {
			if old.seq > e.seq {
				stale = append(stale, p)
				continue
			}
			stale = append(stale, old.path)
		}
		newest[key] = e
	}
	for _, p := range stale {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: re-indexing, removing %s: %w", p, err)
		}
	}
	type kv struct {
		key string
		e   *diskEntry
	}
	all := make([]kv, 0, len(newest))
	for k, e := range newest {
		all = append(all, kv{k, e})
	}
	// Oldest commit first, so the policy sees the newest as most recent.
	slices.SortFunc(all, func(a, b kv) int { return cmp.Compare(a.e.seq, b.e.seq) })
	for _, x := range all {
		d.seq.Store(max(d.seq.Load(), x.e.seq))
		if w, ok := weightOf(x.e.fileSize, blockSize); !ok || x.e.fileSize > d.max || uint64(w) > d.cache.GetMaximum() {
			_ = os.Remove(x.e.path) // the bound shrank below it
			continue
		}
		d.bytes.Add(x.e.fileSize)
		d.cache.Set(x.key, x.e)
	}
	return nil
}

// readFooter reads and checks the footer of the entry file at p.
func readFooter(p string) (string, *diskEntry, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	fileSize := st.Size()
	if fileSize < footerSize {
		return "", nil, fmt.Errorf("store: %s: too short for an entry", p)
	}
	var ft [footerSize]byte
	if _, err := f.ReadAt(ft[:], fileSize-footerSize); err != nil {
		return "", nil, fmt.Errorf("store: reading the footer of %s: %w", p, err)
	}
	if string(ft[:8]) != footerMagic {
		return "", nil, fmt.Errorf("store: %s: not an entry", p)
	}
	bodyLen := binary.BigEndian.Uint64(ft[8:])
	seq := binary.BigEndian.Uint64(ft[16:])
	keyLen := int64(binary.BigEndian.Uint32(ft[24:]))
	metaLen := int64(binary.BigEndian.Uint32(ft[28:]))
	if bodyLen > uint64(fileSize) || int64(bodyLen)+keyLen+metaLen+footerSize != fileSize {
		return "", nil, fmt.Errorf("store: %s: lengths do not add up", p)
	}
	km := make([]byte, keyLen+metaLen)
	if _, err := f.ReadAt(km, int64(bodyLen)); err != nil {
		return "", nil, fmt.Errorf("store: reading the key and metadata of %s: %w", p, err)
	}
	crc := crc32.Update(crc32.Checksum(km, castagnoli), castagnoli, ft[:32])
	if crc != binary.BigEndian.Uint32(ft[32:]) {
		return "", nil, fmt.Errorf("store: %s: footer checksum mismatch", p)
	}
	e := &diskEntry{path: p, meta: km[keyLen:], size: int64(bodyLen), fileSize: fileSize, seq: seq}
	return string(km[:keyLen]), e, nil
}

// Begin implements Store: the body goes to a temporary file under dir/tmp.
func (d *Disk) Begin(key string) (Writer, error) {
	if int64(len(key)) > int64(^uint32(0)) {
		return nil, fmt.Errorf("store: beginning %.40q...: key too long", key)
	}
	f, err := os.CreateTemp(d.tmpDir, "fill-*")
	if err != nil {
		return nil, fmt.Errorf("store: beginning %q: %w", key, err)
	}
	return &diskWriter{pending: newPending(key), d: d, f: f}, nil
}

// Open implements Store.
func (d *Disk) Open(key string) (Reader, bool) {
	// A replacement may unlink the file between the lookup and the open:
	// look again, a few times, then call it a miss.
	for range 3 {
		e, ok := d.cache.GetIfPresent(key)
		if !ok {
			break
		}
		f, err := os.Open(e.path)
		if err != nil {
			continue
		}
		d.hits.Add(1)
		return &diskReader{SectionReader: io.NewSectionReader(f, 0, e.size), f: f, e: e}, true
	}
	d.misses.Add(1)
	return nil, false
}

// Delete implements Store.
func (d *Disk) Delete(key string) { d.cache.Invalidate(key) }

// Stats implements Store.
func (d *Disk) Stats() Stats {
	return d.stats(d.cache.EstimatedSize())
}

// Close stops the index's background goroutines; committed entries stay on
// disk for the next NewDisk. The store must not be used afterwards.
func (d *Disk) Close() error {
	d.cache.StopAllGoroutines()
	return nil
}

type diskWriter struct {
	pending
	d *Disk
	f *os.File // nil once finished
}

// fail records err and removes the temporary file.
func (w *diskWriter) fail(err error) error {
	w.err = err
	w.discard()
	return err
}

func (w *diskWriter) discard() {
	if w.f != nil {
		_ = w.f.Close()
		_ = os.Remove(w.f.Name())
		w.f = nil
	}
}

func (w *diskWriter) overhead() int64 { return int64(len(w.key)+len(w.meta)) + footerSize }

func (w *diskWriter) Write(p []byte) (int, error) {
	if err := w.admit(len(p), w.overhead(), w.d.max); err != nil {
		return 0, w.fail(err)
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	if err != nil {
		return n, w.fail(fmt.Errorf("store: writing %q to %s: %w", w.key, w.f.Name(), err))
	}
	return n, nil
}

func (w *diskWriter) Commit() error {
	if err := w.beginCommit(); err != nil {
		return w.fail(err)
	}
	d := w.d
	fileSize := w.size + w.overhead()
	if wt, ok := weightOf(fileSize, blockSize); !ok || fileSize > d.max || uint64(wt) > d.cache.GetMaximum() || len(w.meta) > int(^uint32(0)) {
		return w.fail(fmt.Errorf("store: committing %q: %d bytes, the store holds %d: %w", w.key, fileSize, d.max, ErrTooLarge))
	}
	seq := d.seq.Add(1)

	var tail bytes.Buffer
	tail.Grow(len(w.key) + len(w.meta) + footerSize)
	tail.WriteString(w.key)
	tail.Write(w.meta)
	var ft [footerSize]byte
	copy(ft[:], footerMagic)
	binary.BigEndian.PutUint64(ft[8:], uint64(w.size))
	binary.BigEndian.PutUint64(ft[16:], seq)
	binary.BigEndian.PutUint32(ft[24:], uint32(len(w.key)))
	binary.BigEndian.PutUint32(ft[28:], uint32(len(w.meta)))
	crc := crc32.Update(crc32.Checksum(tail.Bytes(), castagnoli), castagnoli, ft[:32])
	binary.BigEndian.PutUint32(ft[32:], crc)
	tail.Write(ft[:])
	if _, err := w.f.Write(tail.Bytes()); err != nil {
		return w.fail(fmt.Errorf("store: committing %q, writing the footer: %w", w.key, err))
	}
	if d.sync {
		if err := w.f.Sync(); err != nil {
			return w.fail(fmt.Errorf("store: committing %q, syncing: %w", w.key, err))
		}
	}
	tmp := w.f.Name()
	if err := w.f.Close(); err != nil {
		return w.fail(fmt.Errorf("store: committing %q, closing: %w", w.key, err))
	}
	w.f = nil
	sum := sha256.Sum256([]byte(w.key))
	path := filepath.Join(d.dataDir, fmt.Sprintf("%s-%016x", hex.EncodeToString(sum[:16]), seq))
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		w.err = fmt.Errorf("store: committing %q, renaming into place: %w", w.key, err)
		return w.err
	}
	if d.sync {
		if err := syncDir(d.dataDir); err != nil {
			return fmt.Errorf("store: committing %q, syncing the directory: %w", w.key, err)
		}
	}

	e := &diskEntry{path: path, meta: w.meta, size: w.size, fileSize: fileSize, seq: seq}
	d.bytes.Add(fileSize)
	lost := false
	d.cache.Compute(w.key, func(old *diskEntry, found bool) (*diskEntry, otter.ComputeOp) {
		if found && old.seq > seq { // a commit that took a later seq got in first
			lost = true
			return old, otter.CancelOp
		}
		return e, otter.WriteOp
	})
	if lost {
		d.bytes.Add(-fileSize)
		_ = os.Remove(path)
	}
	return nil
}

func (w *diskWriter) Abort() {
	if !w.done {
		w.done = true
		w.discard()
	}
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

type diskReader struct {
	*io.SectionReader
	f *os.File
	e *diskEntry
}

func (r *diskReader) Meta() []byte  { return r.e.meta }
func (r *diskReader) Note() any     { return r.e.note.get() }
func (r *diskReader) SetNote(v any) { r.e.note.set(v) }
func (r *diskReader) Close() error  { return r.f.Close() }
