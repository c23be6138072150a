package gcsemu

import (
	"maps"
	"net/http"
	"strings"
)

// attrs are an object's writable metadata, on both APIs: the JSON API's
// fields and the XML API's headers (x-goog-meta-* for Metadata).
type attrs struct {
	contentType        string
	cacheControl       string
	contentDisposition string
	contentEncoding    string
	contentLanguage    string
	metadata           map[string]string
}

// attrsJSON is attrs as the JSON API writes and reads them (an upload's
// metadata, a PATCH body, a copy's destination resource). A nil metadata
// value in a PATCH deletes that key.
type attrsJSON struct {
	ContentType        *string            `json:"contentType,omitempty"`
	CacheControl       *string            `json:"cacheControl,omitempty"`
	ContentDisposition *string            `json:"contentDisposition,omitempty"`
	ContentEncoding    *string            `json:"contentEncoding,omitempty"`
	ContentLanguage    *string            `json:"contentLanguage,omitempty"`
	Metadata           map[string]*string `json:"metadata,omitempty"`
}

// apply sets the fields j gives (PATCH semantics).
func (a *attrs) apply(j attrsJSON) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&a.contentType, j.ContentType)
	set(&a.cacheControl, j.CacheControl)
	set(&a.contentDisposition, j.ContentDisposition)
	set(&a.contentEncoding, j.ContentEncoding)
	set(&a.contentLanguage, j.ContentLanguage)
	if j.Metadata != nil {
		m := maps.Clone(a.metadata)
		if m == nil {
			m = map[string]string{}
		}
		for k, v := range j.Metadata {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = *v
			}
		}
		a.metadata = m
	}
}

// headerAttrs reads the XML API's metadata headers.
func headerAttrs(h http.Header) attrs {
	a := attrs{contentType: h.Get("Content-Type"), cacheControl: h.Get("Cache-Control"),
		contentDisposition: h.Get("Content-Disposition"), contentEncoding: h.Get("Content-Encoding"),
		contentLanguage: h.Get("Content-Language")}
	for k, v := range h {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-goog-meta-"); ok && name != "" && len(v) > 0 {
			if a.metadata == nil {
				a.metadata = map[string]string{}
			}
			a.metadata[name] = v[0]
		}
	}
	return a
}

// setHeaders writes a's headers on an XML API (or media) response; the
// caller sets Content-Type and Cache-Control.
func (a *attrs) setHeaders(h http.Header) {
	for k, v := range map[string]string{"Content-Disposition": a.contentDisposition, "Content-Encoding": a.contentEncoding, "Content-Language": a.contentLanguage} {
		if v != "" {
			h.Set(k, v)
		}
	}
	for k, v := range a.metadata {
		h["x-goog-meta-"+k] = []string{v}
	}
}
