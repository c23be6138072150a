// Package objects is what the emulated origin serves when no rule replaces
// the answer: synthetic objects (a pure function of path, size and version,
// see package synth), fixed bodies, or files, with configurable validators
// and caching headers, served with http.ServeContent so Range (single and
// multipart), If-Range and conditional requests (304/412) are standard.
package objects

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/internal/fielderr"
	"golang.org/x/net/http/httpguts"
)

// DefaultSize is the size of a synthetic object nobody configured.
const DefaultSize = 1024

// Spec describes one object. Unset fields take defaults: a synthetic body
// of DefaultSize bytes, version "1", a strong ETag and a Last-Modified
// derived from the content, Content-Type application/octet-stream.
type Spec struct {
	Path    string  `json:"path"`
	Size    *int64  `json:"size,omitempty"`    // synthetic size in bytes
	Version string  `json:"version,omitempty"` // changes the content and validators
	Body    *string `json:"body,omitempty"`    // fixed content instead of synthetic
	File    string  `json:"file,omitempty"`    // serve this file instead of synthetic

	ETag         *string           `json:"etag,omitempty"`         // "" sends none
	LastModified string            `json:"lastModified,omitempty"` // HTTP date or RFC 3339
	CacheControl string            `json:"cacheControl,omitempty"`
	ContentType  string            `json:"contentType,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	// NoRanges makes the origin ignore Range and If-Range (200 with the
	// whole body, no Accept-Ranges): an origin without range support.
	NoRanges bool `json:"noRanges,omitempty"`
}

// Validate checks the spec; field paths start with prefix ("objects[0]").
func (s *Spec) Validate(prefix string) error {
	l := &fielderr.List{Prefix: prefix}
	add := l.Add
	if !strings.HasPrefix(s.Path, "/") {
		add("path", "must start with '/', got %q", s.Path)
	}
	if s.Size != nil && *s.Size < 0 {
		add("size", "must be >= 0, got %d", *s.Size)
	}
	sources := 0
	for _, set := range []bool{s.Size != nil, s.Body != nil, s.File != ""} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		add("size", "only one of size, body and file may be set")
	}
	if s.File != "" {
		if st, err := os.Stat(s.File); err != nil {
			add("file", "cannot be read: %v", err)
		} else if !st.Mode().IsRegular() {
			add("file", "%s is not a regular file", s.File)
		}
	}
	if s.LastModified != "" {
		if _, err := parseTime(s.LastModified); err != nil {
			add("lastModified", "%v", err)
		}
	}
	// Each of these becomes a response header field: CR, LF or NUL in one
	// would let a caller inject header fields or split the response.
	for _, f := range []struct {
		name string
		v    *string
	}{{"etag", s.ETag}, {"cacheControl", &s.CacheControl}, {"contentType", &s.ContentType}} {
		if f.v != nil && BadValue(*f.v) {
			add(f.name, "must not contain CR, LF or NUL, got %q", *f.v)
		}
	}
	for name, v := range s.Headers {
		if p := HeaderProblem(name, v); p != "" {
			add("headers."+name, "%s", p)
		}
	}
	return l.Err()
}

// BadValue reports whether v cannot be sent as a header field value as
// is: CR or LF would end the field (header injection, response
// splitting) and NUL is never allowed (RFC 9110 section 5.5).
func BadValue(v string) bool { return strings.ContainsAny(v, "\r\n\x00") }

// HeaderProblem says what is wrong with a header field to be sent, or ""
// when nothing is: the name must be an RFC 9110 token, the value must pass
// BadValue.
func HeaderProblem(name, value string) string {
	switch {
	case !httpguts.ValidHeaderFieldName(name):
		return fmt.Sprintf("%q is not a header name (an RFC 9110 token)", name)
	case BadValue(value):
		return fmt.Sprintf("value must not contain CR, LF or NUL, got %q", value)
	}
	return ""
}

func parseTime(v string) (time.Time, error) {
	if t, err := http.ParseTime(v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an HTTP date nor RFC 3339", v)
	}
	return t, nil
}

// Merge returns s with every field set in o overriding it.
func (s Spec) Merge(o Spec) Spec {
	if o.Size != nil {
		s.Size, s.Body, s.File = o.Size, nil, ""
	}
	if o.Body != nil {
		s.Body, s.Size, s.File = o.Body, nil, ""
	}
	if o.File != "" {
		s.File, s.Size, s.Body = o.File, nil, nil
	}
	if o.Version != "" {
		s.Version = o.Version
	}
	if o.ETag != nil {
		s.ETag = o.ETag
	}
	if o.LastModified != "" {
		s.LastModified = o.LastModified
	}
	if o.CacheControl != "" {
		s.CacheControl = o.CacheControl
	}
	if o.ContentType != "" {
		s.ContentType = o.ContentType
	}
	if o.NoRanges {
		s.NoRanges = true
	}
	if len(o.Headers) > 0 {
		h := make(map[string]string, len(s.Headers)+len(o.Headers))
		for k, v := range s.Headers {
			h[k] = v
		}
		for k, v := range o.Headers {
			h[k] = v
		}
		s.Headers = h
	}
	return s
}

// Synthetic returns the synthetic object the spec describes (meaningful
// when neither Body nor File is set).
func (s Spec) Synthetic() synth.Object {
	size := int64(DefaultSize)
	if s.Size != nil {
		size = *s.Size
	}
	return synth.Object{Path: s.Path, Size: size, Version: s.version()}
}

func (s Spec) version() string {
	if s.Version == "" {
		return "1"
	}
	return s.Version
}

// Store holds the configured objects by exact path. It is safe for
// concurrent use.
type Store struct {
	mu    sync.RWMutex
	specs map[string]Spec
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{specs: map[string]Spec{}} }

// Put validates and stores specs, all or none.
func (st *Store) Put(specs ...Spec) error {
	l := &fielderr.List{}
	for i, s := range specs {
		l.Merge(fmt.Sprintf("objects[%d]", i), s.Validate(fmt.Sprintf("objects[%d]", i)))
	}
	if err := l.Err(); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, s := range specs {
		st.specs[s.Path] = s
	}
	return nil
}

// Get returns the spec for path: the stored one, or the default.
func (st *Store) Get(path string) Spec {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if s, ok := st.specs[path]; ok {
		return s
	}
	return Spec{Path: path}
}

// List returns the stored specs.
func (st *Store) List() []Spec {
	st.mu.RLock()
	defer st.mu.RUnlock()
	out := make([]Spec, 0, len(st.specs))
	for _, s := range st.specs {
		out = append(out, s)
	}
	return out
}

// Delete forgets path's spec and reports whether it was there.
func (st *Store) Delete(path string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.specs[path]
	delete(st.specs, path)
	return ok
}

// Reset forgets every spec.
func (st *Store) Reset() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.specs = map[string]Spec{}
}

// Serve answers r with the object s describes. now is the Date sent.
func Serve(w http.ResponseWriter, r *http.Request, s Spec, now time.Time) error {
	content, modTime, closeFn, err := s.open()
	if err != nil {
		return err
	}
	defer closeFn()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	if s.ContentType != "" {
		h.Set("Content-Type", s.ContentType)
	}
	switch {
	case s.ETag != nil && *s.ETag != "":
		h.Set("Etag", *s.ETag)
	case s.ETag == nil:
		h.Set("Etag", s.etag())
	}
	if s.CacheControl != "" {
		h.Set("Cache-Control", s.CacheControl)
	}
	h.Set("Date", now.UTC().Format(http.TimeFormat))
	for k, v := range s.Headers {
		h.Set(k, v)
	}
	if s.NoRanges {
		r = r.Clone(r.Context())
		r.Header.Del("Range")
		r.Header.Del("If-Range")
		w = noAcceptRanges{w}
	}
	http.ServeContent(w, r, "", modTime, content)
	return nil
}

func (s *Spec) etag() string {
	switch {
	case s.Body != nil:
		return synth.Object{Path: s.Path, Size: int64(len(*s.Body)), Version: s.version() + "\x00body:" + *s.Body}.ETag()
	case s.File != "":
		return synth.Object{Path: s.File, Size: 0, Version: s.version() + "\x00file"}.ETag()
	}
	return s.Synthetic().ETag()
}

func (s *Spec) open() (io.ReadSeeker, time.Time, func(), error) {
	var mod time.Time
	if s.LastModified != "" {
		t, err := parseTime(s.LastModified)
		if err != nil {
			return nil, mod, nil, fmt.Errorf("object %s: lastModified: %w", s.Path, err)
		}
		mod = t
	}
	nop := func() {}
	switch {
	case s.Body != nil:
		return strings.NewReader(*s.Body), orDefault(mod, s.Synthetic().LastModified()), nop, nil
	case s.File != "":
		f, err := os.Open(s.File)
		if err != nil {
			return nil, mod, nil, fmt.Errorf("object %s: opening file: %w", s.Path, err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, mod, nil, fmt.Errorf("object %s: reading file: %w", s.Path, err)
		}
		return f, orDefault(mod, st.ModTime()), func() { f.Close() }, nil
	}
	o := s.Synthetic()
	return o.NewReader(), orDefault(mod, o.LastModified()), nop, nil
}

func orDefault(t, d time.Time) time.Time {
	if t.IsZero() {
		return d
	}
	return t
}

// noAcceptRanges drops the Accept-Ranges header http.ServeContent adds.
type noAcceptRanges struct{ http.ResponseWriter }

func (w noAcceptRanges) WriteHeader(code int) {
	w.Header().Del("Accept-Ranges")
	w.ResponseWriter.WriteHeader(code)
}

func (w noAcceptRanges) Write(p []byte) (int, error) {
	w.Header().Del("Accept-Ranges")
	return w.ResponseWriter.Write(p)
}
