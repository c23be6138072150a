package blobstore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func stores(t *testing.T, max int64) map[string]*Store {
	t.Helper()
	out := map[string]*Store{}
	for name, dir := range map[string]string{"memory": "", "disk": t.TempDir()} {
		s, err := New(Config{Dir: dir, MaxBytes: max})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = s
	}
	return out
}

func TestWriteReadBack(t *testing.T) {
	for name, s := range stores(t, 0) {
		t.Run(name, func(t *testing.T) {
			w, err := s.Create("crc32", "crc32c", "crc64nvme", "sha1", "sha256")
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, "1234")
			io.WriteString(w, "56789")
			d := w.Digests()
			b, err := w.Commit()
			if err != nil {
				t.Fatal(err)
			}
			// The standard check values of each algorithm for "123456789".
			for alg, want := range map[string]string{
				"md5": "25f9e794323b453885f5181f1b624d0b", "crc32": "cbf43926", "crc32c": "e3069283",
				"crc64nvme": "ae8b14860a799888", "sha1": "f7c3bc1d808e04732adf679965ccc34ca7ae3441",
				"sha256": "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225",
			} {
				if got := d.Hex(alg); got != want {
					t.Errorf("%s = %s, want %s", alg, got, want)
				}
			}
			if b.Size() != 9 || s.Used() != 9 {
				t.Errorf("size %d, used %d, want 9 and 9", b.Size(), s.Used())
			}
			r, err := b.Open()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if string(got) != "123456789" {
				t.Errorf("read back %q", got)
			}
			c, err := s.Copy(b)
			if err != nil {
				t.Fatal(err)
			}
			b.Release()
			b.Release()
			r, err = c.Open()
			if err != nil {
				t.Fatal(err)
			}
			got, _ = io.ReadAll(r)
			r.Close()
			if string(got) != "123456789" || s.Used() != 9 {
				t.Errorf("copy after releasing the original: %q, used %d", got, s.Used())
			}
			c.Release()
			if s.Used() != 0 {
				t.Errorf("used %d after releasing everything", s.Used())
			}
			if s.OnDisk() {
				left, _ := filepath.Glob(filepath.Join(s.dir, "blobs", "*"))
				if len(left) != 0 {
					t.Errorf("files left: %v", left)
				}
			}
		})
	}
}

func TestBoundAndAbort(t *testing.T) {
	for name, s := range stores(t, 10) {
		t.Run(name, func(t *testing.T) {
			a, err := s.Bytes([]byte("123456"))
			if err != nil {
				t.Fatal(err)
			}
			w, _ := s.Create()
			if _, err := w.Write([]byte("12345")); !errors.Is(err, ErrFull) {
				t.Fatalf("write past the bound: %v, want ErrFull", err)
			}
			if _, err := w.Commit(); !errors.Is(err, ErrFull) {
				t.Fatalf("commit after ErrFull: %v", err)
			}
			if s.Used() != 6 {
				t.Fatalf("used %d after a failed write, want 6", s.Used())
			}
			w, _ = s.Create()
			w.Write([]byte("1234"))
			w.Abort()
			a.Release()
			if s.Used() != 0 {
				t.Fatalf("used %d, want 0", s.Used())
			}
			if _, err := s.Bytes([]byte("0123456789")); err != nil {
				t.Fatalf("10 bytes in a 10-byte store: %v", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	s, _ := New(Config{Dir: dir})
	b, _ := s.Bytes([]byte("persisted"))
	os.WriteFile(filepath.Join(dir, "blobs", "junk.tmp"), []byte("x"), 0o644)
	s2, err := New(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s2.Load(b.Name())
	if err != nil || l.Size() != 9 || s2.Used() != 9 {
		t.Fatalf("Load: %v, %v", l, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", "junk.tmp")); !os.IsNotExist(err) {
		t.Errorf("an interrupted write's temporary file survived a restart")
	}
	for _, bad := range []string{"", "../x", "missing"} {
		if _, err := s2.Load(bad); err == nil {
			t.Errorf("Load(%q) succeeded", bad)
		}
	}
	if _, err := New(Config{MaxBytes: -1}); err == nil {
		t.Error("negative MaxBytes accepted")
	}
}

// A body that sends 10 of its bytes and then nothing fails after the
// timeout with ErrReadTimeout; one that keeps sending is read whole.
func TestTimeoutReader(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("0123456789"))
	const timeout = 200 * time.Millisecond
	tr := NewTimeoutReader(pr, timeout)
	start := time.Now()
	got, err := io.ReadAll(tr)
	if !errors.Is(err, ErrReadTimeout) {
		t.Fatalf("stalled body: %v, want ErrReadTimeout", err)
	}
	if el := time.Since(start); el < timeout {
		t.Errorf("gave up after %v, before the %v timeout", el, timeout)
	}
	if string(got) != "0123456789" {
		t.Errorf("read %q before the stall", got)
	}
	pw.CloseWithError(errors.New("connection closed")) // ends the helper

	body := bytes.Repeat([]byte("x"), 1<<20)
	got, err = io.ReadAll(NewTimeoutReader(bytes.NewReader(body), time.Minute))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("flowing body: %d bytes, %v", len(got), err)
	}
}

func TestTruncate(t *testing.T) {
	for name, s := range stores(t, 0) {
		t.Run(name, func(t *testing.T) {
			w, _ := s.Create("crc32c")
			io.WriteString(w, "hello, wor")
			if err := w.Truncate(5); err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, " there")
			if w.Digests() != nil {
				t.Error("digests after a truncate")
			}
			if err := w.Truncate(100); err == nil {
				t.Error("truncate past the end accepted")
			}
			b, err := w.Commit()
			if err != nil {
				t.Fatal(err)
			}
			r, _ := b.Open()
			got, _ := io.ReadAll(r)
			r.Close()
			if string(got) != "hello there" || s.Used() != 11 {
				t.Fatalf("got %q, used %d", got, s.Used())
			}
		})
	}
}

func TestConcat(t *testing.T) {
	for name, s := range stores(t, 0) {
		t.Run(name, func(t *testing.T) {
			a, _ := s.Bytes([]byte("1234"))
			b, _ := s.Bytes([]byte("56789"))
			for _, digests := range [][]string{nil, {"crc32c"}} {
				c, d, err := s.Concat([]*Blob{a, b}, digests...)
				if err != nil {
					t.Fatal(err)
				}
				r, _ := c.Open()
				got, _ := io.ReadAll(r)
				r.Close()
				if string(got) != "123456789" || c.Size() != 9 {
					t.Fatalf("concat %q", got)
				}
				if digests != nil && d.Hex("crc32c") != "e3069283" {
					t.Fatalf("crc32c %s", d.Hex("crc32c"))
				}
				c.Release()
			}
			if s.Used() != 9 {
				t.Fatalf("used %d", s.Used())
			}
		})
	}
}

func TestSweep(t *testing.T) {
	dir := t.TempDir()
	s, _ := New(Config{Dir: dir})
	keep, _ := s.Bytes([]byte("keep"))
	s.Bytes([]byte("orphan"))
	s2, _ := New(Config{Dir: dir})
	if err := s2.Sweep(func(n string) bool { return n == keep.Name() }); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "blobs", "*"))
	if len(left) != 1 || filepath.Base(left[0]) != keep.Name() {
		t.Fatalf("left %v", left)
	}
}
