package originemu

import (
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

func TestObjectsRangesAndConditionals(t *testing.T) {
	e := startEmu(t, allProfiles())
	const size = 3 << 20
	if err := e.PutObjects(
		objects.Spec{Path: "/big", Size: ptr[int64](size), Version: "7", CacheControl: "max-age=300", ContentType: "video/mp2t"},
		objects.Spec{Path: "/noranges", Size: ptr[int64](4096), NoRanges: true},
		objects.Spec{Path: "/huge", Size: ptr[int64](10 << 30)},
		objects.Spec{Path: "/fixed", Body: ptr("hello, edge")},
	); err != nil {
		t.Fatal(err)
	}
	obj := synth.Object{Path: "/big", Size: size, Version: "7"}
	for _, ln := range protoListeners {
		t.Run(ln, func(t *testing.T) {
			c := clientFor(t, e, ln, "origin.test")
			u := e.URL(ln)
			resp, body, err := get(t, c, u+"/big", "Range", "bytes=1048576-3145727")
			if err != nil || resp.StatusCode != 206 || resp.Header.Get("Content-Range") != "bytes 1048576-3145727/3145728" {
				t.Fatalf("range: %v %v", resp, err)
			}
			if err := synth.Verify(obj, 1<<20, body); err != nil || len(body) != 2<<20 {
				t.Fatalf("range body: %v", err)
			}
			if resp.Header.Get("Etag") != obj.ETag() || resp.Header.Get("Cache-Control") != "max-age=300" || resp.Header.Get("Content-Type") != "video/mp2t" || resp.Header.Get("Date") == "" || resp.Header.Get("Last-Modified") == "" {
				t.Fatalf("headers: %v", resp.Header)
			}
			// suffix and open-ended ranges
			resp, body, _ = get(t, c, u+"/big", "Range", "bytes=-100")
			if resp.StatusCode != 206 || synth.Verify(obj, size-100, body) != nil {
				t.Fatalf("suffix range: %d", resp.StatusCode)
			}
			// multipart
			resp, body, _ = get(t, c, u+"/big", "Range", "bytes=0-9,1000-1009")
			mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode != 206 || mt != "multipart/byteranges" {
				t.Fatalf("multipart: %d %s", resp.StatusCode, mt)
			}
			mr := multipart.NewReader(strings.NewReader(string(body)), params["boundary"])
			for _, off := range []int64{0, 1000} {
				p, err := mr.NextPart()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(p)
				if synth.Verify(obj, off, b) != nil || len(b) != 10 {
					t.Fatalf("part at %d wrong", off)
				}
			}
			// conditionals and If-Range
			for _, tc := range []struct {
				hdr  []string
				want int
			}{
				{[]string{"If-None-Match", obj.ETag()}, 304},
				{[]string{"If-Match", `"other"`}, 412},
				{[]string{"Range", "bytes=0-9", "If-Range", `"other"`}, 200},
				{[]string{"Range", "bytes=0-9", "If-Range", obj.ETag()}, 206},
				{[]string{"Range", "bytes=9999999-"}, 416},
			} {
				resp, _, err := get(t, c, u+"/big", tc.hdr...)
				if err != nil || resp.StatusCode != tc.want {
					t.Errorf("%v: got %v %v, want %d", tc.hdr, resp.StatusCode, err, tc.want)
				}
			}
			resp, body, _ = get(t, c, u+"/noranges", "Range", "bytes=0-9")
			if resp.StatusCode != 200 || len(body) != 4096 || resp.Header.Get("Accept-Ranges") != "" {
				t.Fatalf("noRanges: %d, %d bytes, Accept-Ranges %q", resp.StatusCode, len(body), resp.Header.Get("Accept-Ranges"))
			}
			resp, body, _ = get(t, c, u+"/fixed")
			if string(body) != "hello, edge" || resp.Header.Get("Etag") == "" {
				t.Fatalf("fixed body: %q", body)
			}
			// 10 GiB object: its end is served without generating the rest.
			req, _ := http.NewRequest("HEAD", u+"/huge", nil)
			resp, err = c.Do(req)
			if err != nil || resp.ContentLength != 10<<30 {
				t.Fatalf("HEAD huge: %v %v", resp, err)
			}
			resp, body, _ = get(t, c, u+"/huge", "Range", "bytes=10737418200-")
			if resp.StatusCode != 206 || synth.Verify(synth.Object{Path: "/huge", Size: 10 << 30, Version: "1"}, 10737418200, body) != nil || len(body) != 40 {
				t.Fatalf("end of huge: %d %d", resp.StatusCode, len(body))
			}
		})
	}
}
