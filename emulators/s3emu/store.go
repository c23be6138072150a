package s3emu

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

// object is one stored object's metadata and where its content is.
type object struct {
	Key      string      `json:"key"`
	Size     int64       `json:"size"`
	ETag     string      `json:"etag"` // quoted
	Modified time.Time   `json:"modified"`
	Header   http.Header `json:"header,omitempty"` // Content-Type, Cache-Control, x-amz-meta-*, ...
	// Checksums are the x-amz-checksum-* values stored with the object
	// (algorithm, lower case, to base64), and ChecksumType FULL_OBJECT or
	// COMPOSITE.
	Checksums    map[string]string `json:"checksums,omitempty"`
	ChecksumType string            `json:"checksumType,omitempty"`
	Blob         string            `json:"blob,omitempty"` // the blob's name under DataDir

	blob  *blobstore.Blob // stored content
	synth *synth.Object   // synthetic content
}

// open returns the object's content.
func (o *object) open() (io.ReadSeekCloser, error) {
	if o.synth != nil {
		return nopCloser{o.synth.NewReader()}, nil
	}
	return o.blob.Open()
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

type bucket struct {
	name     string
	anonRead bool
	created  time.Time
	objects  map[string]*object
}

// store holds buckets and object metadata; the bytes are blobs. With a data
// directory, metadata is DIR/buckets/BUCKET/<sha256(key)>.json and the bytes
// DIR/blobs/NAME, and both are loaded again at start.
type store struct {
	mu      sync.RWMutex
	dir     string
	now     func() time.Time
	blobs   *blobstore.Store
	buckets map[string]*bucket
}

func newStore(dir string, maxBytes int64, now func() time.Time) (*store, error) {
	blobs, err := blobstore.New(blobstore.Config{Dir: dir, MaxBytes: maxBytes})
	if err != nil {
		return nil, err
	}
	s := &store{dir: dir, now: now, blobs: blobs, buckets: map[string]*bucket{}}
	if dir == "" {
		return s, nil
	}
	root := filepath.Join(dir, "buckets")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() || checkBucketName(e.Name()) != "" {
			continue
		}
		b := &bucket{name: e.Name(), created: now(), objects: map[string]*object{}}
		if info, err := e.Info(); err == nil {
			b.created = info.ModTime()
		}
		metas, _ := filepath.Glob(filepath.Join(root, e.Name(), "*.json"))
		for _, m := range metas {
			raw, err := os.ReadFile(m)
			if err != nil {
				return nil, err
			}
			o := &object{}
			if err := json.Unmarshal(raw, o); err != nil {
				return nil, fmt.Errorf("%s: %w", m, err)
			}
			if o.blob, err = blobs.Load(o.Blob); err != nil {
				return nil, fmt.Errorf("%s: %w", m, err)
			}
			b.objects[o.Key] = o
		}
		s.buckets[b.name] = b
	}
	// Parts of multipart uploads that never completed are not kept.
	err = blobs.Sweep(func(name string) bool {
		for _, b := range s.buckets {
			for _, o := range b.objects {
				if o.Blob == name {
					return true
				}
			}
		}
		return false
	})
	return s, err
}

func (s *store) metaPath(bucket, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.dir, "buckets", bucket, hex.EncodeToString(sum[:])+".json")
}

// addConfigBucket creates (or completes) a configured bucket.
func (s *store) addConfigBucket(bc BucketConfig) error {
	if _, err := s.createBucket(bc.Name); err != nil {
		return err
	}
	s.mu.Lock()
	b := s.buckets[bc.Name]
	b.anonRead = bc.AnonymousRead
	s.mu.Unlock()
	for _, oc := range bc.Objects {
		h := http.Header{}
		if oc.ContentType != "" {
			h.Set("Content-Type", oc.ContentType)
		}
		if oc.CacheControl != "" {
			h.Set("Cache-Control", oc.CacheControl)
		}
		if oc.Body != "" || oc.Size == 0 {
			blob, err := s.blobs.Bytes([]byte(oc.Body))
			if err != nil {
				return err
			}
			o := &object{Key: oc.Key, Size: blob.Size(), ETag: md5ETag([]byte(oc.Body)), Modified: s.now().UTC().Truncate(time.Second), Header: h, blob: blob}
			if err := s.put(bc.Name, o, nil); err != nil {
				return err
			}
			continue
		}
		so := synth.Object{Path: "/" + bc.Name + "/" + oc.Key, Size: oc.Size, Version: "1"}
		s.mu.Lock()
		b.objects[oc.Key] = &object{Key: oc.Key, Size: oc.Size, ETag: so.ETag(), Modified: so.LastModified(), Header: h, synth: &so}
		s.mu.Unlock()
	}
	return nil
}

// createBucket creates a bucket; created is false if it existed.
func (s *store) createBucket(name string) (created bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.buckets[name]; ok {
		return false, nil
	}
	if s.dir != "" {
		if err := os.MkdirAll(filepath.Join(s.dir, "buckets", name), 0o755); err != nil {
			return false, err
		}
	}
	s.buckets[name] = &bucket{name: name, created: s.now().UTC(), objects: map[string]*object{}}
	return true, nil
}

var errBucketNotEmpty = errors.New("bucket not empty")

func (s *store) deleteBucket(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[name]
	if !ok {
		return os.ErrNotExist
	}
	if len(b.objects) > 0 {
		return errBucketNotEmpty
	}
	if s.dir != "" {
		if err := os.RemoveAll(filepath.Join(s.dir, "buckets", name)); err != nil {
			return err
		}
	}
	delete(s.buckets, name)
	return nil
}

// bucketInfo reports whether a bucket exists and allows anonymous reads.
func (s *store) bucketInfo(name string) (exists, anonRead bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.buckets[name]
	return ok, ok && b.anonRead
}

type bucketEntry struct {
	Name    string
	Created time.Time
}

func (s *store) listBuckets() []bucketEntry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]bucketEntry, 0, len(s.buckets))
	for _, b := range s.buckets {
		out = append(out, bucketEntry{b.name, b.created})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// get returns an object (a copy of its metadata), or nil.
func (s *store) get(bucketName, key string) (*object, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.buckets[bucketName]
	if !ok {
		return nil, false
	}
	o := b.objects[key]
	if o == nil {
		return nil, true
	}
	c := *o
	return &c, true
}

// put stores o (whose blob the store now owns) if check, given the current
// object or nil, allows it; the replaced object's blob is released. On any
// error o's blob is released too.
func (s *store) put(bucketName string, o *object, check func(old *object) *s3Error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[bucketName]
	if !ok {
		o.blob.Release()
		return errNoSuchBucket(bucketName)
	}
	old := b.objects[o.Key]
	if check != nil {
		if e := check(old); e != nil {
			o.blob.Release()
			return e
		}
	}
	if s.dir != "" && o.blob != nil {
		o.Blob = o.blob.Name()
		meta, err := json.Marshal(o)
		if err == nil {
			err = writeAtomic(s.metaPath(bucketName, o.Key), meta)
		}
		if err != nil {
			o.blob.Release()
			return fmt.Errorf("saving object metadata: %w", err)
		}
	}
	b.objects[o.Key] = o
	if old != nil && old.blob != o.blob {
		old.blob.Release()
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// remove deletes an object; a missing one is not an error (as in S3).
func (s *store) remove(bucketName, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[bucketName]
	if !ok {
		return os.ErrNotExist
	}
	o := b.objects[key]
	if o == nil {
		return nil
	}
	if s.dir != "" && o.blob != nil {
		os.Remove(s.metaPath(bucketName, key))
	}
	o.blob.Release()
	delete(b.objects, key)
	return nil
}

// sorted returns a bucket's objects sorted by key (metadata copies).
func (s *store) sorted(bucketName string) ([]object, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.buckets[bucketName]
	if !ok {
		return nil, false
	}
	out := make([]object, 0, len(b.objects))
	for _, o := range b.objects {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, true
}

// open returns an object's metadata and an open reader over its content,
// opened under the lock so that a concurrent overwrite cannot remove the
// bytes first; o is nil for a missing key, ok false for a missing bucket.
func (s *store) open(bucketName, key string) (o *object, body io.ReadSeekCloser, ok bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.buckets[bucketName]
	if !ok {
		return nil, nil, false, nil
	}
	cur := b.objects[key]
	if cur == nil {
		return nil, nil, true, nil
	}
	c := *cur
	body, err = c.open()
	return &c, body, true, err
}
