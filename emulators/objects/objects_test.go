package objects

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

func ptr[T any](v T) *T { return &v }

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want []string // field paths
	}{
		{"ok", Spec{Path: "/a", Size: ptr[int64](10)}, nil},
		{"relative path", Spec{Path: "a"}, []string{"objects[0].path"}},
		{"negative size", Spec{Path: "/a", Size: ptr[int64](-1)}, []string{"objects[0].size"}},
		{"two sources", Spec{Path: "/a", Size: ptr[int64](1), Body: ptr("x")}, []string{"objects[0].size"}},
		{"missing file", Spec{Path: "/a", File: "/nonexistent"}, []string{"objects[0].file"}},
		{"bad date", Spec{Path: "/a", LastModified: "yesterday"}, []string{"objects[0].lastModified"}},
		{"bad etag", Spec{Path: "/a", ETag: ptr("a\nb")}, []string{"objects[0].etag"}},
		{"all at once", Spec{Path: "a", Size: ptr[int64](-1), LastModified: "x"}, []string{"objects[0].path", "objects[0].size", "objects[0].lastModified"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NewStore().Put(tc.spec)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			es, ok := fielderr.As(err)
			if !ok || len(es) != len(tc.want) {
				t.Fatalf("err = %v, want field errors %v", err, tc.want)
			}
			for i, w := range tc.want {
				if es[i].Field != w {
					t.Errorf("field %d = %q, want %q", i, es[i].Field, w)
				}
			}
		})
	}
}

func TestPutIsAllOrNothing(t *testing.T) {
	st := NewStore()
	if err := st.Put(Spec{Path: "/ok"}, Spec{Path: "bad"}); err == nil || !strings.Contains(err.Error(), "objects[1].path") {
		t.Fatalf("err = %v", err)
	}
	if n := len(st.List()); n != 0 {
		t.Fatalf("a failed batch stored %d objects", n)
	}
}

func TestMerge(t *testing.T) {
	base := Spec{Path: "/a", Body: ptr("x"), CacheControl: "max-age=1", Headers: map[string]string{"A": "1"}}
	got := base.Merge(Spec{Size: ptr[int64](5), Version: "2", Headers: map[string]string{"B": "2"}})
	if got.Body != nil || *got.Size != 5 || got.Version != "2" || got.CacheControl != "max-age=1" || got.Headers["A"] != "1" || got.Headers["B"] != "2" {
		t.Fatalf("%+v", got)
	}
	if base.Headers["B"] != "" {
		t.Fatal("Merge changed the receiver's headers")
	}
}

func TestServeHeaders(t *testing.T) {
	lm := "Wed, 01 Jul 2026 10:00:00 GMT"
	for _, tc := range []struct {
		name  string
		spec  Spec
		check func(t *testing.T, rec *httptest.ResponseRecorder)
	}{
		{"synthetic defaults", Spec{Path: "/s"}, func(t *testing.T, rec *httptest.ResponseRecorder) {
			o := synth.Object{Path: "/s", Size: DefaultSize, Version: "1"}
			if rec.Header().Get("Etag") != o.ETag() || rec.Header().Get("Last-Modified") != o.LastModified().UTC().Format(http.TimeFormat) || rec.Body.Len() != DefaultSize {
				t.Fatalf("%v %d", rec.Header(), rec.Body.Len())
			}
		}},
		{"overrides", Spec{Path: "/o", ETag: ptr(`"mine"`), LastModified: lm, ContentType: "video/mp4", CacheControl: "no-store", Headers: map[string]string{"X-A": "b"}}, func(t *testing.T, rec *httptest.ResponseRecorder) {
			h := rec.Header()
			if h.Get("Etag") != `"mine"` || h.Get("Last-Modified") != lm || h.Get("Content-Type") != "video/mp4" || h.Get("Cache-Control") != "no-store" || h.Get("X-A") != "b" {
				t.Fatalf("%v", h)
			}
		}},
		{"no etag", Spec{Path: "/n", ETag: ptr("")}, func(t *testing.T, rec *httptest.ResponseRecorder) {
			if _, ok := rec.Header()["Etag"]; ok {
				t.Fatal("ETag sent")
			}
		}},
		{"version changes validators", Spec{Path: "/s", Version: "2"}, func(t *testing.T, rec *httptest.ResponseRecorder) {
			if rec.Header().Get("Etag") == (synth.Object{Path: "/s", Size: DefaultSize, Version: "1"}).ETag() {
				t.Fatal("same ETag for another version")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			if err := Serve(rec, httptest.NewRequest("GET", tc.spec.Path, nil), tc.spec, time.Now()); err != nil {
				t.Fatal(err)
			}
			if rec.Header().Get("Date") == "" {
				t.Fatal("no Date")
			}
			tc.check(t, rec)
		})
	}
}
