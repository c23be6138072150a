package gcsemu

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// persister keeps objects written through the API under dir:
// dir/BUCKET/HEXNAME.json (metadata) and dir/BUCKET/HEXNAME.data (bytes).
// Configured objects are not written; a persisted object overrides a
// configured one of the same name.
type persister struct{ dir string }

type persistedMeta struct {
	Name           string    `json:"name"`
	ContentType    string    `json:"contentType,omitempty"`
	CacheControl   string    `json:"cacheControl,omitempty"`
	Generation     int64     `json:"generation"`
	Metageneration int64     `json:"metageneration"`
	Created        time.Time `json:"created"`
}

func newPersister(dir string) (*persister, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &persister{dir: dir}, nil
}

func (p *persister) base(bucket, name string) string {
	return filepath.Join(p.dir, bucket, hex.EncodeToString([]byte(name)))
}

// save writes o's bytes, then its metadata (the metadata file marks a
// complete object), each through a temporary file and a rename.
func (p *persister) save(o *object) error {
	base := p.base(o.bucket, o.name)
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return err
	}
	meta, _ := json.Marshal(persistedMeta{o.name, o.contentType, o.cacheControl, o.generation, o.metageneration, o.created})
	if err := writeAtomic(base+".data", o.data); err != nil {
		return err
	}
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
	err := errors.Join(os.Remove(base+".json"), os.Remove(base+".data"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// loadInto loads every persisted object of a configured bucket.
func (p *persister) loadInto(s *store) error {
	s.mu.RLock()
	names := make([]string, 0, len(s.buckets))
	for n := range s.buckets {
		names = append(names, n)
	}
	s.mu.RUnlock()
	for _, b := range names {
		files, err := filepath.Glob(filepath.Join(p.dir, b, "*.json"))
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
			data, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".data")
			if err != nil {
				return err
			}
			o := newDataObject(b, m.Name, data)
			o.contentType, o.cacheControl = m.ContentType, m.CacheControl
			o.generation, o.metageneration, o.created = m.Generation, max(m.Metageneration, 1), m.Created
			s.load(o)
		}
	}
	return nil
}
