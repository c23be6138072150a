package entry

import (
	"net/http"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/reference/cache/store"
)

// put commits m under key in st.
func put(t *testing.T, st store.Store, key string, m Meta) {
	t.Helper()
	w, err := st.Begin(key)
	if err != nil {
		t.Fatal(err)
	}
	w.SetMeta(Encode(m))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// An entry's metadata round-trips through the store, is decoded once per
// entry (store.Noted: a hit costs no JSON decoding), and what describes a
// fill rather than an entry (Transient, Unstorable) is never stored.
func TestEncodeDecode(t *testing.T) {
	st := store.NewMemory(1 << 20)
	in := Meta{Status: 200, Header: http.Header{"Etag": {`"v1"`}}, TTL: 30 * time.Second, Chunked: true,
		Size: 5 << 20, Validator: `"v1"|`, Transient: true, Unstorable: "private"}
	put(t, st, "k", in)
	a, _ := st.Open("k")
	defer a.Close()
	b, _ := st.Open("k")
	defer b.Close()
	ma, err := Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if ma != mb {
		t.Error("two readers of one entry decoded its metadata twice")
	}
	if ma.Status != 200 || ma.TTL != in.TTL || ma.Size != in.Size || ma.Validator != in.Validator || ma.Header.Get("Etag") != `"v1"` {
		t.Errorf("decoded %+v, want %+v", *ma, in)
	}
	if ma.Transient || ma.Unstorable != "" {
		t.Errorf("a fill's Transient/Unstorable were stored: %+v", *ma)
	}
}

// Bad metadata is an error naming what was being decoded, never a panic.
func TestDecodeBadMeta(t *testing.T) {
	st := store.NewMemory(1 << 20)
	w, _ := st.Begin("k")
	w.SetMeta([]byte("{not json"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	rd, _ := st.Open("k")
	defer rd.Close()
	if _, err := Decode(rd); err == nil {
		t.Fatal("decoded bad metadata without an error")
	}
}

// RNG-5: the validator is ETag and Last-Modified together; an object with
// neither has none.
func TestValidatorOf(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		want string
	}{
		{http.Header{}, ""},
		{http.Header{"Etag": {` "a" `}}, `"a"|`},
		{http.Header{"Last-Modified": {"Mon, 01 Dec 2026 00:00:00 GMT"}}, "|Mon, 01 Dec 2026 00:00:00 GMT"},
		{http.Header{"Etag": {`"a"`}, "Last-Modified": {"x"}}, `"a"|x`},
	} {
		if got := ValidatorOf(tc.h); got != tc.want {
			t.Errorf("ValidatorOf(%v) = %q, want %q", tc.h, got, tc.want)
		}
	}
	if ChunkKey("k", 1) == ChunkKey("k", 2) || ChunkKey("k", 0) == "k" {
		t.Error("chunk keys collide")
	}
}

// DateField is the Date field parsed: once when the entry is decoded,
// again only for a copy whose Header was replaced, and not ok when the
// field is absent or invalid, decoded or not.
func TestDateField(t *testing.T) {
	date := time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		header http.Header
		want   time.Time
		ok     bool
	}{
		{"valid", http.Header{"Date": {date.Format(http.TimeFormat)}}, date, true},
		{"absent", http.Header{}, time.Time{}, false},
		{"invalid", http.Header{"Date": {"yesterday"}}, time.Time{}, false},
	} {
		st := store.NewMemory(1 << 20)
		put(t, st, "k", Meta{Status: 200, Header: c.header})
		rd, _ := st.Open("k")
		m, err := Decode(rd)
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		plain := Meta{Header: c.header}
		for _, mm := range []*Meta{m, &plain} {
			if got, ok := mm.DateField(); ok != c.ok || !got.Equal(c.want) {
				t.Errorf("%s: DateField = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
			}
		}
		if m.date == nil || m.date.text != c.header.Get("Date") {
			t.Errorf("%s: decoding kept no parsed date", c.name)
		}
		later := date.Add(time.Hour)
		cp := *m
		cp.Header = http.Header{"Date": {later.Format(http.TimeFormat)}}
		if got, ok := cp.DateField(); !ok || !got.Equal(later) {
			t.Errorf("%s: a copy with a new Date: DateField = %v, %v; want %v", c.name, got, ok, later)
		}
	}
	// The decoded date is what DateField answers: a memo that disagreed
	// with the field's text would never be used.
	memo := &Meta{Header: http.Header{"Date": {"x"}}, date: &parsedDate{text: "x", t: date, ok: true}}
	if got, ok := memo.DateField(); !ok || !got.Equal(date) {
		t.Errorf("DateField did not use the parsed date kept beside the entry: %v, %v", got, ok)
	}
}
