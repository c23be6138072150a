package s3emu

import (
	"bytes"
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

	"github.com/edgeconform/edgeconform/emulators/synth"
)

// object is one stored object's metadata and where its content is.
type object struct {
	Key      string      `json:"key"`
	Size     int64       `json:"size"`
	ETag     string      `json:"etag"` // quoted
	Modified time.Time   `json:"modified"`
	Header   http.Header `json:"header,omitempty"` // Content-Type, Cache-Control, x-amz-meta-*, ...

	data  []byte        // in memory
	synth *synth.Object // synthetic
	file  string        // under Dir
}

// open returns the object's content.
func (o *object) open() (io.ReadSeekCloser, error) {
	switch {
	case o.synth != nil:
		return nopCloser{o.synth.NewReader()}, nil
	case o.file != "":
		return os.Open(o.file)
	}
	return nopCloser{bytes.NewReader(o.data)}, nil
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

type bucket struct {
	name     string
	anonRead bool
	created  time.Time
	objects  map[string]*object
}

// store holds buckets and objects, in memory or under a directory:
// DIR/BUCKET/<sha256(key)>.data and .json (the metadata).
type store struct {
	mu      sync.RWMutex
	dir     string
	now     func() time.Time
	buckets map[string]*bucket
}

func newStore(dir string, now func() time.Time) (*store, error) {
	s := &store{dir: dir, now: now, buckets: map[string]*bucket{}}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
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
		metas, _ := filepath.Glob(filepath.Join(dir, e.Name(), "*.json"))
		for _, m := range metas {
			raw, err := os.ReadFile(m)
			if err != nil {
				return nil, err
			}
			o := &object{}
			if err := json.Unmarshal(raw, o); err != nil {
				return nil, fmt.Errorf("%s: %w", m, err)
			}
			o.file = s.dataPath(b.name, o.Key)
			b.objects[o.Key] = o
		}
		s.buckets[b.name] = b
	}
	return s, nil
}

func (s *store) dataPath(bucket, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.dir, bucket, hex.EncodeToString(sum[:])+".data")
}

// addConfigBucket creates (or completes) a configured bucket.
func (s *store) addConfigBucket(bc BucketConfig) error {
	if _, err := s.createBucket(bc.Name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[bc.Name]
	b.anonRead = bc.AnonymousRead
	for _, oc := range bc.Objects {
		h := http.Header{}
		if oc.ContentType != "" {
			h.Set("Content-Type", oc.ContentType)
		}
		if oc.CacheControl != "" {
			h.Set("Cache-Control", oc.CacheControl)
		}
		if oc.Body != "" || oc.Size == 0 {
			data := []byte(oc.Body)
			b.objects[oc.Key] = &object{Key: oc.Key, Size: int64(len(data)), ETag: md5ETag(data), Modified: s.now().UTC().Truncate(time.Second), Header: h, data: data}
			continue
		}
		so := synth.Object{Path: "/" + bc.Name + "/" + oc.Key, Size: oc.Size, Version: "1"}
		b.objects[oc.Key] = &object{Key: oc.Key, Size: oc.Size, ETag: so.ETag(), Modified: so.LastModified(), Header: h, synth: &so}
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
		if err := os.MkdirAll(filepath.Join(s.dir, name), 0o755); err != nil {
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
		if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
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

// put stores an object with the given content.
func (s *store) put(bucketName string, o *object, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[bucketName]
	if !ok {
		return os.ErrNotExist
	}
	if s.dir != "" {
		o.file = s.dataPath(bucketName, o.Key)
		meta, err := json.Marshal(o)
		if err != nil {
			return err
		}
		if err := writeAtomic(o.file, data); err != nil {
			return err
		}
		if err := writeAtomic(o.file[:len(o.file)-len(".data")]+".json", meta); err != nil {
			return err
		}
	} else {
		o.data = data
	}
	b.objects[o.Key] = o
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
	if o.file != "" {
		os.Remove(o.file)
		os.Remove(o.file[:len(o.file)-len(".data")] + ".json")
	}
	delete(b.objects, key)
	return nil
}

// keys returns a bucket's objects sorted by key (metadata copies).
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
