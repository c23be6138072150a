package gcsemu

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

// persister keeps the metadata of objects written through the API under
// dir: dir/objects/BUCKET/HEXNAME.json, naming the object's blob (the bytes,
// under dir/blobs/, kept by blobstore). Configured objects are not written;
// a persisted object overrides a configured one of the same name.
type persister struct {
	dir   string
	blobs *blobstore.Store
}

type persistedMeta struct {
	Name           string    `json:"name"`
	ContentType    string    `json:"contentType,omitempty"`
	CacheControl   string    `json:"cacheControl,omitempty"`
	Generation     int64     `json:"generation"`
	Metageneration int64     `json:"metageneration"`
	Created        time.Time `json:"created"`
	Blob           string    `json:"blob"`
	Updated        time.Time `json:"updated,omitzero"`

	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	ContentLanguage    string            `json:"contentLanguage,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
}

func newPersister(dir string, blobs *blobstore.Store) (*persister, error) {
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		return nil, err
	}
	return &persister{dir: dir, blobs: blobs}, nil
}

func (p *persister) base(bucket, name string) string {
	return filepath.Join(p.dir, "objects", bucket, hex.EncodeToString([]byte(name)))
}

// save writes o's metadata (its blob is already a complete file) through
// a temporary file and a rename.
func (p *persister) save(o *object) error {
	base := p.base(o.bucket, o.name)
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return err
	}
	meta, _ := json.Marshal(persistedMeta{Name: o.name, ContentType: o.contentType, CacheControl: o.cacheControl,
		Generation: o.generation, Metageneration: o.metageneration, Created: o.created, Blob: o.blob.Name(), Updated: o.updated,
		ContentDisposition: o.contentDisposition, ContentEncoding: o.contentEncoding, ContentLanguage: o.contentLanguage, Metadata: o.metadata})
	return writeAtomic(base+".json", meta)
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (p *persister) remove(bucket, name string) error {
	base := p.base(bucket, name)
	err := os.Remove(base + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// loadInto loads every persisted object of a configured bucket.
// persistedBlobs are the blob names the persisted objects under dir use.
func persistedBlobs(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "objects", "*", "*.json"))
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var m persistedMeta
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, errors.New(f + ": " + err.Error())
		}
		used[m.Blob] = true
	}
	return used, nil
}

// bucketMarker, in a bucket's objects directory, records a bucket created
// through the API (configured buckets have none).
const bucketMarker = "bucket.meta"

type persistedBucket struct {
	Public  bool      `json:"public"`
	Created time.Time `json:"created"`
}

// saveBucket records a bucket created through the API.
func (p *persister) saveBucket(b *bucket) error {
	dir := filepath.Join(p.dir, "objects", b.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, _ := json.Marshal(persistedBucket{Public: b.public, Created: b.created})
	return writeAtomic(filepath.Join(dir, bucketMarker), raw)
}

func (p *persister) removeBucket(name string) error {
	return os.RemoveAll(filepath.Join(p.dir, "objects", name))
}

// loadBuckets re-creates the buckets an earlier run created through the
// API (a configured bucket of the same name wins).
func (p *persister) loadBuckets(s *store) error {
	markers, err := filepath.Glob(filepath.Join(p.dir, "objects", "*", bucketMarker))
	if err != nil {
		return err
	}
	for _, m := range markers {
		name := filepath.Base(filepath.Dir(m))
		if s.bucket(name) != nil || checkBucketName(name) != nil {
			continue
		}
		raw, err := os.ReadFile(m)
		if err != nil {
			return err
		}
		var pb persistedBucket
		if err := json.Unmarshal(raw, &pb); err != nil {
			return errors.New(m + ": " + err.Error())
		}
		s.addBucket(&bucket{name: name, public: pb.Public, created: pb.Created})
	}
	return nil
}

func (p *persister) loadInto(s *store) error {
	if err := p.loadBuckets(s); err != nil {
		return err
	}
	s.mu.RLock()
	names := make([]string, 0, len(s.buckets))
	for n := range s.buckets {
		names = append(names, n)
	}
	s.mu.RUnlock()
	for _, b := range names {
		files, err := filepath.Glob(filepath.Join(p.dir, "objects", b, "*.json"))
		if err != nil {
			return err
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			var m persistedMeta
			if err := json.Unmarshal(raw, &m); err != nil {
				return errors.New(f + ": " + err.Error())
			}
			blob, err := p.blobs.Load(m.Blob)
			if err != nil {
				return errors.New(f + ": " + err.Error())
			}
			o := newBlobObject(b, m.Name, blob, nil)
			o.attrs = attrs{contentType: m.ContentType, cacheControl: m.CacheControl, contentDisposition: m.ContentDisposition,
				contentEncoding: m.ContentEncoding, contentLanguage: m.ContentLanguage, metadata: m.Metadata}
			o.updated = m.Updated
			o.generation, o.metageneration, o.created = m.Generation, max(m.Metageneration, 1), m.Created
			s.load(o)
		}
	}
	return nil
}
