package edge

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
)

// A hit is served from stored bytes: no flush per write (issue #14: a
// flush is a system call, needed only while a fill streams in, COL-5), and
// its entry's metadata is decoded once per entry, not on every hit.
func TestHitIsNotFlushedAndItsHeadIsDecodedOnce(t *testing.T) {
	r := newRig(t, cacheConfig)
	size := int64(1 << 20)
	r.put(objects.Spec{Path: "/o/hot", Size: &size, CacheControl: "max-age=600"})
	r.get("/o/hot") // the fill
	r.waitLogged("/o/hot", 1)
	srv := r.server()

	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://client.example/o/hot", nil)
	srv.ServeHTTP(rec, req)
	if rec.Code != 200 || int64(rec.Body.Len()) != size || !strings.Contains(rec.Header().Get("Cache-Status"), "; hit") {
		t.Fatalf("second GET: %d with %d bytes, Cache-Status %q; want a 200 hit of %d bytes",
			rec.Code, rec.Body.Len(), rec.Header().Get("Cache-Status"), size)
	}
	if rec.Flushed {
		t.Error("a hit of stored bytes was flushed write by write")
	}

	route, rerr := srv.router.Route(req)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pol := srv.policyFor(route.Rule)
	key := pol.Key(req)
	a, aok := srv.store.Open(key)
	b, bok := srv.store.Open(key)
	if !aok || !bok {
		t.Fatal("the entry is not in the store")
	}
	defer a.Close()
	defer b.Close()
	ma, aerr := entry.Decode(a)
	mb, berr := entry.Decode(b)
	if aerr != nil || berr != nil {
		t.Fatalf("decoding the entry: %v, %v", aerr, berr)
	}
	if ma != mb || reflect.ValueOf(ma.Header).UnsafePointer() != reflect.ValueOf(mb.Header).UnsafePointer() {
		t.Error("two lookups of one entry decoded its metadata twice")
	}
}

// copyHeader copies every field and value; adding to one copied field
// changes neither the source nor the field copied beside it.
func TestCopyHeader(t *testing.T) {
	src := http.Header{"A": {"1", "2"}, "B": {"3"}, "C": {}, "D": {"4"}}
	want := src.Clone()
	dst := http.Header{"Keep": {"k"}}
	copyHeader(dst, src)
	for k, v := range src {
		if !slices.Equal(dst[k], v) {
			t.Errorf("%s: %q, want %q", k, dst[k], v)
		}
	}
	for _, k := range []string{"A", "B", "C", "D"} {
		dst.Add(k, "added")
	}
	if !reflect.DeepEqual(src, want) {
		t.Errorf("the source changed: %v, want %v", src, want)
	}
	for k, v := range want {
		if got := dst[k]; !slices.Equal(got, append(slices.Clone(v), "added")) {
			t.Errorf("after Add, %s: %q, want %q + added", k, got, v)
		}
	}
	if dst.Get("Keep") != "k" {
		t.Error("a field dst had is gone")
	}
}
