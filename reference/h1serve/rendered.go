package h1serve

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
)

// Fields is a response's header fields rendered once, as this server
// writes them, for a handler that sends the same fields in many responses
// (a cache hit's stored fields: issue #14) but for one whose value
// changes (the hit's Age). Writing them costs a copy: no header map, no
// sort, no check per field. Make it with [Render]; send it with
// [FieldsWriter].
type Fields struct {
	name          string // the field whose value each response gives
	before, after []byte // the fields that sort before and after name
	cl            int64  // the Content-Length field's value, -1 for none
	contentType   bool   // a Content-Type field is present (no sniffing)
	te            bool   // a Transfer-Encoding value is present (no sniffing)
	date          bool   // a Date field is present
	close, keep   bool   // Connection has the close, keep-alive token
}

// Render renders h's fields, less name, as writeFields would write them
// (sorted, invalid names and Transfer-Encoding skipped, CR and LF in
// values as spaces), split where a field called name sorts. It returns
// nil if h has an invalid Content-Length (WriteHeader would drop it) or
// name is not a canonical field name.
func Render(h http.Header, name string) *Fields {
	if name == "" || http.CanonicalHeaderKey(name) != name {
		return nil
	}
	f := &Fields{name: name, cl: -1}
	if v := h.Get("Content-Length"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return nil
		}
		f.cl = n
	}
	_, f.contentType = h["Content-Type"]
	_, f.date = h["Date"]
	f.te = h.Get("Transfer-Encoding") != ""
	f.close, f.keep = hasToken(h["Connection"], "close"), hasToken(h["Connection"], "keep-alive")
	keys := make([]string, 0, len(h))
	for k := range h {
		if k != name {
			keys = append(keys, k)
		}
	}
	var before, after bytes.Buffer
	for _, k := range sortedFields(keys) {
		out := &after
		if k < name {
			out = &before
		}
		for _, v := range h[k] {
			writeField(out, k, v)
		}
	}
	f.before, f.after = before.Bytes(), after.Bytes()
	return f
}

// BuffersWriter is the http.ResponseWriter of this server: a handler whose
// body lies in several buffers (a stored entry's chunks) may write them
// in one gathered write (writev) with the head, where a Write per buffer
// costs a system call each and, on loopback, leaves a short TCP segment
// after each 64 KiB (see the memory store's WriteTo). It takes effect
// for a response with a Content-Length; otherwise it is Write of each.
type BuffersWriter interface {
	WriteBuffers(bufs [][]byte) (int64, error)
}

// FieldsWriter is the http.ResponseWriter of this server: a handler may
// send rendered fields through it (type-assert; other servers' writers
// are not one).
type FieldsWriter interface {
	// WriteFields is WriteHeader(code) with f's fields and name: value,
	// where name is the one f was rendered without; the response's
	// header map is not read. It reports false, and does nothing, for a
	// code without a body (1xx, 204, 304: their fields differ), an
	// invalid code, a nil f, or after WriteHeader, a write or a failure.
	WriteFields(code int, f *Fields, value string) bool
}

// WriteFields implements FieldsWriter.
func (w *response) WriteFields(code int, f *Fields, value string) bool {
	if w.wrote || w.err != nil || f == nil || code < 200 || code > 999 || !bodyAllowed(code) {
		return false
	}
	w.wrote, w.status = true, code
	w.fields, w.fieldValue = f, value
	w.cl = f.cl
	w.noBody = w.req.Method == http.MethodHead
	return true
}
