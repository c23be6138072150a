package edge

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

const largeSize = 5<<20 + 12345 // three chunks, the last one short

func (r *rig) putLarge(path, version string) synth.Object {
	r.t.Helper()
	size := int64(largeSize)
	r.put(objects.Spec{Path: path, Size: &size, Version: version, CacheControl: "max-age=60"})
	return synth.Object{Path: path, Size: size, Version: version}
}

// ranges lists the Range fields of the origin requests under path.
func (r *rig) ranges(path string) []string {
	var out []string
	for _, q := range r.journal(path) {
		out = append(out, q.Range)
	}
	return out
}

func chunkRange(i int64) string {
	first := i * ChunkSize
	return fmt.Sprintf("bytes=%d-%d", first, min(first+ChunkSize, largeSize)-1)
}

// RNG-1, RNG-2: a cold GET of a 5 MiB object is filled with three range
// requests of at most 2 MiB; the client gets the whole object as one 200;
// the next GET is a hit that reaches no origin.
func TestLargeObjectFilledInChunks(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/large"
	obj := r.putLarge(path, "1")
	resp, body := r.get(path)
	if resp.StatusCode != 200 || int64(len(body)) != obj.Size || resp.ContentLength != obj.Size {
		t.Fatalf("GET: %d, %d bytes, Content-Length %d", resp.StatusCode, len(body), resp.ContentLength)
	}
	if err := synth.Verify(obj, 0, body); err != nil {
		t.Fatal(err)
	}
	r.originCount(path, 3)
	want := []string{chunkRange(0), chunkRange(1), chunkRange(2)}
	if got := r.ranges(path); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("origin ranges %q, want %q", got, want)
	}
	r.waitLogged(path, 1)
	resp, body = r.get(path)
	if resp.Header.Get("Cache-Status") != "edgecache; hit" || synth.Verify(obj, 0, body) != nil || int64(len(body)) != obj.Size {
		t.Fatalf("second GET: Cache-Status %q, %d bytes", resp.Header.Get("Cache-Status"), len(body))
	}
	r.originCount(path, 3)
}

// RNG-3: client ranges on a cold cache fill only the chunks they touch, and
// every kind of range is answered from the cached chunks.
func TestLargeObjectClientRanges(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/ranges"
	obj := r.putLarge(path, "1")
	etag := obj.ETag()
	size := obj.Size
	for _, tc := range []struct {
		name        string
		hdr         []string
		status      int
		first, last int64    // the expected single range (status 206) or whole body (200)
		newFills    []string // origin ranges this request adds
	}{
		{"middle of chunk 1", []string{"Range", "bytes=3000000-3000099"}, 206, 3000000, 3000099, []string{chunkRange(1)}},
		{"suffix", []string{"Range", "bytes=-100"}, 206, size - 100, size - 1, []string{chunkRange(2)}},
		{"open-ended across chunks 1-2", []string{"Range", "bytes=4194000-"}, 206, 4194000, size - 1, nil},
		{"If-Range matching", []string{"Range", "bytes=10-19", "If-Range", etag}, 206, 10, 19, []string{chunkRange(0)}},
		{"If-Range not matching", []string{"Range", "bytes=10-19", "If-Range", `"other"`}, 200, 0, size - 1, nil},
		{"past the end", []string{"Range", fmt.Sprintf("bytes=%d-", size)}, 416, 0, -1, nil},
		{"If-None-Match", []string{"If-None-Match", etag}, 304, 0, -1, nil},
	} {
		before := len(r.journal(path))
		resp, body := r.get(path, tc.hdr...)
		if resp.StatusCode != tc.status {
			t.Fatalf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
		if n := tc.last - tc.first + 1; int64(len(body)) != max(n, 0) && tc.status != 416 {
			t.Fatalf("%s: %d bytes, want %d", tc.name, len(body), n)
		}
		if tc.status == 206 || tc.status == 200 {
			if err := synth.Verify(obj, tc.first, body); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if tc.status == 206 {
			if want := fmt.Sprintf("bytes %d-%d/%d", tc.first, tc.last, size); resp.Header.Get("Content-Range") != want {
				t.Fatalf("%s: Content-Range %q, want %q", tc.name, resp.Header.Get("Content-Range"), want)
			}
		}
		if tc.status == 416 && resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
			t.Fatalf("%s: Content-Range %q", tc.name, resp.Header.Get("Content-Range"))
		}
		r.waitLogged(path, 1)
		got := r.ranges(path)[before:]
		if strings.Join(got, " ") != strings.Join(tc.newFills, " ") {
			t.Fatalf("%s: origin ranges %q, want %q", tc.name, got, tc.newFills)
		}
	}

	// A multipart range is answered as multipart/byteranges from the
	// chunks (RNG-3).
	resp, body := r.get(path, "Range", "bytes=0-9,5000000-5000009")
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != 206 || err != nil || mt != "multipart/byteranges" {
		t.Fatalf("multipart: %d %q %v", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for _, first := range []int64{0, 5000000} {
		part, err := mr.NextPart()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(part)
		if len(data) != 10 || synth.Verify(obj, first, data) != nil ||
			part.Header.Get("Content-Range") != fmt.Sprintf("bytes %d-%d/%d", first, first+9, size) {
			t.Fatalf("part at %d: %q, %d bytes", first, part.Header.Get("Content-Range"), len(data))
		}
	}
	if n := len(r.journal(path)); n != 3 {
		t.Fatalf("%d origin requests, want 3 (one per chunk)", n)
	}
}

// RNG-5: a validator that changes between chunk fills is never served as
// a mix. Before anything is sent the request restarts on the new version;
// after the head is sent the response is truncated; the next request gets
// the new version whole.
func TestLargeObjectVersionChange(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/versions"
	r.putLarge(path, "1")
	if resp, body := r.get(path, "Range", "bytes=0-99"); resp.StatusCode != 206 || len(body) != 100 {
		t.Fatalf("first range: %d, %d bytes", resp.StatusCode, len(body))
	}
	r.waitLogged(path, 1)
	v2 := r.putLarge(path, "2")

	// Chunk 1 is not cached: its fill sees version 2; nothing was sent yet.
	resp, body := r.get(path, "Range", "bytes=3000000-3000099")
	if resp.StatusCode != 206 || synth.Verify(v2, 3000000, body) != nil || resp.Header.Get("Etag") != v2.ETag() {
		t.Fatalf("range after the change: %d, ETag %q, want version 2: %s", resp.StatusCode, resp.Header.Get("Etag"), body[:min(len(body), 300)])
	}
	r.waitLogged(path, 2)

	// Another object: version 1's chunk 0 is cached, the rest is not;
	// version 2 arrives; a whole GET sends chunk 0's head, then chunk 1's
	// fill sees version 2: the response is cut, never mixed.
	const path2 = "/o/versions2"
	r.putLarge(path2, "1")
	r.get(path2, "Range", "bytes=0-99")
	r.waitLogged(path2, 1)
	v2b := r.putLarge(path2, "2")
	_, body, err := r.do("GET", "client.example", path2)
	if err == nil {
		t.Fatalf("a whole GET spanning two versions completed (%d bytes); want it truncated", len(body))
	}
	r.waitLogged(path2, 2)
	resp, body = r.get(path2)
	if resp.StatusCode != 200 || int64(len(body)) != v2b.Size || synth.Verify(v2b, 0, body) != nil {
		t.Fatalf("GET after the truncation: %d, %d bytes, not version 2 whole", resp.StatusCode, len(body))
	}
	if rec := r.waitRecord("fill: object changed between chunks (RNG-5)", func(map[string]any) bool { return true }); rec["key"] == nil {
		t.Fatal("no RNG-5 log record")
	}
}

// RNG-2: an origin that ignores Range (200 with the whole large object)
// is served but not cached.
func TestLargeObjectOriginWithoutRanges(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/noranges"
	size := int64(3 << 20)
	r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60", NoRanges: true})
	obj := synth.Object{Path: path, Size: size, Version: "1"}
	for i := range 2 {
		resp, body := r.get(path)
		if resp.StatusCode != 200 || int64(len(body)) != size || synth.Verify(obj, 0, body) != nil {
			t.Fatalf("GET %d: %d, %d bytes", i, resp.StatusCode, len(body))
		}
		if cs := resp.Header.Get("Cache-Status"); cs != "edgecache; fwd=miss" {
			t.Fatalf("GET %d: Cache-Status %q", i, cs)
		}
		r.waitLogged(path, i+1)
	}
	r.originCount(path, 2)
}

// RNG-1: a large object without a validator is served in chunks but not
// cached.
func TestLargeObjectWithoutValidator(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/novalidator"
	size := int64(3 << 20)
	none := ""
	r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60", ETag: &none})
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{PathPrefix: path}, Unlimited: true, Action: rules.Action{Omit: []string{"Last-Modified"}}}); err != nil {
		t.Fatal(err)
	}
	obj := synth.Object{Path: path, Size: size, Version: "1"}
	for i := range 2 {
		resp, body := r.get(path)
		if resp.StatusCode != 200 || int64(len(body)) != size || synth.Verify(obj, 0, body) != nil {
			t.Fatalf("GET %d: %d, %d bytes", i, resp.StatusCode, len(body))
		}
		r.waitLogged(path, i+1)
	}
	r.originCount(path, 4) // two chunks each time
}

// COL-1, COL-5, RNG-2: concurrent cold GETs of a large object make one
// origin request per chunk, and every client gets its first bytes while the
// origin is still sending the first chunk.
func TestLargeObjectCollapsedStreaming(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/stream"
	size := int64(ChunkSize + 1<<19) // two chunks
	r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60"})
	obj := synth.Object{Path: path, Size: size, Version: "1"}
	// The first chunk drips: 64 KiB every 20 ms, about 0.65 s in all.
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{
		Hold: &rules.Hold{Name: "stream"},
		Drip: &rules.Drip{Bytes: 64 << 10, Every: rules.Duration(20 * time.Millisecond)}}}); err != nil {
		t.Fatal(err)
	}
	const n = 10
	go r.holdUntilCollapsed("stream", n-1)
	firstByte := make([]time.Time, n)
	bodies := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := r.edge.Client().Get(r.edge.URL + path)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			one := make([]byte, 1)
			if _, err := io.ReadFull(resp.Body, one); err != nil {
				errs[i] = err
				return
			}
			firstByte[i] = time.Now()
			rest, err := io.ReadAll(resp.Body)
			bodies[i], errs[i] = append(one, rest...), err
		})
	}
	wg.Wait()
	reqs := r.waitEnded(path, 2)
	firstEnded := reqs[0].Ended
	for i := range n {
		if errs[i] != nil || synth.Verify(obj, 0, bodies[i]) != nil || int64(len(bodies[i])) != obj.Size {
			t.Fatalf("client %d: %v, %d bytes", i, errs[i], len(bodies[i]))
		}
		if !firstByte[i].Before(firstEnded) {
			t.Fatalf("client %d got its first byte at %v, after the origin finished the first chunk at %v",
				i, firstByte[i].Format(time.StampMicro), firstEnded.Format(time.StampMicro))
		}
	}
	r.originCount(path, 2)
}

// A large-object fill the origin truncates mid-chunk truncates every
// client and stores nothing; the next request fills again and is whole.
func TestLargeObjectTruncatedChunkNotCached(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/cutchunk"
	obj := r.putLarge(path, "1")
	after := int64(100 << 10)
	// The second origin request (chunk 1) is cut after 100 KiB.
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path, Nth: 2}, Action: rules.Action{Truncate: &rules.Cut{AfterBytes: &after}}}); err != nil {
		t.Fatal(err)
	}
	_, body, err := r.do("GET", "client.example", path)
	if err == nil || int64(len(body)) >= obj.Size {
		t.Fatalf("truncated fill: %d bytes, err %v; want a short body and an error", len(body), err)
	}
	if synth.Verify(obj, 0, body) != nil {
		t.Fatal("the bytes before the cut are wrong")
	}
	r.waitLogged(path, 1)
	resp2, body2 := r.get(path)
	if resp2.StatusCode != 200 || int64(len(body2)) != obj.Size || synth.Verify(obj, 0, body2) != nil {
		t.Fatalf("GET after the cut: %d, %d bytes", resp2.StatusCode, len(body2))
	}
	// Chunk 0 was stored; chunk 1 was not (it was cut), so it is filled again.
	got := r.ranges(path)
	want := []string{chunkRange(0), chunkRange(1), chunkRange(1), chunkRange(2)}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("origin ranges %q, want %q", got, want)
	}
}

// COL-7 under concurrency: a chunk fill cut by a truncation or a TCP reset
// while several clients read it cuts those clients (never a short body
// passed off as complete), stores nothing corrupt, and the object is whole
// afterwards.
func TestLargeObjectFaultsUnderConcurrency(t *testing.T) {
	for _, fault := range []string{"truncate", "reset"} {
		t.Run(fault, func(t *testing.T) {
			r := newRig(t, cacheConfig)
			path := "/o/fault-" + fault
			obj := r.putLarge(path, "1")
			after := int64(300 << 10)
			var act rules.Action
			if fault == "truncate" {
				act.Truncate = &rules.Cut{AfterBytes: &after}
			} else {
				act.Reset = &rules.Cut{AfterBytes: &after}
			}
			if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path, Headers: map[string]string{"Range": chunkRange(1)}}, Action: act}); err != nil {
				t.Fatal(err)
			}
			const n = 8
			var wg sync.WaitGroup
			cut := make([]bool, n)
			for i := range n {
				wg.Go(func() {
					resp, body, err := r.do("GET", "client.example", path)
					if synth.Verify(obj, 0, body) != nil {
						t.Errorf("client %d: wrong bytes", i)
					}
					if err == nil && (resp.StatusCode != 200 || int64(len(body)) != obj.Size) {
						t.Errorf("client %d: %d bytes without an error", i, len(body))
					}
					cut[i] = err != nil
				})
			}
			wg.Wait()
			if !slices.Contains(cut, true) {
				t.Fatal("no client saw the fault")
			}
			r.waitLogged(path, n)
			resp, body := r.get(path)
			if resp.StatusCode != 200 || int64(len(body)) != obj.Size || synth.Verify(obj, 0, body) != nil {
				t.Fatalf("GET after the fault: %d, %d bytes", resp.StatusCode, len(body))
			}
		})
	}
}

const openRangeConfig = `
origins:
  - {name: h1, originAddress: origin.test, protocol: HTTP, port: {{port "http"}}, timeout: {readTimeout: 300ms}}
service:
  name: open-range
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: main}]
    pathMatchers:
      - name: main
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /}], origin: h1, routeAction: {cdnPolicy: {cacheMode: BYPASS_CACHE}}}
`

// RNG-4: an open-ended range passed to the origin stays open while the
// origin sends, and ends when the origin stops sending for readTimeout:
// the client's response is cut then (not passed off as complete).
func TestOpenEndedRangeEndsAtReadTimeout(t *testing.T) {
	r := newRig(t, openRangeConfig)
	const path = "/live/open"
	size := int64(1 << 20)
	r.put(objects.Spec{Path: path, Size: &size})
	stallAt := int64(64 << 10)
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{Stall: &rules.Cut{AfterBytes: &stallAt}}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, body, err := r.do("GET", "client.example", path, "Range", "bytes=1000-")
	elapsed := time.Since(start)
	if resp == nil {
		t.Fatalf("open-ended range: no response: %v", err)
	}
	if err == nil || resp.StatusCode != 206 || int64(len(body)) != stallAt {
		t.Fatalf("open-ended range: status %v, %d bytes, err %v; want 206 cut after %d bytes", resp.StatusCode, len(body), err, stallAt)
	}
	if err := synth.Verify(synth.Object{Path: path, Size: size, Version: "1"}, 1000, body); err != nil {
		t.Fatal(err)
	}
	if elapsed < 300*time.Millisecond {
		t.Fatalf("cut after %v, before readTimeout (300ms)", elapsed)
	}
	if q := r.waitEnded(path, 1)[0]; q.Range != "bytes=1000-" {
		t.Fatalf("origin got Range %q, want the client's open-ended range", q.Range)
	}
}

// A malformed answer to a fill's range request (a range other than the
// one asked for, or a Content-Range that does not parse) is a 502 naming
// it, never cached and never passed off as the object.
func TestMalformedRangeAnswers(t *testing.T) {
	for _, tc := range []struct{ name, contentRange string }{
		{"another range", "bytes 0-9/100"},
		{"unparsable", "bytes zero-nine/100"},
		{"past the total", "bytes 0-2097151/1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, cacheConfig)
			path := "/o/malformed"
			body := "0123456789"
			if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true, Action: rules.Action{
				Status: 206, Body: &body, Headers: map[string]string{"Content-Range": tc.contentRange, "Cache-Control": "max-age=60"}}}); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				resp, got := r.get(path)
				if resp.StatusCode != http.StatusBadGateway {
					t.Fatalf("GET %d: %d %q, want 502", i, resp.StatusCode, got)
				}
				r.waitLogged(path, i+1)
			}
			r.originCount(path, 2) // nothing was cached
			if rec := r.waitRecord("fill: origin answered a range request with another range", func(map[string]any) bool { return true }); rec["content_range"] != tc.contentRange {
				t.Fatalf("log record %v", rec)
			}
		})
	}
}
