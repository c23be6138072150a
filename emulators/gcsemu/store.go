package gcsemu

import (
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

// bucket is a configured bucket.
type bucket struct {
	name      string
	public    bool
	anonWrite bool
	created   time.Time
}

// store holds every bucket's objects (newest generation only).
type store struct {
	now     func() time.Time
	blobs   *blobstore.Store
	persist *persister // nil without Config.DataDir

	mu      sync.RWMutex
	buckets map[string]*bucket
	objects map[string]map[string]*object
	lastGen int64
}

func newStore(now func() time.Time, blobs *blobstore.Store) *store {
	return &store{now: now, blobs: blobs, buckets: map[string]*bucket{}, objects: map[string]map[string]*object{}}
}

func (s *store) addBucket(b *bucket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buckets[b.name] = b
	s.objects[b.name] = map[string]*object{}
}

func (s *store) bucket(name string) *bucket {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.buckets[name]
}

func (s *store) get(bucket, name string) *object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.objects[bucket][name]
}

// nextGenLocked returns a generation, microseconds since the epoch as Cloud
// Storage uses, strictly increasing.
func (s *store) nextGenLocked() int64 {
	g := s.now().UnixMicro()
	if g <= s.lastGen {
		g = s.lastGen + 1
	}
	s.lastGen = g
	return g
}

// put stores o as the newest generation of its name if conds hold for the
// current one. It fills o's generation and times. The store owns o's blob:
// it is released if o is not stored, and the replaced generation's is.
func (s *store) put(o *object, conds preconditions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.objects[o.bucket]
	if !ok {
		o.blob.Release()
		return errNoSuchBucket(o.bucket)
	}
	old := objs[o.name]
	if err := conds.check(old); err != nil {
		o.blob.Release()
		return err
	}
	o.generation = s.nextGenLocked()
	if o.metageneration == 0 {
		o.metageneration = 1
	}
	if o.created.IsZero() {
		o.created = time.UnixMicro(o.generation).UTC()
	}
	if s.persist != nil && o.blob != nil {
		if err := s.persist.save(o); err != nil {
			o.blob.Release()
			return err
		}
	}
	objs[o.name] = o
	if old != nil && old.blob != o.blob {
		old.blob.Release()
	}
	return nil
}

// patch replaces the current object with fn's new version of it (the same
// bytes and generation) if conds hold.
func (s *store) patch(bucket, name string, conds preconditions, fn func(cur *object) *object) (*object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.objects[bucket]
	if !ok {
		return nil, errNoSuchBucket(bucket)
	}
	cur := objs[name]
	if cur == nil {
		return nil, errNoSuchKey(bucket, name)
	}
	if err := conds.check(cur); err != nil {
		return nil, err
	}
	n := fn(cur)
	if s.persist != nil && n.blob != nil {
		if err := s.persist.save(n); err != nil {
			return nil, err
		}
	}
	objs[name] = n
	return n, nil
}

// open returns a reader over o's content if o is still its name's current
// generation (under the lock, so an overwrite cannot remove the bytes
// first); otherwise that generation is gone: 404.
func (s *store) open(o *object) (io.ReadSeekCloser, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.objects[o.bucket][o.name] != o {
		return nil, errNoSuchKey(o.bucket, o.name)
	}
	return o.content()
}

// load stores o as it is (from configuration or disk).
func (s *store) load(o *object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.generation == 0 {
		o.generation = s.nextGenLocked()
	} else if o.generation > s.lastGen {
		s.lastGen = o.generation
	}
	if o.created.IsZero() {
		o.created = time.UnixMicro(o.generation).UTC()
	}
	if old := s.objects[o.bucket][o.name]; old != nil {
		old.blob.Release()
	}
	s.objects[o.bucket][o.name] = o
}

func (s *store) delete(bucket, name string, conds preconditions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.objects[bucket]
	if !ok {
		return errNoSuchBucket(bucket)
	}
	o := objs[name]
	if o == nil {
		return errNoSuchKey(bucket, name)
	}
	if err := conds.check(o); err != nil {
		return err
	}
	delete(objs, name)
	o.blob.Release()
	if s.persist != nil && o.blob != nil {
		return s.persist.remove(bucket, name)
	}
	return nil
}

// listing is one page of a list.
type listing struct {
	items    []*object
	prefixes []string
	next     string // page token: the last name or prefix returned
}

// list returns up to max entries (objects and prefixes) after the page
// token, in name order, rolling names up to the delimiter.
func (s *store) list(bucket, prefix, delim, after, startOffset, endOffset string, max int) (listing, error) {
	s.mu.RLock()
	objs, ok := s.objects[bucket]
	if !ok {
		s.mu.RUnlock()
		return listing{}, errNoSuchBucket(bucket)
	}
	names := make([]string, 0, len(objs))
	for n := range objs {
		if strings.HasPrefix(n, prefix) && n > after && n >= startOffset && (endOffset == "" || n < endOffset) {
			names = append(names, n)
		}
	}
	found := make(map[string]*object, len(names))
	for _, n := range names {
		found[n] = objs[n]
	}
	s.mu.RUnlock()
	slices.Sort(names)
	var l listing
	count := 0
	for _, n := range names {
		entry := n
		if delim != "" {
			if i := strings.Index(n[len(prefix):], delim); i >= 0 {
				entry = n[:len(prefix)+i+len(delim)]
			}
		}
		if entry != n {
			if len(l.prefixes) > 0 && l.prefixes[len(l.prefixes)-1] == entry {
				continue
			}
			if entry <= after {
				continue // a prefix already returned on an earlier page
			}
		}
		if count == max {
			l.next = lastEntry(l)
			break
		}
		count++
		if entry != n {
			l.prefixes = append(l.prefixes, entry)
		} else {
			l.items = append(l.items, found[n])
		}
	}
	return l, nil
}

// lastEntry is the greatest name or prefix on the page.
func lastEntry(l listing) string {
	last := ""
	if n := len(l.items); n > 0 {
		last = l.items[n-1].name
	}
	if n := len(l.prefixes); n > 0 && l.prefixes[n-1] > last {
		last = l.prefixes[n-1]
	}
	return last
}
