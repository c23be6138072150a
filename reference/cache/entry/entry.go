// Package entry is the reference edge cache's storage format: what a
// cache entry's metadata holds (Meta), how it is encoded into and decoded
// from a store entry (Encode, Decode), and how a large object's chunks are
// keyed (ChunkKey, ChunkSize) and tied to one version (ValidatorOf, RNG-5).
// It knows HTTP headers but not requests: package session decides what is
// stored and when; package store holds the bytes.
package entry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeconform/edgeconform/internal/httpdate"
	"github.com/edgeconform/edgeconform/reference/cache/store"
)

// ChunkSize is the size of one chunk of a large object, and the largest
// range a fill asks for (RNG-2).
const ChunkSize = 2 << 20

// Meta is a stored entry's metadata.
type Meta struct {
	Status   int           `json:"status"`
	Header   http.Header   `json:"header"` // the origin's, less hop-by-hop fields
	ReqTime  time.Time     `json:"reqTime"`
	RespTime time.Time     `json:"respTime"`
	TTL      time.Duration `json:"ttl"`
	NoCache  bool          `json:"noCache,omitempty"`
	ClientCC string        `json:"clientCC,omitempty"` // clientTtl's Cache-Control
	Vary     []string      `json:"vary,omitempty"`     // the response's Vary field lines
	Variant  string        `json:"variant,omitempty"`  // VaryKey of the filling request
	// Chunked: the body is in chunks of ChunkSize under ChunkKey(key, i),
	// each with Validator as its metadata; the entry itself has none.
	Chunked   bool   `json:"chunked,omitempty"`
	Size      int64  `json:"size,omitempty"`
	Validator string `json:"validator,omitempty"`
	// Transient: a chunked object that is not stored (RNG-1): its chunks
	// are not stored either. Unstorable says why, when the reason is one
	// a child tier cannot see (shield.UncacheableHeader). Neither is
	// encoded: they describe a fill, never a stored entry.
	Transient  bool   `json:"-"`
	Unstorable string `json:"-"`
	// date is Header's Date field as decoding parsed it (DateField);
	// copies share it.
	date *parsedDate
}

// parsedDate is one Date field's text and what it parsed to.
type parsedDate struct {
	text string
	t    time.Time
	ok   bool
}

func parseDate(v string) *parsedDate {
	t, err := httpdate.Parse(v)
	return &parsedDate{text: v, t: t, ok: err == nil}
}

// DateField is the Date field of m.Header parsed; ok is false when it is
// absent or invalid. A decoded entry's is parsed once, when decoded, not
// on every hit (issue #14); a copy whose Header was replaced parses its
// own.
func (m *Meta) DateField() (time.Time, bool) {
	v := m.Header.Get("Date")
	if d := m.date; d != nil && d.text == v {
		return d.t, d.ok
	}
	t, err := httpdate.Parse(v)
	return t, err == nil
}

// ValidatorOf is what must not change between the chunks of one object
// (RNG-5): the ETag and Last-Modified fields together.
func ValidatorOf(h http.Header) string {
	etag, lm := strings.TrimSpace(h.Get("Etag")), strings.TrimSpace(h.Get("Last-Modified"))
	if etag == "" && lm == "" {
		return ""
	}
	return etag + "|" + lm
}

// ChunkKey is the store key of chunk i of the object stored under key.
func ChunkKey(key string, i int64) string { return key + "\x00chunk " + strconv.FormatInt(i, 10) }

// Decode is a stored entry's metadata, decoded once per entry: the store
// keeps the decoded value beside the bytes (store.Noted), so a hit costs
// no JSON decoding. Callers must not modify it (they copy the struct and
// replace, never change, its Header).
func Decode(rd store.Reader) (*Meta, error) {
	m, _, err := DecodeMemo(rd)
	return m, err
}

// DecodeMemo is Decode with the entry's Memo: nil when the store keeps
// no note beside its entries.
func DecodeMemo(rd store.Reader) (*Meta, *Memo, error) {
	n, noted := rd.(store.Noted)
	if noted {
		if d, ok := n.Note().(*decoded); ok {
			return &d.meta, &d.memo, nil
		}
	}
	d := &decoded{}
	if err := json.Unmarshal(rd.Meta(), &d.meta); err != nil {
		return nil, nil, fmt.Errorf("decoding a cache entry's metadata: %w", err)
	}
	d.meta.date = parseDate(d.meta.Header.Get("Date"))
	if !noted {
		return &d.meta, nil, nil
	}
	n.SetNote(d)
	return &d.meta, &d.memo, nil
}

// decoded is the note a store keeps beside an entry.
type decoded struct {
	meta Meta
	memo Memo
}

// Memo is a slot beside one stored entry's decoded metadata, for what a
// caller derives from the entry and would otherwise derive again on every
// hit (the edge keeps the response fields it renders: issue #14). It
// lives as long as the entry; a replaced entry has a new, empty one. Its
// methods are safe for concurrent use.
type Memo struct{ v atomic.Pointer[memoValue] }

type memoValue struct{ v any }

// Load returns what was last stored, or nil.
func (m *Memo) Load() any {
	if p := m.v.Load(); p != nil {
		return p.v
	}
	return nil
}

// Store keeps v, replacing what was there.
func (m *Memo) Store(v any) { m.v.Store(&memoValue{v}) }

// Encode is m as a store entry's metadata.
func Encode(m Meta) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("encoding entry metadata: %v", err)) // only plain fields: cannot happen
	}
	return b
}
