package session

import "testing"

// firstChunk and firstOffset read client Range fields, which are
// arbitrary: they must never panic and stay within the object.
func FuzzRangeStart(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=-100", "bytes=5000000-", "bytes=1-2,3-4", "bytes=", "bytes=-", "bytes=99999999999999999999-", "items=0-1", "bytes=-0"} {
		f.Add(s, int64(5<<20))
	}
	f.Fuzz(func(t *testing.T, rng string, size int64) {
		if size <= 0 {
			size = 1
		}
		if c := firstChunk(rng); c < 0 {
			t.Fatalf("firstChunk(%q) = %d", rng, c)
		}
		if off := firstOffset(rng, size); off < 0 || off >= size {
			t.Fatalf("firstOffset(%q, %d) = %d, outside the object", rng, size, off)
		}
	})
}

func TestRangeStart(t *testing.T) {
	for _, tc := range []struct {
		rng        string
		chunk, off int64
	}{
		{"bytes=0-9", 0, 0},
		{"bytes=3000000-3000099", 1, 3000000},
		{"bytes=-100", 0, 5<<20 - 100},
		{"bytes=4194304-, 0-1", 2, 4194304},
		{"bytes=9999999-", 4, 0}, // past the end: ServeContent answers 416
		{"items=1-2", 0, 0},
	} {
		if c, o := firstChunk(tc.rng), firstOffset(tc.rng, 5<<20); c != tc.chunk || o != tc.off {
			t.Errorf("%q: chunk %d offset %d, want %d %d", tc.rng, c, o, tc.chunk, tc.off)
		}
	}
}
