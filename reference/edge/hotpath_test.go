package edge

import (
	"net/http/httptest"
	"reflect"
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
