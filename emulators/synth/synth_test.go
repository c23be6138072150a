package synth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

func TestDeterminism(t *testing.T) {
	tests := []Object{
		{},
		{Path: "/a", Size: 1, Version: "v1"},
		{Path: "/b/c.bin", Size: 4097, Version: "v2"},
		{Path: "/big", Size: 1 << 20, Version: ""},
	}
	for _, o := range tests {
		t.Run(o.Path+"@"+o.Version, func(t *testing.T) {
			a, b := o.Bytes(), o.Bytes()
			if int64(len(a)) != o.Size {
				t.Fatalf("len(Bytes()) = %d, want %d", len(a), o.Size)
			}
			if !bytes.Equal(a, b) {
				t.Fatal("Bytes() not deterministic")
			}
			o2 := Object{Path: o.Path, Size: o.Size, Version: o.Version}
			if o.Seed() != o2.Seed() || o.ETag() != o2.ETag() || !o.LastModified().Equal(o2.LastModified()) {
				t.Fatal("metadata not deterministic")
			}
			if err := Verify(o, 0, a); err != nil {
				t.Fatalf("Verify(Bytes()) = %v", err)
			}
		})
	}
}

func TestDistinct(t *testing.T) {
	base := Object{Path: "/obj", Size: 256, Version: "v1"}
	tests := []struct {
		name  string
		other Object
	}{
		{"path", Object{Path: "/obj2", Size: 256, Version: "v1"}},
		{"version", Object{Path: "/obj", Size: 256, Version: "v2"}},
		{"size", Object{Path: "/obj", Size: 257, Version: "v1"}},
		{"path/version boundary", Object{Path: "/objv", Size: 256, Version: "1"}},
		{"empty version", Object{Path: "/obj", Size: 256}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if base.Seed() == tt.other.Seed() {
				t.Fatal("same seed")
			}
			if base.ETag() == tt.other.ETag() {
				t.Fatal("same ETag")
			}
			a, b := base.Bytes(), tt.other.Bytes()
			if bytes.Equal(a, b[:len(a)]) {
				t.Fatal("same content")
			}
			if err := Verify(tt.other, 0, a); err == nil {
				t.Fatal("Verify accepted another object's content")
			}
		})
	}
}

func TestNoShortPeriod(t *testing.T) {
	o := Object{Path: "/period", Size: 1 << 20, Version: "v"}
	b := o.Bytes()
	seen := make(map[uint64]int64, len(b)/8)
	for i := 0; i+8 <= len(b); i += 8 {
		var w uint64
		for j := 7; j >= 0; j-- {
			w = w<<8 | uint64(b[i+j])
		}
		if prev, ok := seen[w]; ok {
			t.Fatalf("word at %d repeats word at %d", i, prev)
		}
		seen[w] = int64(i)
	}
}

func TestMetadata(t *testing.T) {
	o := Object{Path: "/m", Size: 10, Version: "v"}
	etag := o.ETag()
	if len(etag) != 18 || etag[0] != '"' || etag[17] != '"' {
		t.Fatalf("ETag = %s, want quoted 16 hex digits", etag)
	}
	if _, err := strconv.ParseUint(etag[1:17], 16, 64); err != nil {
		t.Fatalf("ETag %s not hex: %v", etag, err)
	}
	lm := o.LastModified()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if lm.Before(start) || !lm.Before(start.AddDate(1, 0, 0)) || lm.Location() != time.UTC || lm.Nanosecond() != 0 {
		t.Fatalf("LastModified = %v, want UTC whole seconds within 2026", lm)
	}
}

func TestReadAtRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int64{0, 1, 7, 8, 9, 31, 32, 33, 100, 4096, 65537} {
		o := Object{Path: "/r/" + strconv.FormatInt(size, 10), Size: size, Version: "v"}
		want := o.Bytes()
		for range 300 {
			off := rng.Int64N(size + 3)
			n := rng.IntN(int(size) + 10)
			p := make([]byte, n)
			got, err := o.ReadAt(p, off)
			if off >= size {
				if got != 0 || err != io.EOF {
					t.Fatalf("size %d ReadAt(len %d, %d) = %d, %v; want 0, EOF", size, n, off, got, err)
				}
				continue
			}
			wantN := min(int64(n), size-off)
			if int64(got) != wantN {
				t.Fatalf("size %d ReadAt(len %d, %d) n = %d, want %d", size, n, off, got, wantN)
			}
			if int64(n) > size-off && err != io.EOF {
				t.Fatalf("size %d ReadAt(len %d, %d) short read err = %v, want EOF", size, n, off, err)
			}
			if int64(n) <= size-off && err != nil {
				t.Fatalf("size %d ReadAt(len %d, %d) err = %v", size, n, off, err)
			}
			if !bytes.Equal(p[:got], want[off:off+int64(got)]) {
				t.Fatalf("size %d ReadAt(len %d, %d) content mismatch", size, n, off)
			}
			if err := Verify(o, off, p[:got]); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		}
	}
}

func TestReadAtErrors(t *testing.T) {
	o := Object{Path: "/e", Size: 16}
	tests := []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantErr error
		anyErr  bool
	}{
		{"negative", -1, 4, 0, nil, true},
		{"at end", 16, 4, 0, io.EOF, false},
		{"past end", 100, 4, 0, io.EOF, false},
		{"short at end", 14, 4, 2, io.EOF, false},
		{"exact end", 12, 4, 4, nil, false},
		{"empty buf", 0, 0, 0, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := o.ReadAt(make([]byte, tt.n), tt.off)
			if n != tt.wantN {
				t.Errorf("n = %d, want %d", n, tt.wantN)
			}
			if tt.anyErr {
				if err == nil {
					t.Error("err = nil, want error")
				}
			} else if err != tt.wantErr {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if n, err := (Object{Size: -5}).ReadAt(make([]byte, 1), 0); n != 0 || err != io.EOF {
		t.Errorf("negative size: ReadAt = %d, %v; want 0, EOF", n, err)
	}
}

func TestSeek(t *testing.T) {
	o := Object{Path: "/s", Size: 100, Version: "v"}
	all := o.Bytes()
	r := o.NewReader()
	steps := []struct {
		off     int64
		whence  int
		wantPos int64
		wantErr bool
	}{
		{10, io.SeekStart, 10, false},
		{5, io.SeekCurrent, 15, false},
		{-20, io.SeekCurrent, 15, true}, // negative: error, position unchanged
		{-3, io.SeekEnd, 97, false},
		{0, io.SeekEnd, 100, false},
		{50, io.SeekEnd, 150, false}, // past end allowed
		{-1, io.SeekStart, 150, true},
		{0, 42, 150, true}, // bad whence
		{1, io.SeekStart, 1, false},
	}
	for i, s := range steps {
		pos, err := r.Seek(s.off, s.whence)
		if (err != nil) != s.wantErr {
			t.Fatalf("step %d: Seek(%d, %d) err = %v, wantErr %v", i, s.off, s.whence, err, s.wantErr)
		}
		if !s.wantErr && pos != s.wantPos {
			t.Fatalf("step %d: Seek(%d, %d) = %d, want %d", i, s.off, s.whence, pos, s.wantPos)
		}
		if cur, _ := r.Seek(0, io.SeekCurrent); cur != s.wantPos {
			t.Fatalf("step %d: position = %d, want %d", i, cur, s.wantPos)
		}
		if s.wantPos < o.Size && !s.wantErr {
			p := make([]byte, 3)
			n, err := r.Read(p)
			if err != nil || !bytes.Equal(p[:n], all[s.wantPos:s.wantPos+int64(n)]) {
				t.Fatalf("step %d: Read after seek = %d, %v, wrong bytes", i, n, err)
			}
			if _, err := r.Seek(s.wantPos, io.SeekStart); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Reading past the end yields EOF.
	if _, err := r.Seek(150, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Fatalf("Read past end = %d, %v; want 0, EOF", n, err)
	}
}

func TestReaderReadAll(t *testing.T) {
	for _, size := range []int64{0, 1, 8, 1000, 200_003} {
		o := Object{Path: "/all", Size: size, Version: "v"}
		want := o.Bytes()
		// Via Read (iotest-style small reads).
		var buf bytes.Buffer
		r := o.NewReader()
		p := make([]byte, 13)
		for {
			n, err := r.Read(p)
			buf.Write(p[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("size %d: Read loop content mismatch", size)
		}
		// Via WriteTo from a non-zero position.
		r = o.NewReader()
		start := size / 3
		if _, err := r.Seek(start, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		buf.Reset()
		n, err := io.Copy(&buf, r)
		if err != nil || n != size-start || !bytes.Equal(buf.Bytes(), want[start:]) {
			t.Fatalf("size %d: io.Copy = %d, %v; content match %v", size, n, err, bytes.Equal(buf.Bytes(), want[start:]))
		}
	}
}

func TestVerify(t *testing.T) {
	o := Object{Path: "/v", Size: 10_000, Version: "v"}
	all := o.Bytes()
	tests := []struct {
		name       string
		off        int64
		data       func() []byte
		wantOffset int64 // -1: expect nil; -2: expect a non-mismatch error
	}{
		{"match", 123, func() []byte { return bytes.Clone(all[123:9000]) }, -1},
		{"empty", 10_000, func() []byte { return nil }, -1},
		{"one byte changed", 100, func() []byte {
			b := bytes.Clone(all[100:9000])
			b[5000] ^= 0x01
			return b
		}, 5100},
		{"shifted range", 4096, func() []byte { return bytes.Clone(all[4097:5000]) }, 4096},
		{"shifted by a word", 4096, func() []byte { return bytes.Clone(all[4104:5000]) }, 4096},
		{"past end", 9_990, func() []byte { return make([]byte, 20) }, -2},
		{"negative", -1, func() []byte { return make([]byte, 1) }, -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(o, tt.off, tt.data())
			switch tt.wantOffset {
			case -1:
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
			case -2:
				var me *MismatchError
				if err == nil || errors.As(err, &me) {
					t.Fatalf("Verify = %v, want range error", err)
				}
			default:
				var me *MismatchError
				if !errors.As(err, &me) {
					t.Fatalf("Verify = %v, want *MismatchError", err)
				}
				if me.Offset != tt.wantOffset {
					t.Fatalf("mismatch offset = %d, want %d (%v)", me.Offset, tt.wantOffset, err)
				}
			}
		})
	}
}

func TestServeContentRange(t *testing.T) {
	o := Object{Path: "/served.bin", Size: 1<<20 + 3, Version: "v7"}
	all := o.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", o.ETag())
		http.ServeContent(w, r, o.Path, o.LastModified(), o.NewReader())
	}))
	defer srv.Close()

	tests := []struct {
		rangeHdr   string
		wantStatus int
		from, to   int64 // inclusive-exclusive slice of all
	}{
		{"", http.StatusOK, 0, o.Size},
		{"bytes=0-0", http.StatusPartialContent, 0, 1},
		{"bytes=1001-70000", http.StatusPartialContent, 1001, 70001},
		{"bytes=-5", http.StatusPartialContent, o.Size - 5, o.Size},
		{"bytes=1048570-", http.StatusPartialContent, 1048570, o.Size},
	}
	for _, tt := range tests {
		t.Run(tt.rangeHdr, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+o.Path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.rangeHdr != "" {
				req.Header.Set("Range", tt.rangeHdr)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if !bytes.Equal(body, all[tt.from:tt.to]) {
				t.Fatalf("body (%d bytes) != content[%d:%d]", len(body), tt.from, tt.to)
			}
			if err := Verify(o, tt.from, body); err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("Last-Modified"); got != o.LastModified().Format(http.TimeFormat) {
				t.Fatalf("Last-Modified = %q", got)
			}
		})
	}

	// Conditional request with the ETag yields 304.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+o.Path, nil)
	req.Header.Set("If-None-Match", o.ETag())
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match status = %d, want 304", resp.StatusCode)
	}
}

// TestStreamingConstantMemory checks that allocations while streaming do not
// grow with the object size.
func TestStreamingConstantMemory(t *testing.T) {
	allocs := func(size int64) float64 {
		o := Object{Path: "/stream", Size: size, Version: "v"}
		return testing.AllocsPerRun(2, func() {
			n, err := io.Copy(io.Discard, o.NewReader())
			if err != nil || n != size {
				t.Fatalf("io.Copy = %d, %v", n, err)
			}
		})
	}
	small, large := allocs(1<<20), allocs(32<<20)
	if large > small {
		t.Fatalf("allocations grow with size: %v for 1 MiB, %v for 32 MiB", small, large)
	}
}

func BenchmarkReadAt(b *testing.B) {
	o := Object{Path: "/bench", Size: 1 << 40, Version: "v"}
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		if _, err := o.ReadAt(buf, off); err != nil {
			b.Fatal(err)
		}
		off += int64(len(buf))
	}
}

func BenchmarkReadAtUnaligned(b *testing.B) {
	o := Object{Path: "/bench", Size: 1 << 40, Version: "v"}
	buf := make([]byte, 32<<10-3)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	off := int64(5)
	for b.Loop() {
		if _, err := o.ReadAt(buf, off); err != nil {
			b.Fatal(err)
		}
		off += int64(len(buf))
	}
}

// BenchmarkServe10GiB streams a 10 GiB object through io.Copy; allocations
// per op must stay constant (they do not scale with size).
func BenchmarkServe10GiB(b *testing.B) {
	const size = 10 << 30
	o := Object{Path: "/huge", Size: size, Version: "v"}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		n, err := io.Copy(io.Discard, o.NewReader())
		if err != nil || n != size {
			b.Fatalf("io.Copy = %d, %v", n, err)
		}
	}
}

// BenchmarkServe10GiBRead is like BenchmarkServe10GiB but hides WriterTo, so
// the copy goes through Read with io.Copy's own buffer (as http.ServeContent
// does via io.CopyN).
func BenchmarkServe10GiBRead(b *testing.B) {
	const size = 10 << 30
	o := Object{Path: "/huge", Size: size, Version: "v"}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		n, err := io.Copy(io.Discard, struct{ io.Reader }{o.NewReader()})
		if err != nil || n != size {
			b.Fatalf("io.Copy = %d, %v", n, err)
		}
	}
}

func TestSeedMatchesFNV(t *testing.T) {
	o := Object{Path: "/p", Size: 0x0102, Version: "ver"}
	h := fnv.New64a()
	var b [8]byte
	for _, part := range []any{uint64(len(o.Path)), o.Path, uint64(o.Size), uint64(len(o.Version)), o.Version} {
		switch v := part.(type) {
		case uint64:
			binary.LittleEndian.PutUint64(b[:], v)
			h.Write(b[:])
		case string:
			h.Write([]byte(v))
		}
	}
	if got, want := o.Seed(), mix64(h.Sum64()); got != want {
		t.Fatalf("Seed = %#x, want %#x", got, want)
	}
}
