package edge

import (
	"testing"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

// CCH-4: a stored entry that must be revalidated before use (no-cache, or
// max-age=0) is revalidated with a conditional request; a 304 refreshes it
// and the stored body is served; a changed object replaces it.
func TestRevalidation(t *testing.T) {
	for _, tc := range []struct {
		name, cc string
		size     int64
	}{
		{"no-cache small", "no-cache", 4 << 10},
		{"max-age=0 small", "max-age=0", 4 << 10},
		{"no-cache chunked", "no-cache", ChunkSize + 4<<10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, cacheConfig)
			path := "/o/reval"
			size := tc.size
			r.put(objects.Spec{Path: path, Size: &size, CacheControl: tc.cc})
			v1 := synth.Object{Path: path, Size: size, Version: "1"}
			r.get(path)
			r.waitLogged(path, 1)
			before := len(r.journal(path))

			resp, body := r.get(path)
			if resp.StatusCode != 200 || synth.Verify(v1, 0, body) != nil || int64(len(body)) != size {
				t.Fatalf("revalidated GET: %d, %d bytes", resp.StatusCode, len(body))
			}
			if cs := resp.Header.Get("Cache-Status"); cs != "edgecache; fwd=stale; fwd-status=304" {
				t.Fatalf("revalidated GET: Cache-Status %q", cs)
			}
			reqs := r.waitEnded(path, before+1)
			cond := reqs[before]
			if inm, _ := header(cond, "If-None-Match"); inm != v1.ETag() || cond.Status != 304 {
				t.Fatalf("revalidation request: If-None-Match %q, status %d; want %s and 304", inm, cond.Status, v1.ETag())
			}
			r.originCount(path, before+1)
			r.waitLogged(path, 2)

			// A new version: the conditional request gets 200 and the
			// entry is replaced.
			r.put(objects.Spec{Path: path, Size: &size, CacheControl: tc.cc, Version: "2"})
			v2 := synth.Object{Path: path, Size: size, Version: "2"}
			resp, body = r.get(path)
			if resp.StatusCode != 200 || synth.Verify(v2, 0, body) != nil || int64(len(body)) != size || resp.Header.Get("Etag") != v2.ETag() {
				for i, jr := range r.journal(path) { // which requests reached the origin, and what they got
					inm, _ := header(jr, "If-None-Match")
					t.Logf("origin request %d: status %d INM %q", i, jr.Status, inm)
				}
				t.Logf("Cache-Status %q; v1's ETag %s, v2's %s", resp.Header.Get("Cache-Status"), v1.ETag(), v2.ETag())
				t.Fatalf("GET of the new version: %d, %d bytes, ETag %q", resp.StatusCode, len(body), resp.Header.Get("Etag"))
			}
			if cs := resp.Header.Get("Cache-Status"); cs != "edgecache; fwd=stale" {
				t.Fatalf("GET of the new version: Cache-Status %q", cs)
			}
		})
	}
}
